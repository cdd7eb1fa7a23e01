"""NodeClaim disruption conditions: ``Consolidatable``, ``Drifted``, ``lastPodEventTime``, and
forceful expiration (Karpenter's ``nodeclaim.disruption``, ``nodeclaim.podevents`` and
``nodeclaim.expiration`` controllers).

* ``status.lastPodEventTime`` is stamped when a pod binds to the NodeClaim's node, goes
  terminal, starts terminating or disappears (at most once every 10 s).
* ``Consolidatable`` is True once the NodeClaim is initialized and ``consolidateAfter`` has
  passed since the last pod event (or since initialization).
* ``Drifted`` names why the node no longer matches its NodePool: ``NodePoolDrifted`` (the
  template hash changed under the same hash version), ``RequirementsDrifted``,
  ``InstanceTypeNotFound`` (checked after an hour, every 30 minutes) or the provider's reason
  (asked every 5 minutes).
* At ``creationTimestamp + expireAfter`` the NodeClaim is deleted: no budget, no
  replacement; its drain still honours PodDisruptionBudgets.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from nodewright.api.core import Node, Pod
from nodewright.api.duration import DurationError, parse_optional_duration
from nodewright.api.karpenter import (
    CONDITION_CONSOLIDATABLE,
    CONDITION_DRIFTED,
    CONDITION_INITIALIZED,
    CONDITION_LAUNCHED,
    NodeClaim,
    NodePool,
)
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import Condition, find_condition, is_true, set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ConflictError, NotFoundError, object_version
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import Change
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.controllers.disruption.candidates import REASON_EXPIRED
from nodewright.controllers.disruption.podevents import PodEvents, PodState
from nodewright.controllers.metrics.disruption import record_disrupted, reschedulable_pods
from nodewright.controllers.nodeclaim.history import NodeHistory
from nodewright.controllers.state.solverdata import requirements_from_api
from nodewright.controllers.workqueue import RESYNC_PERIOD, WorkQueue, wait_until
from nodewright.plugin.errors import PluginError, TemporaryProviderError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.requirements import Requirements

log = logging.getLogger("nodewright.nodeclaim.disruption")

#: lastPodEventTime is not rewritten more often than this.
POD_EVENT_DEDUPE = timedelta(seconds=10)
#: How often drift is re-evaluated with the provider.
DRIFT_RECHECK = timedelta(minutes=5)
#: Instance-type drift is checked only on NodeClaims older than this, at most this often.
INSTANCE_TYPE_CHECK_AGE = timedelta(hours=1)
INSTANCE_TYPE_CHECK_PERIOD = timedelta(minutes=30)

DRIFT_NODEPOOL = "NodePoolDrifted"
DRIFT_REQUIREMENTS = "RequirementsDrifted"
DRIFT_INSTANCE_TYPE = "InstanceTypeNotFound"

#: The smallest step of the clock: "older than an hour" is first true this long after it.
_TICK = timedelta(microseconds=1)


@dataclass
class _Waits:
    """When one NodeClaim wants to be looked at again, as its last reconcile left it."""

    #: A fixed time (expiry, consolidateAfter running out).
    at: datetime | None = None
    #: A time after every pass (consolidateAfter counted from each pass).
    after: timedelta | None = None
    #: Whether the provider is asked again about drift :data:`DRIFT_RECHECK` after every
    #: pass: a poll, as nothing changes its answer by time alone but its own background work.
    recheck: bool = False
    #: When the provider's drift answer or the instance-type check goes stale.
    check: datetime | None = None


class NodeClaimDisruptionConditions:
    """Keeps NodeClaims' disruption conditions current, doing work only where things changed.

    A pass runs when anything in the cluster changed since the last one or when the earliest
    NodeClaim timer fell due. It reconciles the NodeClaims whose inputs changed (the claim,
    its Node, the pods on its node, its NodePool, its NodePool's NodeClass coming or going),
    those whose timer fell due (expiry, consolidateAfter) and those whose provider drift
    answer or instance-type check went stale; every other NodeClaim would come out of a
    reconcile unchanged. Every ``RESYNC_PERIOD`` a pass reconciles every NodeClaim.
    """

    name = "nodeclaim.disruption"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        history: NodeHistory,
    ) -> None:
        self._cluster = cluster
        self._state = cluster.state
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self.history = history
        self._node_class_kinds = tuple(kind.model for kind in host.node_class_kinds())
        self._changes = self._state.feed(NodeClaim, Node, Pod, NodePool, *self._node_class_kinds)
        #: NodeClaim changes the history has not seen (read after each pass's own writes).
        self._history_changes = self._state.feed(NodeClaim)
        self._pods = PodEvents()
        self._pods.rebuild(self._state.objects(Pod).values())
        #: The pod state of each node when its NodeClaim was last reconciled.
        self._pod_states: dict[str, PodState] = {}
        self._provider_drift: dict[str, tuple[datetime, str | None]] = {}
        self._instance_type_checked: dict[str, datetime] = {}
        #: NodeClaims to reconcile on the next pass (changed, retried) or at a fixed time.
        self._work: WorkQueue[str] = WorkQueue()
        #: NodeClaims whose drift answer or instance-type check goes stale at a time; looked
        #: at on the first pass from then on.
        self._checks: WorkQueue[str] = WorkQueue()
        self._waits: dict[str, _Waits] = {}
        #: How many NodeClaims wait each relative time (there are few distinct values).
        self._after: Counter[timedelta] = Counter()
        #: How many NodeClaims have their drift rechecked.
        self._rechecks = 0
        self._full_at: datetime | None = None
        self._full = True
        #: Whether a first pass ran (what a full pass compares with).
        self._primed = False
        #: NodeClaims a full pass found changed although no change or timer named them.
        self.missed = 0
        #: The resourceVersion after the last pass and when it next wanted to run: while
        #: nothing is written and nothing is due, a pass would change nothing.
        self._seen: tuple[int, tuple[datetime | None, datetime | None]] | None = None

    def resync(self, *, at_once: bool = True) -> None:
        """Reconcile every NodeClaim from scratch on the next call (``at_once=False``: on the
        next pass that runs anyway, because something changed or a timer fell due)."""
        self._full = True
        if at_once:
            self._seen = None

    def reconcile(self) -> timedelta | None:
        now = self._clock.now()
        version = object_version(self._cluster)
        if self._seen is not None and self._seen[0] == version:
            due, poll = self._seen[1]
            if (due is None or now < due) and (poll is None or now < poll):
                return wait_until(now, due, poll)
        due, poll = self._pass(now)
        self._seen = (object_version(self._cluster), (due, poll))
        return wait_until(now, due, poll)

    def _pass(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        if self._full_at is not None and now - self._full_at >= RESYNC_PERIOD:
            self._full = True
        for change in self._changes.drain():
            self._note(change)
        names = self._work.pop_ready(now) | self._checks.pop_ready(now)
        full = self._full
        expected = set(names) if self._primed else None
        if full:
            self._full, self._full_at = False, now
            names |= {key[1] for key in self._state.objects(NodeClaim)}
            stale = self._pods.rebuild(self._state.objects(Pod).values())
            for node_name in sorted(stale) if self._primed else ():
                log.warning("A full pass found the pods of node %s changed unseen", node_name)
                self.missed += 1
        ordered = sorted(names)
        for index, name in enumerate(ordered):
            waits = self._waits.get(name)
            try:
                wrote = self._reconcile_named(name, now)
            except BaseException:
                for unfinished in ordered[index:]:
                    self._work.add(unfinished)
                raise
            unseen = expected is not None and name not in expected
            if unseen and (wrote or self._waits.get(name) != waits):
                log.warning("A full pass found nodeclaim %s changed unseen", name)
                self.missed += 1
        self._observe(now, full)
        self._primed = True
        return self._next_due(now)

    def _reconcile_named(self, name: str, now: datetime) -> bool:
        """Reconcile one NodeClaim; True when it was written (or deleted)."""
        self._forget(name)
        claim = self._state.get(NodeClaim, ("", name))
        if claim is None:
            self._provider_drift.pop(name, None)
            self._instance_type_checked.pop(name, None)
            return False
        if claim.deleting:
            return False
        try:
            waits, wrote = self._reconcile(mutable(claim), self._state.node_for(claim), now)
        except (ConflictError, NotFoundError):
            self._work.add(name)  # again on the next pass, which comes at once
            return False
        self._remember(name, waits)
        return wrote

    # -- what to reconcile --------------------------------------------------------------------

    def _note(self, change: Change) -> None:
        """Queue the NodeClaims one change may matter to."""
        state = self._state
        if change.kind is NodeClaim:
            self._work.add(change.key[1])
        elif change.kind is Pod:
            for node_name in self._pods.change(
                change.key, cast("Pod | None", change.old), cast("Pod | None", change.new)
            ):
                node = state.get(Node, ("", node_name))
                claim = state.claim_for(node) if node is not None else None
                if claim is not None:
                    self._work.add(claim.name)
        elif change.kind is Node:
            old, new = cast("Node | None", change.old), cast("Node | None", change.new)
            ids = {n.spec.provider_id for n in (old, new) if n is not None and n.spec.provider_id}
            if old is None or new is None or len(ids) > 1:
                for provider_id in ids:
                    claim = state.claim_by_provider_id(provider_id)
                    if claim is not None:
                        self._work.add(claim.name)
        elif change.kind is NodePool:
            old_pool, new_pool = (
                cast("NodePool | None", change.old),
                cast("NodePool | None", change.new),
            )
            if (
                old_pool is None
                or new_pool is None
                or old_pool.spec != new_pool.spec
                or old_pool.metadata.annotations != new_pool.metadata.annotations
            ):
                self._queue_pool(change.key[1])
        elif (change.old is None) != (change.new is None):  # a NodeClass came or went
            obj = change.new or change.old
            assert obj is not None
            for pool in state.objects(NodePool).values():
                ref = pool.spec.template.spec.node_class_ref
                if ref.kind == obj.kind and ref.name == obj.name:
                    self._queue_pool(pool.name)

    def _queue_pool(self, pool: str) -> None:
        for key in self._state.claims_of_pool(pool):
            self._work.add(key[1])

    # -- timers -------------------------------------------------------------------------------

    def _forget(self, name: str) -> None:
        self._work.forget(name)
        self._checks.forget(name)
        waits = self._waits.pop(name, None)
        if waits is not None and waits.recheck:
            self._rechecks -= 1
        if waits is not None and waits.after is not None:
            self._after[waits.after] -= 1
            if not self._after[waits.after]:
                del self._after[waits.after]

    def _remember(self, name: str, waits: _Waits) -> None:
        if waits.at is not None:
            self._work.add_at(name, waits.at)
        if waits.check is not None:
            self._checks.add_at(name, waits.check)
        if waits.after is not None:
            self._after[waits.after] += 1
        if waits.recheck:
            self._rechecks += 1
        self._waits[name] = waits

    def _next_due(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """When the next pass is due: the earliest fixed time, or the shortest relative wait
        after this pass; and when the next drift recheck polls the provider."""
        poll = now + DRIFT_RECHECK if self._rechecks else None
        due = self._work.next_due()
        if due == datetime.min:
            return now, poll  # a retry
        if self._after:
            relative = now + min(self._after)
            due = relative if due is None else min(due, relative)
        return due, poll

    # -- history ------------------------------------------------------------------------------

    def _observe(self, now: datetime, full: bool) -> None:
        changes = self._history_changes.drain()
        if full:
            self.history.observe(list(self._state.sorted(NodeClaim)), now, self.price)
            return
        for change in sorted(changes, key=lambda c: c.key):
            name = change.key[1]
            self.history.observe_claim(
                name, self._state.get(NodeClaim, change.key), now, self.price
            )

    # -- one NodeClaim ------------------------------------------------------------------------

    def _reconcile(self, claim: NodeClaim, node: Node | None, now: datetime) -> tuple[_Waits, bool]:
        waits = _Waits()
        if self._expire(claim, now):
            return waits, True
        waits.at = _expires_at(claim)
        before = claim.status.model_dump()
        if node is not None:
            self._note_pod_events(claim, node, now)
        pool = self._state.get(NodePool, ("", claim.metadata.labels.get(NODEPOOL_LABEL, "")))
        if pool is not None:
            if self._drift(claim, pool, now, waits):
                waits.recheck = True
            if pool.spec.replicas is None:
                since, due = _consolidatable(claim, pool, now)
                if due is not None and since is None:
                    # Counted from now on every pass: never due while passes keep coming.
                    after = due - now
                    waits.after = after if waits.after is None else min(waits.after, after)
                elif due is not None:
                    waits.at = due if waits.at is None else min(waits.at, due)
        if claim.status.model_dump() != before:
            self._cluster.update_status(claim)
            return waits, True
        return waits, False

    # -- pod events ---------------------------------------------------------------------------

    def _note_pod_events(self, claim: NodeClaim, node: Node, now: datetime) -> None:
        state = self._pods.state(node.name)
        previous = self._pod_states.get(node.name)
        self._pod_states[node.name] = state
        if previous is None or previous == state:
            return
        last = claim.status.last_pod_event_time
        if last is None or now - last >= POD_EVENT_DEDUPE:
            claim.status.last_pod_event_time = now

    # -- expiration ---------------------------------------------------------------------------

    def _expire(self, claim: NodeClaim, now: datetime) -> bool:
        expiry = _expires_at(claim)
        if expiry is None or now < expiry:
            return False
        self.history.mark_disrupted(claim.name, REASON_EXPIRED, "Expiration/Delete")
        self._cluster.delete(NodeClaim, claim.name)
        pods = reschedulable_pods(self._cluster.state, claim)
        record_disrupted(claim, REASON_EXPIRED.lower(), pods=pods)
        log.info(
            "Deleting expired nodeclaim %s (expireAfter %s)", claim.name, claim.spec.expire_after
        )
        return True

    # -- drift --------------------------------------------------------------------------------

    def _drift(self, claim: NodeClaim, pool: NodePool, now: datetime, waits: _Waits) -> bool:
        """Set or clear ``Drifted``; False when the NodeClaim has not launched yet."""
        if not is_true(claim.status.conditions, CONDITION_LAUNCHED):
            _clear(claim.status.conditions, CONDITION_DRIFTED)
            return False
        reason = self._drift_reason(claim, pool, now, waits)
        if reason is None:
            if _clear(claim.status.conditions, CONDITION_DRIFTED):
                log.info("Nodeclaim %s is no longer drifted", claim.name)
        else:
            current = find_condition(claim.status.conditions, CONDITION_DRIFTED)
            if current is None or current.status != "True" or current.reason != reason:
                log.info("Marking nodeclaim %s drifted: %s", claim.name, reason)
            set_condition(
                claim.status.conditions,
                CONDITION_DRIFTED,
                "True",
                now,
                reason=reason,
                message=reason,
            )
        return True

    def _drift_reason(
        self, claim: NodeClaim, pool: NodePool, now: datetime, waits: _Waits
    ) -> str | None:
        """Why the NodeClaim drifted (None: it did not); ``waits.check`` is set to when the
        answer may change without any object changing."""
        annotations, own = pool.metadata.annotations, claim.metadata.annotations
        keys = (NODEPOOL_HASH_ANNOTATION, NODEPOOL_HASH_VERSION_ANNOTATION)
        if (
            all(k in annotations and k in own for k in keys)
            and annotations[NODEPOOL_HASH_VERSION_ANNOTATION]
            == own[NODEPOOL_HASH_VERSION_ANNOTATION]
            and annotations[NODEPOOL_HASH_ANNOTATION] != own[NODEPOOL_HASH_ANNOTATION]
        ):
            return DRIFT_NODEPOOL
        pool_requirements = requirements_from_api(pool.spec.template.spec.requirements)
        if not Requirements.from_labels(claim.metadata.labels).compatible(pool_requirements):
            return DRIFT_REQUIREMENTS
        try:
            node_class = self._catalog.node_class(pool.spec.template.spec.node_class_ref)
        except (UnknownNodeClassError, NodeClassNotFoundError, PluginError):
            return None
        created = claim.metadata.creation_timestamp or now
        checked = self._instance_type_checked.get(claim.name)
        if now - created > INSTANCE_TYPE_CHECK_AGE and (
            checked is None or now - checked >= INSTANCE_TYPE_CHECK_PERIOD
        ):
            try:
                types = self._catalog.pool_instance_types(node_class, pool.name)
            except (PluginError, TemporaryProviderError):
                types = None
            if types is not None:
                if _instance_type_gone(types, claim):
                    waits.check = now  # checked again on every pass
                    return DRIFT_INSTANCE_TYPE
                checked = self._instance_type_checked[claim.name] = now
        if claim.metadata.creation_timestamp is not None:
            waits.check = created + INSTANCE_TYPE_CHECK_AGE + _TICK
            if checked is not None:
                waits.check = max(waits.check, checked + INSTANCE_TYPE_CHECK_PERIOD)
        asked = self._provider_drift.get(claim.name)
        if asked is None or now - asked[0] >= DRIFT_RECHECK:
            try:
                asked = (now, self._host.is_drifted(node_class, claim))
            except (PluginError, TemporaryProviderError) as error:
                log.warning("Could not ask whether nodeclaim %s drifted: %s", claim.name, error)
                asked = (now, asked[1] if asked else None)
            self._provider_drift[claim.name] = asked
        stale = asked[0] + DRIFT_RECHECK
        waits.check = stale if waits.check is None else min(waits.check, stale)
        return asked[1]

    def price(self, claim: NodeClaim) -> float | None:
        """The catalog's price of the claim's offering (no call to the instance), or None."""
        try:
            node_class = self._catalog.node_class(claim.spec.node_class_ref)
            types = self._catalog.pool_instance_types(
                node_class, claim.metadata.labels.get(NODEPOOL_LABEL)
            )
        except (UnknownNodeClassError, NodeClassNotFoundError, PluginError):
            return None
        labels = claim.metadata.labels
        for instance_type in types:
            if instance_type.name != labels.get(INSTANCE_TYPE_LABEL):
                continue
            for offering in instance_type.offerings:
                if offering.zone == labels.get(ZONE_LABEL) and offering.capacity_type == labels.get(
                    CAPACITY_TYPE_LABEL
                ):
                    return offering.price
        return None


def _expires_at(claim: NodeClaim) -> datetime | None:
    try:
        expire_after = parse_optional_duration(claim.spec.expire_after)
    except DurationError:
        return None
    created = claim.metadata.creation_timestamp
    if expire_after is None or created is None:
        return None
    return created + expire_after


def _consolidatable(
    claim: NodeClaim, pool: NodePool, now: datetime
) -> tuple[datetime | None, datetime | None]:
    """Set or clear ``Consolidatable``; return (the time consolidateAfter counts from, None
    when that is now; when it may turn True, None when it is True or never will be)."""
    conditions = claim.status.conditions
    try:
        after = parse_optional_duration(pool.spec.disruption.consolidate_after)
    except DurationError:
        after = None
    initialized = find_condition(conditions, CONDITION_INITIALIZED)
    if after is None or initialized is None or initialized.status != "True":
        _clear(conditions, CONDITION_CONSOLIDATABLE)
        return None, None
    since = claim.status.last_pod_event_time or initialized.last_transition_time
    due = (since or now) + after
    if now < due:
        _clear(conditions, CONDITION_CONSOLIDATABLE)
        return since, due
    set_condition(conditions, CONDITION_CONSOLIDATABLE, "True", now)
    return since, None


def _clear(conditions: list[Condition], kind: str) -> bool:
    for index, condition in enumerate(conditions):
        if condition.type == kind:
            del conditions[index]
            return True
    return False


def _instance_type_gone(types: Sequence[InstanceType], claim: NodeClaim) -> bool:
    labels = claim.metadata.labels
    found = next((t for t in types if t.name == labels.get(INSTANCE_TYPE_LABEL)), None)
    if found is None:
        return True
    capacity_types = {labels.get(CAPACITY_TYPE_LABEL)}
    if CAPACITY_TYPE_RESERVED in capacity_types:
        capacity_types.add(CAPACITY_TYPE_ON_DEMAND)
    return not any(
        o.zone == labels.get(ZONE_LABEL) and o.capacity_type in capacity_types
        for o in found.offerings
    )
