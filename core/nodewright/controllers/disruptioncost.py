"""What disrupting a node costs, and whether its pods allow it: Karpenter's eviction cost,
the share of a NodeClaim's life left, ``karpenter.sh/do-not-disrupt``, and which pods need a
new node when theirs goes.

Disruption and the static NodePool controller (scaling a pool down) both judge nodes by them.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta

from nodewright.api.core import Pod
from nodewright.api.duration import DurationError, parse_optional_duration
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import (
    DISRUPTED_TAINT_KEY,
    DO_NOT_DISRUPT_ANNOTATION,
    POD_DELETION_COST_ANNOTATION,
)
from nodewright.controllers.state.cluster import is_terminal, owner_kind
from nodewright.scheduling.pods import pod_tolerations
from nodewright.scheduling.taints import Taint

_DISRUPTED = Taint(DISRUPTED_TAINT_KEY, "NoSchedule")


def eviction_cost(pod: Pod) -> float:
    """Karpenter's per-pod cost: 1 + deletion-cost/2^27 + priority/2^25, within [-10, 10]."""
    cost = 1.0
    deletion_cost = pod.metadata.annotations.get(POD_DELETION_COST_ANNOTATION)
    if deletion_cost is not None:
        with contextlib.suppress(ValueError):
            cost += float(deletion_cost) / 2**27
    if pod.spec.priority is not None:
        cost += pod.spec.priority / 2**25
    return min(10.0, max(-10.0, cost))


def lifetime_remaining(claim: NodeClaim, now: datetime) -> float:
    """The fraction of the NodeClaim's expireAfter still ahead of it, in [0, 1]."""
    try:
        expire_after = parse_optional_duration(claim.spec.expire_after)
    except DurationError:
        return 1.0
    created = claim.metadata.creation_timestamp
    if expire_after is None or created is None or expire_after <= timedelta(0):
        return 1.0
    left = (expire_after - (now - created)) / expire_after
    return min(1.0, max(0.0, left))


def is_active(pod: Pod) -> bool:
    return not is_terminal(pod) and not pod.deleting


def is_reschedulable(pod: Pod) -> bool:
    """A pod that needs a new node when its node goes (Karpenter's ``IsReschedulable``)."""
    if not is_active(pod) or owner_kind(pod) in ("DaemonSet", "Node"):
        return False
    return not any(t.tolerates(_DISRUPTED) for t in pod_tolerations(pod))


def blocks_disruption(pod: Pod, now: datetime) -> bool:
    """An active pod whose ``karpenter.sh/do-not-disrupt`` protects its node now.

    ``"true"`` protects for as long as the pod runs; a duration protects until that long
    after the pod started; anything else is ignored.
    """
    value = pod.metadata.annotations.get(DO_NOT_DISRUPT_ANNOTATION)
    if value is None or not is_active(pod):
        return False
    if value == "true":
        return True
    try:
        duration = parse_optional_duration(value)
    except DurationError:
        return False
    if duration is None:
        return True
    started = pod.status.start_time or pod.metadata.creation_timestamp
    return started is not None and now < started + duration


def blocking_until(pod: Pod, now: datetime) -> datetime | None:
    """When a ``karpenter.sh/do-not-disrupt`` duration that protects the pod's node now runs
    out (None: it protects nothing now, or for as long as the pod runs)."""
    value = pod.metadata.annotations.get(DO_NOT_DISRUPT_ANNOTATION)
    if value is None or value == "true" or not blocks_disruption(pod, now):
        return None
    duration = parse_optional_duration(value)
    started = pod.status.start_time or pod.metadata.creation_timestamp
    if duration is None or started is None:
        return None
    return started + duration
