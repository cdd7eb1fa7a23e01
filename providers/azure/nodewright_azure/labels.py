"""Labels, tags and names the Azure provider uses (Karpenter's ``pkg/apis/v1beta1/labels.go``)."""

from __future__ import annotations

#: The API group of AKSNodeClass, and the label domain users may not set outside the
#: allow-list below.
GROUP = "karpenter.azure.com"
AKS_GROUP = "kubernetes.azure.com"

SKU_NAME = f"{GROUP}/sku-name"
SKU_FAMILY = f"{GROUP}/sku-family"
SKU_SERIES = f"{GROUP}/sku-series"
SKU_VERSION = f"{GROUP}/sku-version"
SKU_CPU = f"{GROUP}/sku-cpu"
SKU_MEMORY = f"{GROUP}/sku-memory"
SKU_NETWORKING_ACCELERATED = f"{GROUP}/sku-networking-accelerated"
SKU_STORAGE_PREMIUM_CAPABLE = f"{GROUP}/sku-storage-premium-capable"
SKU_STORAGE_EPHEMERALOS_MAXSIZE = f"{GROUP}/sku-storage-ephemeralos-maxsize"
SKU_GPU_NAME = f"{GROUP}/sku-gpu-name"
SKU_GPU_MANUFACTURER = f"{GROUP}/sku-gpu-manufacturer"
SKU_GPU_COUNT = f"{GROUP}/sku-gpu-count"
PLACEMENT_SCOPE = f"{GROUP}/placement-scope"

AKS_SKU_CPU = f"{AKS_GROUP}/sku-cpu"
AKS_SKU_MEMORY = f"{AKS_GROUP}/sku-memory"
AKS_OS_SKU = f"{AKS_GROUP}/os-sku"
AKS_MODE = f"{AKS_GROUP}/mode"
AKS_ROLE = f"{AKS_GROUP}/role"
AKS_CLUSTER = f"{AKS_GROUP}/cluster"
AKS_SCALESET_PRIORITY = f"{AKS_GROUP}/scalesetpriority"
AKS_PODNETWORK_TYPE = f"{AKS_GROUP}/podnetwork-type"
AKS_CNI_OVERLAY = f"{AKS_GROUP}/azure-cni-overlay"
AKS_NETWORK_SUBNET = f"{AKS_GROUP}/network-subnet"
AKS_NETWORK_NAME = f"{AKS_GROUP}/network-name"
AKS_NETWORK_SUBSCRIPTION = f"{AKS_GROUP}/network-subscription"
AKS_EBPF_DATAPLANE = f"{AKS_GROUP}/ebpf-dataplane"
AKS_KUBELET_IDENTITY = f"{AKS_GROUP}/kubelet-identity-client-id"

#: The labels every Azure instance type defines; pods and NodePools may select on them.
SKU_LABELS = frozenset(
    {
        SKU_NAME,
        SKU_FAMILY,
        SKU_SERIES,
        SKU_VERSION,
        SKU_CPU,
        SKU_MEMORY,
        SKU_NETWORKING_ACCELERATED,
        SKU_STORAGE_PREMIUM_CAPABLE,
        SKU_STORAGE_EPHEMERALOS_MAXSIZE,
        SKU_GPU_NAME,
        SKU_GPU_MANUFACTURER,
        SKU_GPU_COUNT,
        PLACEMENT_SCOPE,
        AKS_SKU_CPU,
        AKS_SKU_MEMORY,
        AKS_OS_SKU,
    }
)

# Tags on every VM and NIC (``/`` in tag keys becomes ``_``, as Azure forbids it).
TAG_CLUSTER = "karpenter.azure.com_cluster"
TAG_NODEPOOL = "karpenter.sh_nodepool"
TAG_BILLING = "compute.aks.billing"
#: The NodeClaim's uid (the hookspec's idempotency key) and name.
TAG_NODECLAIM_UID = "karpenter.azure.com_nodeclaim-uid"
TAG_NODECLAIM = "karpenter.azure.com_nodeclaim"
TAG_NODECLASS = "karpenter.azure.com_aksnodeclass"

#: NodeClaim annotation naming the AKS machine of a node made through the AKS machine API.
AKS_MACHINE_ANNOTATION = f"{GROUP}/aks-machine-resource-id"

PROVIDER_ID_PREFIX = "azure://"
#: VM, NIC and OS disk of a NodeClaim are all named ``aks-<nodeclaim>``.
RESOURCE_NAME_PREFIX = "aks-"

#: Regional (non-zonal) placement's zone value, as AKS labels regional nodes.
REGIONAL_ZONE = "0"


def label_value(text: str) -> str:
    """``text`` as a label value: at most 63 characters of ``[A-Za-z0-9._-]``, alphanumeric at
    both ends (how AKS writes the node resource group into ``kubernetes.azure.com/cluster``)."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in text)[:63]
    return cleaned.strip("._-")


def aks_node_labels(
    resource_group: str,
    network_plugin: str,
    subnet_id: str = "",
    *,
    dataplane: str = "",
    kubelet_identity: str = "",
) -> dict[str, str]:
    """Labels AKS's bootstrap gives every node through the kubelet (not schedulable): the
    cluster (node resource group), the kubelet identity's client ID (empty when none is
    configured, as Karpenter Azure writes it), the pod network type, the node subnet's names,
    and ``ebpf-dataplane=cilium`` on a Cilium dataplane (the Cilium agent selects on it)."""
    labels = {
        AKS_CLUSTER: label_value(resource_group),
        AKS_MODE: "user",
        AKS_ROLE: "agent",
        AKS_KUBELET_IDENTITY: kubelet_identity,
    }
    if dataplane == "cilium":
        labels[AKS_EBPF_DATAPLANE] = "cilium"
    if network_plugin == "azure-overlay":
        labels[AKS_PODNETWORK_TYPE] = "overlay"
        labels[AKS_CNI_OVERLAY] = "true"
    parts = subnet_id.split("/")
    if len(parts) == 11 and parts[1].lower() == "subscriptions":
        labels[AKS_NETWORK_SUBSCRIPTION] = label_value(parts[2])
        labels[AKS_NETWORK_NAME] = label_value(parts[8])
        labels[AKS_NETWORK_SUBNET] = label_value(parts[10])
    return labels
