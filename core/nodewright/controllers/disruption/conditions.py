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
from collections.abc import Sequence
from datetime import datetime, timedelta

from nodewright import metrics
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
from nodewright.cluster import Cluster, ConflictError, NotFoundError
from nodewright.cluster.objects import mutable
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.controllers.disruption.candidates import REASON_EXPIRED
from nodewright.controllers.disruption.history import NodeHistory
from nodewright.controllers.state import is_terminal, owner_kind
from nodewright.controllers.templates import requirements_from_api
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

_PodState = frozenset[tuple[str, bool, bool]]


class NodeClaimDisruptionConditions:
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
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self.history = history
        self._pod_states: dict[str, _PodState] = {}
        self._provider_drift: dict[str, tuple[datetime, str | None]] = {}
        self._instance_type_checked: dict[str, datetime] = {}
        #: The resourceVersion of the last full pass and when it next wanted to run: while
        #: nothing is written and nothing is due, a pass would change nothing.
        self._seen: tuple[int, datetime | None] | None = None

    def resync(self) -> None:
        self._seen = None

    def reconcile(self) -> timedelta | None:
        now = self._clock.now()
        version = self._cluster.resource_version()
        if self._seen is not None and self._seen[0] == version:
            due = self._seen[1]
            if due is None:
                return None
            if now < due:
                return due - now
        wake = self._pass(now)
        self._seen = (self._cluster.resource_version(), None if wake is None else now + wake)
        return wake

    def _pass(self, now: datetime) -> timedelta | None:
        claims = self._cluster.list(NodeClaim)
        nodes = {n.spec.provider_id: n for n in self._cluster.list(Node) if n.spec.provider_id}
        pods_by_node: dict[str, list[Pod]] = {}
        for pod in self._cluster.list(Pod):
            if pod.spec.node_name and owner_kind(pod) != "DaemonSet":
                pods_by_node.setdefault(pod.spec.node_name, []).append(pod)
        pools = {p.name: p for p in self._cluster.list(NodePool)}
        wake: timedelta | None = None
        for claim in claims:
            if claim.deleting:
                continue
            node = nodes.get(claim.status.provider_id or "")
            try:
                after = self._reconcile(mutable(claim), node, pods_by_node, pools, now)
            except (ConflictError, NotFoundError):
                after = timedelta(0)
            if after is not None and (wake is None or after < wake):
                wake = after
        live = {c.name for c in claims}
        for cache in (self._provider_drift, self._instance_type_checked):
            for gone in set(cache) - live:
                del cache[gone]
        self.history.observe(self._cluster.list(NodeClaim), now, self._price)
        return wake

    def _reconcile(
        self,
        claim: NodeClaim,
        node: Node | None,
        pods_by_node: dict[str, list[Pod]],
        pools: dict[str, NodePool],
        now: datetime,
    ) -> timedelta | None:
        if self._expire(claim, now):
            return None
        waits: list[timedelta] = []
        expiry = _expires_at(claim)
        if expiry is not None:
            waits.append(expiry - now)
        before = claim.status.model_dump()
        if node is not None:
            self._note_pod_events(claim, node, pods_by_node.get(node.name, []), now)
        pool = pools.get(claim.metadata.labels.get(NODEPOOL_LABEL, ""))
        if pool is not None:
            waits.extend(w for w in (self._drift(claim, pool, now),) if w is not None)
            if pool.spec.replicas is None:
                consolidatable_in = _consolidatable(claim, pool, now)
                if consolidatable_in is not None:
                    waits.append(consolidatable_in)
        if claim.status.model_dump() != before:
            self._cluster.update_status(claim)
        return min(waits) if waits else None

    # -- pod events ---------------------------------------------------------------------------

    def _note_pod_events(
        self, claim: NodeClaim, node: Node, pods: list[Pod], now: datetime
    ) -> None:
        state: _PodState = frozenset(
            (p.metadata.uid or p.key, is_terminal(p), p.deleting) for p in pods
        )
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
        labels = claim.metadata.labels
        metrics.nodeclaims_disrupted.labels(
            REASON_EXPIRED.lower(),
            labels.get(NODEPOOL_LABEL, ""),
            labels.get(CAPACITY_TYPE_LABEL, ""),
        ).inc()
        self._cluster.delete(NodeClaim, claim.name)
        log.info(
            "Deleting expired nodeclaim %s (expireAfter %s)", claim.name, claim.spec.expire_after
        )
        return True

    # -- drift --------------------------------------------------------------------------------

    def _drift(self, claim: NodeClaim, pool: NodePool, now: datetime) -> timedelta | None:
        if not is_true(claim.status.conditions, CONDITION_LAUNCHED):
            _clear(claim.status.conditions, CONDITION_DRIFTED)
            return None
        reason = self._drift_reason(claim, pool, now)
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
        return DRIFT_RECHECK

    def _drift_reason(self, claim: NodeClaim, pool: NodePool, now: datetime) -> str | None:
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
                types = self._catalog.instance_types(node_class)
            except (PluginError, TemporaryProviderError):
                types = None
            if types is not None:
                if _instance_type_gone(types, claim):
                    return DRIFT_INSTANCE_TYPE
                self._instance_type_checked[claim.name] = now
        asked = self._provider_drift.get(claim.name)
        if asked is None or now - asked[0] >= DRIFT_RECHECK:
            try:
                asked = (now, self._host.is_drifted(node_class, claim))
            except (PluginError, TemporaryProviderError) as error:
                log.warning("Could not ask whether nodeclaim %s drifted: %s", claim.name, error)
                asked = (now, asked[1] if asked else None)
            self._provider_drift[claim.name] = asked
        return asked[1]

    def _price(self, claim: NodeClaim) -> float | None:
        try:
            node_class = self._catalog.node_class(claim.spec.node_class_ref)
            types = self._catalog.instance_types(node_class)
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


def _consolidatable(claim: NodeClaim, pool: NodePool, now: datetime) -> timedelta | None:
    """Set or clear ``Consolidatable``; return how long until it may turn True."""
    conditions = claim.status.conditions
    try:
        after = parse_optional_duration(pool.spec.disruption.consolidate_after)
    except DurationError:
        after = None
    initialized = find_condition(conditions, CONDITION_INITIALIZED)
    if after is None or initialized is None or initialized.status != "True":
        _clear(conditions, CONDITION_CONSOLIDATABLE)
        return None
    since = claim.status.last_pod_event_time or initialized.last_transition_time or now
    due = since + after
    if now < due:
        _clear(conditions, CONDITION_CONSOLIDATABLE)
        return due - now
    set_condition(conditions, CONDITION_CONSOLIDATABLE, "True", now)
    return None


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
