"""Karpenter's well-known labels, annotations, taints and finalizers (``karpenter.sh/v1``)."""

from __future__ import annotations

GROUP = "karpenter.sh"

# Labels
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
REGISTERED_LABEL = "karpenter.sh/registered"
INITIALIZED_LABEL = "karpenter.sh/initialized"
DO_NOT_SYNC_TAINTS_LABEL = "karpenter.sh/do-not-sync-taints"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
WINDOWS_BUILD_LABEL = "node.kubernetes.io/windows-build"
HOSTNAME_LABEL = "kubernetes.io/hostname"
EXCLUDE_FROM_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"

CAPACITY_TYPE_ON_DEMAND = "on-demand"
CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_RESERVED = "reserved"
CAPACITY_TYPES = (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND)

#: Labels every provider's instance types define; pods may require them even when a
#: NodePool does not mention them.
WELL_KNOWN_LABELS = frozenset(
    {
        NODEPOOL_LABEL,
        CAPACITY_TYPE_LABEL,
        INSTANCE_TYPE_LABEL,
        ZONE_LABEL,
        REGION_LABEL,
        ARCH_LABEL,
        OS_LABEL,
        WINDOWS_BUILD_LABEL,
    }
)

#: Domains users may not set labels in (providers add their own, e.g. ``karpenter.kwok.sh``).
RESTRICTED_LABEL_DOMAINS = frozenset({GROUP})
#: Individual labels users may not require or set.
RESTRICTED_LABELS = frozenset({HOSTNAME_LABEL})

#: Deprecated labels that pods and NodePools may still use; read as their successors.
NORMALIZED_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": ZONE_LABEL,
    "failure-domain.beta.kubernetes.io/region": REGION_LABEL,
    "beta.kubernetes.io/arch": ARCH_LABEL,
    "beta.kubernetes.io/os": OS_LABEL,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE_LABEL,
}

# Annotations
DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"
NODEPOOL_HASH_ANNOTATION = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION_ANNOTATION = "karpenter.sh/nodepool-hash-version"
NODEPOOL_HASH_VERSION = "v3"
TERMINATION_TIMESTAMP_ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"
MIN_VALUES_RELAXED_ANNOTATION = "karpenter.sh/nodeclaim-min-values-relaxed"
#: The DRA drivers whose devices were allocated to a NodeClaim's pods, comma-separated: its
#: initialization waits for each to publish a complete pool.
DRA_DRIVERS_ANNOTATION = "karpenter.sh/requested-dra-drivers"
#: Kubernetes' hint for which pods to remove first; Karpenter weighs evictions with it.
POD_DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
#: On a Node in ``nodewright simulate``: the condition types a scenario set
#: (comma-separated). Emulated kubelets leave those conditions as the scenario wrote them, as
#: a failing machine's own kubelet keeps reporting its failure.
SIMULATED_CONDITIONS_ANNOTATION = "nodewright.sh/simulated-conditions"

# Taints
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"

# Finalizers
TERMINATION_FINALIZER = "karpenter.sh/termination"

#: Taints that a node sheds on its own while starting; ignored on uninitialized nodes.
KNOWN_EPHEMERAL_TAINTS = (
    ("node.kubernetes.io/not-ready", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
    (UNREGISTERED_TAINT_KEY, "NoExecute"),
)


def node_class_label(group: str, kind: str) -> str:
    """The label that marks a Node as managed through a NodeClass (``<group>/<kind>``)."""
    return f"{group}/{kind.lower()}"


def normalize_label(key: str) -> str:
    return NORMALIZED_LABELS.get(key, key)
