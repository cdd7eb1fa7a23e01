"""The NodeClaim lifecycle controller (``nodeclaim.lifecycle``): which NodeClaims to look at
each pass, and the order of the steps each one goes through."""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.core import Node
from nodewright.api.karpenter import (
    CONDITION_INITIALIZED,
    CONDITION_LAUNCHED,
    CONDITION_READY,
    CONDITION_REGISTERED,
    NodeClaim,
)
from nodewright.api.labels import TERMINATION_FINALIZER
from nodewright.api.meta import find_condition, is_true, set_condition
from nodewright.clock import Clock, Poll
from nodewright.cluster import Cluster, ConflictError, NotFoundError
from nodewright.cluster.objects import mutable
from nodewright.controllers.catalog import Catalog
from nodewright.controllers.events import EventRecorder
from nodewright.controllers.nodeclaim.lifecycle.consistency import Consistency
from nodewright.controllers.nodeclaim.lifecycle.initialization import Initialization
from nodewright.controllers.nodeclaim.lifecycle.launch import Launch
from nodewright.controllers.nodeclaim.lifecycle.liveness import Liveness
from nodewright.controllers.nodeclaim.lifecycle.registration import Registration
from nodewright.controllers.nodeclaim.lifecycle.termination import Termination
from nodewright.controllers.state.nodepoolhealth import RegistrationOutcomes
from nodewright.controllers.workqueue import Resync, WorkQueue, wait_until
from nodewright.plugin.host import PluginHost

#: Steps further away than this are not scheduled (a registered claim never times out).
FOREVER = timedelta(days=3650)

#: The conditions every NodeClaim carries from its first reconcile, Unknown until decided.
_LIFECYCLE_CONDITIONS = (
    CONDITION_LAUNCHED,
    CONDITION_REGISTERED,
    CONDITION_INITIALIZED,
    CONDITION_READY,
)


class NodeClaimLifecycle:
    name = "nodeclaim.lifecycle"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        events: EventRecorder,
        *,
        outcomes: RegistrationOutcomes,
        dra: bool = False,
    ) -> None:
        self._cluster = cluster
        self._clock = clock
        self._liveness = Liveness(cluster, clock, outcomes)
        self._launch = Launch(cluster, host, catalog, clock, events)
        self._registration = Registration(cluster, host, catalog, clock, events, outcomes=outcomes)
        self._initialization = Initialization(cluster, clock, dra)
        self._consistency = Consistency(cluster, clock, events)
        self._termination = Termination(cluster, host, catalog, clock, events)
        #: NodeClaims whose claim or Node changed, or whose next step falls due.
        self._queue: WorkQueue[str] = WorkQueue(self.name)
        #: NodeClaims looked at again only to poll (the consistency scan).
        self._polls: WorkQueue[str] = WorkQueue()
        self._changes = cluster.state.feed(NodeClaim, Node)
        self._resync = Resync()

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        now = self._clock.now()
        if self._resync.due(now):
            # Everything now and then, as an informer's resync: it must find nothing new.
            for every in state.sorted(NodeClaim):
                self._queue.add(every.name)
        for change in self._changes.drain():
            if change.kind is NodeClaim:
                self._queue.add(change.key[1])
                continue
            for node in (change.old, change.new):  # a Node: wake its NodeClaim
                provider_id = node.spec.provider_id if isinstance(node, Node) else None
                owner = state.claim_by_provider_id(provider_id) if provider_id else None
                if owner is not None:
                    self._queue.add(owner.name)
        for name in sorted(self._queue.pop_ready(now) | self._polls.pop_ready(now)):
            stored = state.get(NodeClaim, ("", name))
            if stored is None:
                continue
            try:
                after = self._reconcile(mutable(stored))
            except (ConflictError, NotFoundError):
                after = timedelta(0)  # someone else wrote it first; look again next pass
            if after is not None and after < FOREVER:
                queue = self._polls if isinstance(after, Poll) else self._queue
                queue.add_at(name, now + after)
        self._consistency.forget_gone(
            {claim.metadata.uid for claim in state.objects(NodeClaim).values()}
        )
        polls = [due for due in (self._polls.next_due(), self._resync.at) if due is not None]
        return wait_until(now, self._queue.next_due(), min(polls, default=None))

    def resync(self) -> None:
        self._resync.reset()

    def _reconcile(self, claim: NodeClaim) -> timedelta | None:
        found = self._cluster.state.nodes_with_provider_id(claim.status.provider_id or "")
        if claim.deleting:
            return self._termination.reconcile(claim, found)
        if TERMINATION_FINALIZER not in claim.metadata.finalizers:
            claim.metadata.finalizers.append(TERMINATION_FINALIZER)
            claim = mutable(self._cluster.update(claim))
        claim = self._initialize_conditions(claim)
        timeout = self._liveness.reconcile(claim)
        if timeout is None:
            return None  # deleted for taking too long
        conditions = claim.status.conditions
        if not is_true(conditions, CONDITION_LAUNCHED):
            return _sooner_requeue(self._launch.reconcile(claim), timeout)
        if not is_true(conditions, CONDITION_REGISTERED):
            return _sooner_requeue(self._registration.reconcile(claim, found), timeout)
        node = found[0] if len(found) == 1 else None
        if node is None:
            return None
        if not is_true(conditions, CONDITION_INITIALIZED):
            return self._initialization.reconcile(claim, node)
        return self._consistency.reconcile(claim, node)

    def _initialize_conditions(self, claim: NodeClaim) -> NodeClaim:
        """Give a new NodeClaim its lifecycle conditions, Unknown until each step decides.

        The timeouts count from these conditions' transition times, as Karpenter's do.
        """
        missing = [
            kind
            for kind in _LIFECYCLE_CONDITIONS
            if find_condition(claim.status.conditions, kind) is None
        ]
        if not missing:
            return claim
        now = self._clock.now()
        for kind in missing:
            set_condition(
                claim.status.conditions,
                kind,
                "Unknown",
                now,
                reason="AwaitingReconciliation",
                message="object is awaiting reconciliation",
            )
        return mutable(self._cluster.update_status(claim))


def _sooner_requeue(first: timedelta | None, second: timedelta | None) -> timedelta | None:
    """The sooner of two requeue delays, ignoring None and ``timedelta.max`` (no deadline)."""
    waits = [w for w in (first, second) if w is not None and w != timedelta.max]
    return min(waits, default=None)
