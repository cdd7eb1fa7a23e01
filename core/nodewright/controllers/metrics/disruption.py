"""What every NodeClaim disruption records: ``karpenter_nodeclaims_disrupted_total`` and
``karpenter_pods_disruption_initiated_total``, with Karpenter's labels.

Disruption (a command's candidates), expiration, node repair, garbage collection, launch
failures and the liveness timeouts all delete NodeClaims; each counts the NodeClaim once, and
the pods on its node that will need a new home (not DaemonSet or mirror pods), when it asks
for the deletion.
"""

from __future__ import annotations

import re
from datetime import timedelta

from nodewright import metrics
from nodewright.api.duration import DurationError, parse_duration
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import CAPACITY_TYPE_LABEL, NODEPOOL_LABEL
from nodewright.cluster.state import ClusterState
from nodewright.controllers.disruptioncost import is_reschedulable

GRACEFUL = "graceful"
EVENTUAL = "eventual"
FORCEFUL = "forceful"


def snake_case(name: str) -> str:
    """``AcceleratedHardwareReady`` -> ``accelerated_hardware_ready``, as Karpenter writes
    condition types, reasons and policies into metric labels."""
    snake = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", snake).lower()


def termination_mode(claim: NodeClaim) -> str:
    """How the NodeClaim's node will drain: ``graceful`` without a terminationGracePeriod
    (pods leave as their budgets allow), ``forceful`` with a zero one, else ``eventual``."""
    text = claim.spec.termination_grace_period
    if text is None:
        return GRACEFUL
    try:
        period = parse_duration(text)
    except DurationError:
        return GRACEFUL
    return FORCEFUL if period <= timedelta(0) else EVENTUAL


def reschedulable_pods(state: ClusterState, claim: NodeClaim) -> int:
    """Pods on the NodeClaim's node that need a new node when it goes."""
    node = claim.status.node_name
    if not node:
        return 0
    return sum(1 for pod in state.pods_on(node).values() if is_reschedulable(pod))


def record_disrupted(
    claim: NodeClaim,
    reason: str,
    *,
    pods: int | None = None,
    consolidation_policy: str = "",
) -> None:
    """Count one disrupted NodeClaim and the ``pods`` its disruption moves (None, as for a
    NodeClaim that never launched or registered: not counted at all, as Karpenter does).

    ``reason`` is in snake case (``underutilized``, ``launch_timeout``, ...);
    ``consolidation_policy`` is set for consolidation only (``when_empty_or_underutilized``).
    """
    labels = claim.metadata.labels
    values = (
        reason,
        labels.get(NODEPOOL_LABEL, ""),
        labels.get(CAPACITY_TYPE_LABEL, ""),
        consolidation_policy,
        termination_mode(claim),
    )
    metrics.nodeclaims_disrupted.labels(*values).inc()
    if pods is not None:
        metrics.pods_disruption_initiated.labels(*values).inc(pods)
