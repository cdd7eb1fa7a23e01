"""Labels and annotations the KWOK provider puts on its nodes (``kwok/apis/v1alpha1``)."""

from __future__ import annotations

#: The API group of KWOKNodeClass, and the label domain users may not set.
GROUP = "karpenter.kwok.sh"

INSTANCE_SIZE_LABEL = f"{GROUP}/instance-size"
INSTANCE_FAMILY_LABEL = f"{GROUP}/instance-family"
INSTANCE_CPU_LABEL = f"{GROUP}/instance-cpu"
INSTANCE_MEMORY_LABEL = f"{GROUP}/instance-memory"

#: The labels every KWOK instance type defines; pods may select on them.
INSTANCE_LABELS = frozenset(
    {INSTANCE_SIZE_LABEL, INSTANCE_FAMILY_LABEL, INSTANCE_CPU_LABEL, INSTANCE_MEMORY_LABEL}
)

#: Names the capacity reservation a node was launched into (offerings with a reservationID).
RESERVATION_ID_LABEL = f"{GROUP}/reservation-id"

#: Label and annotation that mark a Node as fake, as the KWOK controller expects.
KWOK_NODE_KEY = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE = "fake"

#: Provider IDs of KWOK instances start with this.
PROVIDER_ID_PREFIX = "kwok://"

#: On the Nodes this provider registers: the launch's idempotency key (the NodeClaim's uid),
#: so that another process (a new leader) can adopt the instance from the Node alone.
LAUNCH_KEY_ANNOTATION = f"{GROUP}/launch-key"
