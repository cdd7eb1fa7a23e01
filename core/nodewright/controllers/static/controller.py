"""Static NodePools (``spec.replicas``, feature gate ``StaticCapacity``): exactly that many nodes.

Karpenter runs two controllers for them (``static.provisioning`` and
``static.deprovisioning``), registered only when the gate is on. Provisioning creates
NodeClaims from the pool's template (no pods, no instance-type list: the provider launches the
cheapest offering the requirements allow) until the pool holds ``replicas``, within
``limits.nodes``; deprovisioning deletes the surplus when ``replicas`` goes down, NodeClaims
that never launched first, then empty nodes, then the nodes cheapest to disrupt. Both read the
pool's NodeClaims from the cluster state's per-pool index and act on changes to static pools
and their NodeClaims, plus a periodic look, never on a listing of the cluster.

Dynamic provisioning, emptiness and consolidation leave static pools alone whatever the gate;
drifted static nodes are replaced by the disruption loop's static drift method.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from nodewright import metrics
from nodewright.api.core import Pod
from nodewright.api.karpenter import CONDITION_READY, NodeClaim, NodePool
from nodewright.api.labels import NODEPOOL_LABEL
from nodewright.api.meta import is_true
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ClusterError
from nodewright.cluster.state import ClusterState
from nodewright.controllers.disruptioncost import (
    blocks_disruption,
    eviction_cost,
    lifetime_remaining,
)
from nodewright.controllers.state.cluster import owner_kind
from nodewright.controllers.state.solverdata import node_claim_for
from nodewright.controllers.static.pools import (
    is_static,
    marked_for_deletion,
    nodes_allowed,
    pending_disruption,
    static_node_counts,
    static_replacement,
)
from nodewright.controllers.workqueue import Resync, WorkQueue, wait_until
from nodewright.logfields import fields, ref
from nodewright.plugin.host import PluginHost

#: A static pool is looked at again this often even when nothing changes (Karpenter's requeue).
STATIC_REQUEUE = timedelta(minutes=1)
#: ... and this often while its ``limits.nodes`` holds provisioning back.
LIMIT_REQUEUE = timedelta(seconds=30)


class _StaticPoolController:
    """Reconciles static NodePools whose pool or NodeClaims changed, and each one now and then."""

    name = "static"

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self._cluster = cluster
        self._clock = clock
        self._queue: WorkQueue[str] = WorkQueue(self.name)
        self._changes = cluster.state.feed(NodePool, NodeClaim)
        self._resync = Resync()
        self._log = logging.getLogger(f"nodewright.{self.name}")

    def resync(self) -> None:
        self._resync.reset()

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        now = self._clock.now()
        if self._resync.due(now):
            for pool in state.sorted(NodePool):
                if is_static(pool):
                    self._queue.add(pool.name)
        for change in self._changes.drain():
            if change.kind is NodePool:
                self._queue.add(change.key[1])
                continue
            for claim in (change.old, change.new):
                if claim is not None and NODEPOOL_LABEL in claim.metadata.labels:
                    self._queue.add(claim.metadata.labels[NODEPOOL_LABEL])
        for name in sorted(self._queue.pop_ready(now)):
            found = state.get(NodePool, ("", name))
            if found is None or not is_static(found) or found.deleting:
                self._queue.forget(name)
                continue
            after = self._reconcile_pool(found)
            if after is not None:
                self._queue.add_at(name, now + after)
        return wait_until(now, self._queue.next_due(), self._resync.at)

    def _reconcile_pool(self, pool: NodePool) -> timedelta | None:
        raise NotImplementedError


class StaticProvisioning(_StaticPoolController):
    """Create NodeClaims until a Ready static pool holds ``replicas`` (within ``limits.nodes``)."""

    name = "static.provisioning"

    def __init__(self, cluster: Cluster, host: PluginHost, clock: Clock) -> None:
        super().__init__(cluster, clock)
        self._host = host
        #: Pools whose node limit was last found reached, so the line is logged once.
        self._at_limit: set[str] = set()

    def _reconcile_pool(self, pool: NodePool) -> timedelta | None:
        if not is_true(pool.status.conditions, CONDITION_READY):
            return None  # comes back when the pool changes (becomes Ready)
        desired = pool.spec.replicas or 0
        counts = static_node_counts(self._cluster.state, pool.name)
        # Nodes being replaced by a disruption command count: their replacements are coming.
        if counts.active + counts.pending_disruption >= desired:
            self._at_limit.discard(pool.name)
            return STATIC_REQUEUE
        count = nodes_allowed(pool, counts, desired - counts.active)
        if count <= 0:
            if pool.name not in self._at_limit:
                self._at_limit.add(pool.name)
                self._log.info("nodepool node limit reached", extra=fields(NodePool=ref(pool.name)))
            return LIMIT_REQUEUE
        self._at_limit.discard(pool.name)
        self._log.info(
            "provisioning nodeclaims to satisfy replica count",
            extra=fields(
                NodePool=ref(pool.name),
                current=counts.active,
                desired=desired,
                **{"provision-count": count},
            ),
        )
        for _ in range(count):
            try:
                claim = node_claim_for(
                    pool, static_replacement(pool), self._host.well_known_labels()
                )
                created = self._cluster.create(claim)
            except ClusterError as error:
                self._log.error(
                    "creating nodeclaim", extra=fields(NodePool=ref(pool.name), error=str(error))
                )
                return LIMIT_REQUEUE
            metrics.nodeclaims_created.labels("provisioned", pool.name, "false").inc()
            self._log.info(
                "created nodeclaim",
                extra=fields(NodePool=ref(pool.name), NodeClaim=ref(created.name)),
            )
        return STATIC_REQUEUE


class StaticDeprovisioning(_StaticPoolController):
    """Delete a static pool's surplus NodeClaims when ``replicas`` goes down."""

    name = "static.deprovisioning"

    def _reconcile_pool(self, pool: NodePool) -> timedelta | None:
        state = self._cluster.state
        desired = pool.spec.replicas or 0
        counts = static_node_counts(state, pool.name)
        # Only active NodeClaims: a node drift is replacing must not be removed twice.
        surplus = counts.active - desired
        if surplus <= 0:
            return STATIC_REQUEUE
        self._log.info(
            "deprovisioning nodeclaims to satisfy replica count",
            extra=fields(
                NodePool=ref(pool.name),
                current=counts.active,
                desired=desired,
                **{"deprovision-count": surplus},
            ),
        )
        for claim in scale_down_order(state, pool, self._clock.now())[:surplus]:
            try:
                self._cluster.delete(NodeClaim, claim.name)
            except ClusterError as error:
                self._log.error(
                    "failed to deprovision nodeclaims",
                    extra=fields(NodeClaim=ref(claim.name), error=str(error)),
                )
                return LIMIT_REQUEUE
            self._log.debug("deleting nodeclaim", extra=fields(NodeClaim=ref(claim.name)))
        return STATIC_REQUEUE


def scale_down_order(state: ClusterState, pool: NodePool, now: datetime) -> list[NodeClaim]:
    """The pool's active NodeClaims in the order a scale-down removes them (Karpenter's):
    those not launched yet, then empty nodes (no pods but daemonset pods, none of them
    ``do-not-disrupt``), then the rest, nodes without ``do-not-disrupt`` pods first and the
    cheapest to disrupt (pod eviction costs times the lifetime left) before others."""
    claims = sorted(
        (
            c
            for c in state.claims_of_pool(pool.name).values()
            if not marked_for_deletion(state, c) and not pending_disruption(c)
        ),
        key=lambda c: c.name,
    )
    unlaunched = [c for c in claims if not c.status.provider_id]
    empty: list[NodeClaim] = []
    others: list[tuple[bool, float, NodeClaim]] = []
    for claim in claims:
        if not claim.status.provider_id:
            continue
        node = state.node_for(claim)
        pods = list(state.pods_on(node.name).values()) if node is not None else []
        protected = any(blocks_disruption(p, now) for p in pods)
        if not protected and all(owner_kind(p) == "DaemonSet" for p in pods):
            empty.append(claim)
            continue
        cost = _rescheduling_cost(pods) * lifetime_remaining(claim, now)
        others.append((protected, cost, claim))
    others.sort(key=lambda item: (item[0], item[1]))
    return [*unlaunched, *empty, *(claim for _, _, claim in others)]


def _rescheduling_cost(pods: Iterable[Pod]) -> float:
    return sum(eviction_cost(p) for p in pods)
