"""The AWS EC2 provider for nodewright: EC2NodeClass, discovery, pricing, fleet launch."""
