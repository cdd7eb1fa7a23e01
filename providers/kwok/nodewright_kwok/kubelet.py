"""What a KWOK node looks like, and what the KWOK controller does in place of kubelets.

Each function changes an object in place and says whether it changed anything, so the
provider only writes to the cluster when there is something to write.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from nodewright.plugin import (
    SIMULATED_CONDITIONS_ANNOTATION,
    UNREGISTERED_TAINT_KEY,
    Node,
    NodeCondition,
    NodeSpec,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodCondition,
    Taint,
    format_resources,
)
from nodewright_kwok.labels import KWOK_NODE_KEY, KWOK_NODE_VALUE, LAUNCH_KEY_ANNOTATION
from nodewright_kwok.ledger import LedgerEntry

#: Conditions a started pod reports, in the order kubelets add them.
POD_READY_CONDITIONS = ("PodScheduled", "Initialized", "ContainersReady", "Ready")


def build_node(
    entry: LedgerEntry, extra_labels: dict[str, str], now: datetime, *, ready: bool
) -> Node:
    """The Node a KWOK instance registers: named after its NodeClaim, tainted unregistered.

    Labels are the NodeClaim's, then ``extra_labels``, then the instance's own. When
    ``ready`` is false the Node is left Pending for an external KWOK controller to start.
    """
    instance = entry.instance
    node = Node(
        metadata=ObjectMeta(
            name=entry.node_name,
            labels={**entry.node_labels, **extra_labels, **instance.labels},
            annotations={
                **entry.node_annotations,
                KWOK_NODE_KEY: KWOK_NODE_VALUE,
                LAUNCH_KEY_ANNOTATION: entry.idempotency_key,
            },
        ),
        spec=NodeSpec(
            provider_id=instance.provider_id,
            taints=[Taint(key=UNREGISTERED_TAINT_KEY, effect="NoExecute")],
        ),
        status=NodeStatus(
            capacity=format_resources(instance.capacity),
            allocatable=format_resources(instance.allocatable),
            phase="Pending",
        ),
    )
    if ready:
        mark_node_ready(node, now)
    return node


def node_needs_ready(node: Node) -> bool:
    """True when :func:`mark_node_ready` would change the node (a read-only check)."""
    return node.status.phase != "Running" or not (node.ready or ready_is_simulated(node))


def ready_is_simulated(node: Node) -> bool:
    """True when a simulation scenario set the Node's Ready condition: the kubelet keeps
    reporting what the scenario wrote (a broken machine), instead of making the node Ready."""
    pinned = node.metadata.annotations.get(SIMULATED_CONDITIONS_ANNOTATION, "")
    return "Ready" in (kind.strip() for kind in pinned.split(","))


def pod_needs_start(pod: Pod) -> bool:
    """True when :func:`mark_pod_running` would change the pod (a read-only check)."""
    if pod.status.phase in ("Succeeded", "Failed") or pod.deleting:
        return False
    if pod.status.phase != "Running" or pod.status.start_time is None:
        return True
    return any(
        (condition := pod.condition(kind)) is None or condition.status != "True"
        for kind in POD_READY_CONDITIONS
    )


def heartbeat_due(node: Node, now: datetime, interval: timedelta) -> bool:
    """True when the Node's Ready heartbeat is missing or at least ``interval`` old."""
    ready = next((c for c in node.status.conditions if c.type == "Ready"), None)
    beat = ready.last_heartbeat_time if ready is not None else None
    return beat is None or now - beat >= interval


def post_heartbeat(node: Node, now: datetime) -> None:
    """Report the node Ready (:func:`mark_node_ready`) with a heartbeat of ``now``."""
    mark_node_ready(node, now)
    for condition in node.status.conditions:
        if condition.type == "Ready":
            condition.last_heartbeat_time = now


def mark_node_ready(node: Node, now: datetime) -> bool:
    """Report the node Ready and Running, as the KWOK controller does (a Ready condition a
    simulation scenario set is left as it is)."""
    changed = False
    if node.status.phase != "Running":
        node.status.phase = "Running"
        changed = True
    if ready_is_simulated(node):
        return changed
    for condition in node.status.conditions:
        if condition.type == "Ready":
            if condition.status == "True":
                return changed
            condition.status = "True"
            condition.reason = "KubeletReady"
            condition.message = "kubelet is posting ready status (kwok)"
            condition.last_transition_time = now
            condition.last_heartbeat_time = now
            return True
    node.status.conditions.append(
        NodeCondition(
            type="Ready",
            status="True",
            reason="KubeletReady",
            message="kubelet is posting ready status (kwok)",
            last_heartbeat_time=now,
            last_transition_time=now,
        )
    )
    return True


def mark_pod_running(pod: Pod, now: datetime) -> bool:
    """Start a pod bound to a KWOK node: phase Running, every readiness condition True.

    Finished pods and pods being deleted are left alone.
    """
    if pod.status.phase in ("Succeeded", "Failed") or pod.deleting:
        return False
    changed = False
    if pod.status.phase != "Running":
        pod.status.phase = "Running"
        changed = True
    if pod.status.start_time is None:
        pod.status.start_time = now
        changed = True
    for kind in POD_READY_CONDITIONS:
        condition = pod.condition(kind)
        if condition is None:
            pod.status.conditions.append(
                PodCondition(type=kind, status="True", last_transition_time=now)
            )
            changed = True
        elif condition.status != "True":
            condition.status = "True"
            condition.reason = None
            condition.message = None
            condition.last_transition_time = now
            changed = True
    return changed
