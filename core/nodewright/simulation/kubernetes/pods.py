"""Pod states the embedded controllers share: live or finished, ready, and conditions."""

from __future__ import annotations

from nodewright.api.core import Pod, PodCondition
from nodewright.clock import Clock
from nodewright.cluster.state import is_terminal


def is_active(pod: Pod) -> bool:
    """Neither being deleted nor finished: the pod counts toward its owner's replicas."""
    return not pod.deleting and not is_terminal(pod)


def is_ready(pod: Pod) -> bool:
    condition = pod.condition("Ready")
    return condition is not None and condition.status == "True"


def set_pod_condition(
    pod: Pod,
    kind: str,
    status: str,
    clock: Clock,
    *,
    reason: str | None = None,
    message: str | None = None,
) -> bool:
    """Set a condition in place; returns True when anything a reader sees changed."""
    current = pod.condition(kind)
    if current is None:
        pod.status.conditions.append(
            PodCondition(
                type=kind,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=clock.now(),
            )
        )
        return True
    if (current.status, current.reason, current.message) == (status, reason, message):
        return False
    if current.status != status:
        current.last_transition_time = clock.now()
    current.status, current.reason, current.message = status, reason, message
    return True
