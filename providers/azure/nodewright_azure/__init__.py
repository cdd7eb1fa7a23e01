"""The Azure provider for nodewright: AKSNodeClass, SKU discovery and labels, retail pricing,
VM launch through azure-mgmt-compute and azure-mgmt-network."""
