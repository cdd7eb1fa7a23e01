"""Node termination: a Node with nodewright's finalizer that is being deleted is tainted,
drained through the Eviction API (so PodDisruptionBudgets hold), and released once its
pods are gone; its NodeClaim's finalizer then deletes the instance."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from nodewright.api.core import Node, Pod, Taint
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import (
    DISRUPTED_TAINT_KEY,
    EXCLUDE_FROM_LB_LABEL,
    TERMINATION_FINALIZER,
)
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ConflictError, EvictionBlockedError, NotFoundError
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.controllers.state import is_terminal, owner_kind
from nodewright.scheduling.pods import pod_tolerations
from nodewright.scheduling.taints import Taint as SchedulingTaint

log = logging.getLogger("nodewright.node.termination")

DRAIN_POLL = timedelta(seconds=1)
#: A pod this long past its deletion timestamp is stuck and no longer waited for.
STUCK_TERMINATING = timedelta(minutes=1)
CRITICAL_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")

_DISRUPTED = SchedulingTaint(DISRUPTED_TAINT_KEY, "NoSchedule")


class NodeTermination:
    name = "node.termination"

    def __init__(self, cluster: Cluster, clock: Clock, events: EventRecorder) -> None:
        self._cluster = cluster
        self._clock = clock
        self._events = events

    def reconcile(self) -> timedelta | None:
        wake: timedelta | None = None
        terminating = [
            n
            for n in self._cluster.list(Node)
            if n.deleting and TERMINATION_FINALIZER in n.metadata.finalizers
        ]
        if not terminating:
            return None
        pods = self._cluster.list(Pod)
        claims = self._cluster.list(NodeClaim)
        for node in terminating:
            try:
                after = self._terminate(
                    node, [p for p in pods if p.spec.node_name == node.name], claims
                )
            except (ConflictError, NotFoundError):
                after = timedelta(0)
            if after is not None and (wake is None or after < wake):
                wake = after
        return wake

    def _terminate(self, node: Node, pods: list[Pod], claims: list[NodeClaim]) -> timedelta | None:
        for claim in claims:
            if claim.status.provider_id == node.spec.provider_id and not claim.deleting:
                self._cluster.delete(NodeClaim, claim.name)
        if not any(t.key == DISRUPTED_TAINT_KEY for t in node.spec.taints):
            node.spec.taints.append(Taint(key=DISRUPTED_TAINT_KEY, effect="NoSchedule"))
            node.metadata.labels[EXCLUDE_FROM_LB_LABEL] = "karpenter"
            node = self._cluster.update(node)
            log.info("Cordoned node %s", node.name)
        waiting = self._drain(node, pods)
        if waiting:
            return DRAIN_POLL
        node.metadata.finalizers = [
            f for f in node.metadata.finalizers if f != TERMINATION_FINALIZER
        ]
        self._cluster.update(node)
        log.info("Deleted node %s", node.name)
        return None

    def _drain(self, node: Node, pods: list[Pod]) -> int:
        """Evict the next tier of pods; return how many pods the drain still waits for.

        Tiers follow Karpenter: non-critical non-daemon, non-critical daemon, critical
        non-daemon, critical daemon. A tier starts only when the one before is gone.
        """
        now = self._clock.now()
        drainable = [p for p in pods if _waits_for_eviction(p, now)]
        if not drainable:
            return 0
        tiers: list[list[Pod]] = [[], [], [], []]
        for pod in drainable:
            critical = pod.spec.priority_class_name in CRITICAL_PRIORITY_CLASSES
            daemon = owner_kind(pod) == "DaemonSet"
            tiers[2 * critical + daemon].append(pod)
        current = next(tier for tier in tiers if tier)
        blocked: list[str] = []
        for pod in current:
            if pod.deleting:
                continue
            try:
                self._cluster.evict(pod.name, pod.namespace)
                self._events.publish(pod, "Evicted", "Evicted pod")
            except EvictionBlockedError as error:
                blocked.append(f"{pod.key} ({error})")
            except NotFoundError:
                continue
        if blocked:
            self._events.publish(
                node,
                "FailedDraining",
                f"Failed to drain node, {len(drainable)} pods are waiting to be evicted",
                WARNING,
            )
        return len(drainable)


def _waits_for_eviction(pod: Pod, now: datetime) -> bool:
    if is_terminal(pod) or owner_kind(pod) == "Node":
        return False
    if any(t.tolerates(_DISRUPTED) for t in pod_tolerations(pod)):
        return False
    deleted = pod.metadata.deletion_timestamp
    return not (deleted is not None and now - deleted > STUCK_TERMINATING)
