"""NodePool registration health (``nodepool.registrationhealth``, Karpenter's
``pkg/controllers/nodepool/registrationhealth``).

A NodePool's ``NodeRegistrationHealthy`` condition says whether its recent NodeClaims launched
and registered (see :mod:`nodewright.controllers.state.nodepoolhealth`). This controller starts it
over, Unknown with no outcomes, whenever the NodePool's spec or its NodeClass changes, since
either may have fixed (or broken) what made nodes fail; it records the NodeClass generation
it saw in ``status.nodeClassObservedGeneration``. After a restart the outcomes are gone, so a
pool whose condition is True or False resumes from it. A NodePool whose NodeClass is missing
or served by no provider is left alone.
"""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.karpenter import CONDITION_NODE_REGISTRATION_HEALTHY, NodePool
from nodewright.api.meta import find_condition, set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ConflictError, NotFoundError
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.controllers.state.nodepoolhealth import Health, RegistrationOutcomes
from nodewright.controllers.workqueue import Resync, WorkQueue, wait_until
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost


class NodePoolRegistrationHealth:
    name = "nodepool.registrationhealth"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        outcomes: RegistrationOutcomes,
    ) -> None:
        self._cluster = cluster
        self._catalog = catalog
        self._clock = clock
        self._outcomes = outcomes
        #: NodePools whose spec, status or NodeClass changed.
        self._queue: WorkQueue[str] = WorkQueue(self.name)
        self._changes = cluster.state.feed(
            NodePool, *(kind.model for kind in host.node_class_kinds())
        )
        self._resync = Resync()

    def resync(self) -> None:
        self._resync.reset()

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        now = self._clock.now()
        everything = self._resync.due(now)
        for change in self._changes.drain():
            if change.kind is NodePool:
                self._queue.add(change.key[1])
            else:  # a NodeClass: any pool may name it
                everything = True
        if everything:
            for every in state.sorted(NodePool):
                self._queue.add(every.name)
        for name in sorted(self._queue.pop_ready(now)):
            pool = state.get(NodePool, ("", name))
            if pool is None or pool.deleting:
                continue
            try:
                self._reconcile(pool)
            except (ConflictError, NotFoundError):
                self._queue.add_at(name, now)
        return wait_until(now, self._queue.next_due(), self._resync.at)

    def _reconcile(self, pool: NodePool) -> None:
        try:
            node_class = self._catalog.node_class(pool.spec.template.spec.node_class_ref)
        except (UnknownNodeClassError, NodeClassNotFoundError, PluginError):
            return
        uid = pool.metadata.uid or ""
        generation = pool.metadata.generation
        condition = find_condition(pool.status.conditions, CONDITION_NODE_REGISTRATION_HEALTHY)
        if condition is not None and self._outcomes.health(uid) is Health.UNKNOWN:
            if condition.status == "True":
                self._outcomes.assume(uid, Health.HEALTHY)
            elif condition.status == "False":
                self._outcomes.assume(uid, Health.UNHEALTHY)
        seen = node_class.metadata.generation
        stale = (
            condition is None
            or pool.status.node_class_observed_generation != seen
            or condition.observed_generation != generation
        )
        if not stale:
            return
        written = pool.status_copy()
        set_condition(
            written.status.conditions,
            CONDITION_NODE_REGISTRATION_HEALTHY,
            "Unknown",
            self._clock.now(),
            reason="AwaitingReconciliation",
            message="object is awaiting reconciliation",
            observed_generation=generation,
        )
        written.status.node_class_observed_generation = seen
        self._outcomes.assume(uid, Health.UNKNOWN)
        self._cluster.update_status(written)
