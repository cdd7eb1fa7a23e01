"""Label, tag and annotation keys of Karpenter's AWS provider, byte for byte."""

from __future__ import annotations

GROUP = "karpenter.k8s.aws"
API_VERSION = f"{GROUP}/v1"

INSTANCE_CATEGORY = f"{GROUP}/instance-category"
INSTANCE_FAMILY = f"{GROUP}/instance-family"
INSTANCE_GENERATION = f"{GROUP}/instance-generation"
INSTANCE_SIZE = f"{GROUP}/instance-size"
INSTANCE_CAPABILITY_FLEX = f"{GROUP}/instance-capability-flex"
INSTANCE_CPU = f"{GROUP}/instance-cpu"
INSTANCE_CPU_MANUFACTURER = f"{GROUP}/instance-cpu-manufacturer"
INSTANCE_CPU_SUSTAINED_CLOCK = f"{GROUP}/instance-cpu-sustained-clock-speed-mhz"
INSTANCE_MEMORY = f"{GROUP}/instance-memory"
INSTANCE_EBS_BANDWIDTH = f"{GROUP}/instance-ebs-bandwidth"
INSTANCE_NETWORK_BANDWIDTH = f"{GROUP}/instance-network-bandwidth"
INSTANCE_LOCAL_NVME = f"{GROUP}/instance-local-nvme"
INSTANCE_GPU_NAME = f"{GROUP}/instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = f"{GROUP}/instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = f"{GROUP}/instance-gpu-count"
INSTANCE_GPU_MEMORY = f"{GROUP}/instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = f"{GROUP}/instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = f"{GROUP}/instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = f"{GROUP}/instance-accelerator-count"
INSTANCE_HYPERVISOR = f"{GROUP}/instance-hypervisor"
INSTANCE_ENCRYPTION_IN_TRANSIT = f"{GROUP}/instance-encryption-in-transit-supported"
INSTANCE_TENANCY = f"{GROUP}/instance-tenancy"
CAPACITY_RESERVATION_ID = f"{GROUP}/capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = f"{GROUP}/capacity-reservation-type"
CAPACITY_RESERVATION_INTERRUPTIBLE = f"{GROUP}/capacity-reservation-interruptible"
PLACEMENT_GROUP_ID = f"{GROUP}/placement-group-id"
PLACEMENT_GROUP_PARTITION = f"{GROUP}/placement-group-partition"
ZONE_ID = "topology.k8s.aws/zone-id"

#: Extended resource of Elastic Fabric Adapter interfaces.
EFA_RESOURCE = "vpc.amazonaws.com/efa"

#: Every label an instance type defines (a DoesNotExist requirement when unknown).
INSTANCE_TYPE_LABELS = frozenset(
    {
        INSTANCE_CATEGORY,
        INSTANCE_FAMILY,
        INSTANCE_GENERATION,
        INSTANCE_SIZE,
        INSTANCE_CAPABILITY_FLEX,
        INSTANCE_CPU,
        INSTANCE_CPU_MANUFACTURER,
        INSTANCE_CPU_SUSTAINED_CLOCK,
        INSTANCE_MEMORY,
        INSTANCE_EBS_BANDWIDTH,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_LOCAL_NVME,
        INSTANCE_GPU_NAME,
        INSTANCE_GPU_MANUFACTURER,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_NAME,
        INSTANCE_ACCELERATOR_MANUFACTURER,
        INSTANCE_ACCELERATOR_COUNT,
        INSTANCE_HYPERVISOR,
        INSTANCE_ENCRYPTION_IN_TRANSIT,
        INSTANCE_TENANCY,
    }
)
WELL_KNOWN_LABELS = INSTANCE_TYPE_LABELS | {
    ZONE_ID,
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
    PLACEMENT_GROUP_ID,
    PLACEMENT_GROUP_PARTITION,
}

# Tags
NODEPOOL_TAG = "karpenter.sh/nodepool"
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
EC2NODECLASS_TAG = f"{GROUP}/ec2nodeclass"
EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name"
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
#: The NodeClaim's uid: how a repeated launch finds the instance it already made.
IDEMPOTENCY_TAG = "nodewright.sh/nodeclaim-uid"

#: spec.tags may not set these (Karpenter's RestrictedTagPatterns).
RESTRICTED_TAGS = frozenset({EKS_CLUSTER_NAME_TAG, NODEPOOL_TAG, NODECLAIM_TAG, EC2NODECLASS_TAG})

# Annotations
NODECLASS_HASH_ANNOTATION = f"{GROUP}/ec2nodeclass-hash"
NODECLASS_HASH_VERSION_ANNOTATION = f"{GROUP}/ec2nodeclass-hash-version"
#: The version nodewright writes: its hash is computed differently from Karpenter's, so it
#: must not claim Karpenter's version (``v6``, the hashstructure value of the spec). A
#: different version is "not drifted" on both sides (Karpenter re-stamps NodeClaims whose
#: version differs from its own), so NodeClaims move between Karpenter and nodewright
#: without being replaced.
NODECLASS_HASH_VERSION = "nodewright-v1"

PROVIDER_ID_PREFIX = "aws:///"
LAUNCH_TEMPLATE_PREFIX = f"{GROUP}/"
