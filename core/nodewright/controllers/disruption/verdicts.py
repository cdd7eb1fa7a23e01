"""Every node's disruption verdict, kept from changes so a pass costs what changed.

Karpenter works out its disruption candidates from the whole cluster on every loop; here the
:class:`NodeVerdict` of each node is kept and worked out again only when something it depends
on changed: the Node, its NodeClaim, the pods bound to it, its NodePool (spec) or that pool's
instance types, the PodDisruptionBudgets over its pods (whom they select, whether they allow
an eviction), its nomination for pending pods (:mod:`~nodewright.controllers.state.nominations`),
or when a ``karpenter.sh/do-not-disrupt`` duration on one of its pods or that nomination runs
out.
From the verdicts it keeps, per disruption class and per method, the candidates in node order,
what each NodePool's budget counts, and the nodes a stale disruption taint may sit on.

Events the old per-pass walk published on every pass while a node stayed blocked or
unconsolidatable are published when the event recorder would record them (the first time, then
once its dedupe window has passed), which is what those repeated calls did.

A full resync (every ``RESYNC_PERIOD``, or on :meth:`NodeVerdicts.resync`) works every node out
from scratch and counts in ``missed`` any verdict the change-driven path left stale.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import cast

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.labels import NODEPOOL_LABEL
from nodewright.api.meta import KubeObject
from nodewright.cluster.state import ClusterState
from nodewright.controllers.disruption.candidates import (
    EVENTUAL,
    GRACEFUL,
    Candidate,
    NodeVerdict,
    judge,
)
from nodewright.controllers.disruption.methods import Eligibility, Method
from nodewright.controllers.disruption.pdbs import PdbLimits, PdbTracker
from nodewright.controllers.events import KARPENTER_DEDUPE, EventRecorder, identity
from nodewright.controllers.state.nominations import Nominations
from nodewright.controllers.workqueue import RESYNC_PERIOD, WorkQueue
from nodewright.scheduling.instancetype import InstanceType

log = logging.getLogger("nodewright.disruption")

BLOCKED = "DisruptionBlocked"

#: Publishes one event on an object: (object, reason, message, dedupe) -> when it is next due.
Publisher = Callable[[KubeObject, str, str, timedelta | None], datetime | None]


class _Judged(list[Candidate]):
    """Candidates in node order (a list, rebuilt only when one came, went or changed)."""


@dataclass
class _Repeated:
    """An event repeated on every evaluation while its cause holds, per node: each node's
    current message, and when publishing it again would next be recorded."""

    reason: str
    dedupe: timedelta | None = None
    messages: dict[str, str] = field(default_factory=dict)
    due: WorkQueue[str] = field(default_factory=WorkQueue)

    def set(self, name: str, message: str | None) -> None:
        if message is None:
            if self.messages.pop(name, None) is not None:
                self.due.forget(name)
        elif self.messages.get(name) != message:
            self.messages[name] = message
            self.due.add(name)

    def publish(
        self,
        now: datetime,
        targets: Callable[[str], Sequence[KubeObject]],
        skip: Callable[[str], bool],
        publish: Publisher,
    ) -> None:
        """Publish, in node order, every message that would be recorded now."""
        for name in sorted(self.due.pop_ready(now)):
            message = self.messages.get(name)
            if message is None:
                continue
            if skip(name):
                self.due.add(name)  # evaluated again once the node is no longer held
                continue
            dues = [publish(obj, self.reason, message, self.dedupe) for obj in targets(name)]
            if any(due is None for due in dues) or not dues:
                self.due.add(name)
            else:
                self.due.add_at(name, min(cast(list[datetime], dues)))


class _MethodView:
    """One method's view of its class's candidates: who is eligible, and why not."""

    def __init__(self, eligibility: Callable[[Candidate], Eligibility]) -> None:
        self.eligibility = eligibility
        self.answers: dict[str, tuple[Candidate, Eligibility]] = {}
        self.events = _Repeated("Unconsolidatable", dedupe=timedelta(minutes=15))
        self.eligible: _Judged | None = _Judged()

    def update(self, name: str, candidate: Candidate | None) -> None:
        held = self.answers.get(name)
        if held is not None and held[0] is candidate:
            return
        if candidate is None:
            if held is not None:
                del self.answers[name]
                self.events.set(name, None)
                self.eligible = None
            return
        answer = self.eligibility(candidate)
        self.answers[name] = (candidate, answer)
        self.events.set(name, answer.unconsolidatable)
        if answer.eligible or (held is not None and held[1].eligible):
            self.eligible = None

    def listed(self) -> _Judged:
        if self.eligible is None:
            self.eligible = _Judged(
                self.answers[name][0]
                for name in sorted(self.answers)
                if self.answers[name][1].eligible
            )
        return self.eligible


class _ClassView:
    """One disruption class's candidates and ``DisruptionBlocked`` messages."""

    def __init__(self, disruption_class: str) -> None:
        self.disruption_class = disruption_class
        self.candidates: dict[str, Candidate] = {}
        self.events = _Repeated(BLOCKED, dedupe=KARPENTER_DEDUPE)
        self.methods: list[_MethodView] = []
        self._listed: _Judged | None = _Judged()

    def update(self, name: str, verdict: NodeVerdict | None) -> None:
        candidate = None if verdict is None else verdict.candidate_for(self.disruption_class)
        self.events.set(
            name, None if verdict is None else verdict.blocked_for(self.disruption_class)
        )
        if self.candidates.get(name) is not candidate:
            if candidate is None:
                self.candidates.pop(name, None)
            else:
                self.candidates[name] = candidate
            self._listed = None
        for method in self.methods:
            method.update(name, candidate)

    def listed(self) -> _Judged:
        if self._listed is None:
            self._listed = _Judged(self.candidates[name] for name in sorted(self.candidates))
        return self._listed


@dataclass
class _PoolFacts:
    """What verdicts took from one NodePool: the pool (kept while its spec is unchanged) and
    its instance types by name (kept while equal; None when its NodeClass does not resolve)."""

    pool: NodePool | None
    types: list[InstanceType] | None
    by_name: dict[str, InstanceType] | None


class NodeVerdicts:
    """Each node's :class:`NodeVerdict`, and what the disruption loop reads from them."""

    def __init__(
        self,
        state: ClusterState,
        methods: Sequence[Method],
        nominations: Nominations | None = None,
    ) -> None:
        self._state = state
        #: Nodes nominated for pending pods are not candidates while their nomination lasts.
        self._nominations = nominations
        #: The nominations as the verdicts last took them in, and the counter they had then.
        self._nominated: dict[str, datetime] = {}
        self._nomination_changes = 0
        self._changes = state.feed(Node, NodeClaim, Pod)
        self.pdbs = PdbTracker(state)
        self._verdicts: dict[str, NodeVerdict] = {}
        self._pools: dict[str, _PoolFacts] = {}
        #: Nodes whose verdict a do-not-disrupt duration running out may change.
        self._expiring: WorkQueue[str] = WorkQueue()
        #: NodePool label → nodes counted in its budgets / counted and unavailable.
        self._counted: Counter[str] = Counter()
        self._unavailable: Counter[str] = Counter()
        self._marked: set[str] = set()
        self._classes = {c: _ClassView(c) for c in (GRACEFUL, EVENTUAL)}
        self._methods = [_MethodView(method.eligibility) for method in methods]
        for method, view in zip(methods, self._methods, strict=True):
            self._classes[method.disruption_class].methods.append(view)
        self._full = True
        self._full_at: datetime | None = None
        #: Whether verdicts were worked out once (what a full resync compares with).
        self._primed = False
        #: Verdicts a full resync found different from what changes had kept.
        self.missed = 0

    def resync(self) -> None:
        """Work every node out from scratch on the next refresh."""
        self._full = True
        self.pdbs.resync()

    # -- keeping verdicts current ---------------------------------------------------------------

    def refresh(
        self,
        now: datetime,
        pools: Mapping[str, NodePool],
        instance_types: Mapping[str, list[InstanceType]],
    ) -> None:
        """Work out again the verdicts of the nodes whose inputs changed since the last call.

        ``pools`` are the NodePools by name and ``instance_types`` their instance types (for
        those whose NodeClass resolves), as the pass reads them.
        """
        if self._full_at is not None and now - self._full_at >= RESYNC_PERIOD:
            self.resync()
        pdb_changes, pdbs_missed = self.pdbs.refresh()
        for namespace in sorted(pdbs_missed):
            log.warning("A full resync found budgets in namespace %s changed unseen", namespace)
            self.missed += 1
        dirty = self._changed_nodes()
        dirty |= self._changed_pools(pools, instance_types)
        dirty |= self._changed_nominations()
        dirty |= self._expiring.pop_ready(now)
        for namespace in pdb_changes:
            for pod in self._state.in_namespace(Pod, namespace).values():
                if pod.spec.node_name:
                    dirty.add(pod.spec.node_name)
        full, self._full = self._full, False
        if full:
            self._full_at = now
            everything = {key[1] for key in self._state.objects(Node)} | set(self._verdicts)
        else:
            everything = dirty
        pdbs = self.pdbs.limits
        for name in sorted(everything):
            verdict = self._judge(name, pdbs, now)
            kept = self._verdicts.get(name)
            if self._primed and name not in dirty and not _same(kept, verdict):
                log.warning("A full resync found node %s changed unseen", name)
                self.missed += 1
            self._store(name, kept, verdict)
        self._primed = True

    def _changed_nodes(self) -> set[str]:
        dirty: set[str] = set()
        state = self._state
        for change in self._changes.drain():
            if change.kind is Node:
                dirty.add(change.key[1])
            elif change.kind is NodeClaim:
                for claim in (change.old, change.new):
                    node = state.node_for(cast(NodeClaim, claim)) if claim is not None else None
                    if node is not None:
                        dirty.add(node.name)
            else:
                for pod in (change.old, change.new):
                    if pod is not None and cast(Pod, pod).spec.node_name:
                        dirty.add(cast(Pod, pod).spec.node_name or "")
        return dirty

    def _changed_nominations(self) -> set[str]:
        """Nodes nominated, or nominated again, since the last refresh (a nomination that
        ends is an expiry of the verdict it made)."""
        nominations = self._nominations
        if nominations is None or nominations.changes == self._nomination_changes:
            return set()
        self._nomination_changes = nominations.changes
        held = nominations.held()
        dirty: set[str] = set()
        for provider_id, until in held.items():
            if self._nominated.get(provider_id) != until:
                dirty.update(n.name for n in self._state.nodes_with_provider_id(provider_id))
        self._nominated = dict(held)
        return dirty

    def _changed_pools(
        self, pools: Mapping[str, NodePool], instance_types: Mapping[str, list[InstanceType]]
    ) -> set[str]:
        """Nodes of the NodePools whose spec or instance types changed."""
        dirty: set[str] = set()
        for name in pools.keys() | self._pools.keys():
            pool = pools.get(name)
            types = instance_types.get(name)
            facts = self._pools.get(name)
            if facts is None:
                facts = self._pools[name] = _PoolFacts(None, None, None)
            same_pool = facts.pool is pool or (
                facts.pool is not None and pool is not None and facts.pool.spec == pool.spec
            )
            same_types = facts.types is types
            if not same_types and facts.types is not None and types is not None:
                same_types = facts.types == types
                if same_types:
                    # Equal types fetched again: keep the new list, so the next pass can stop
                    # at identity instead of comparing every type again.
                    facts.types = types
                    facts.by_name = {it.name: it for it in types}
            if same_pool and same_types:
                continue
            if not same_pool:
                facts.pool = pool
            if not same_types:
                facts.types = types
                facts.by_name = None if types is None else {it.name: it for it in types}
            if pool is None and types is None:
                del self._pools[name]
            dirty |= {key[1] for key in self._state.nodes_of_pool(name)}
        return dirty

    def _judge(self, name: str, pdbs: PdbLimits, now: datetime) -> NodeVerdict | None:
        state = self._state
        node = state.get(Node, ("", name))
        if node is None:
            return None
        claim = state.claim_for(node)
        facts = self._pools.get(node.metadata.labels.get(NODEPOOL_LABEL, ""))
        pods = sorted(state.pods_on(name).values(), key=_pod_order)
        nominations = self._nominations
        return judge(
            node,
            claim,
            pool=facts.pool if facts is not None else None,
            instance_types=facts.by_name if facts is not None else None,
            pods=pods,
            pdbs=pdbs,
            now=now,
            nominated_until=(
                nominations.until(node.spec.provider_id, now) if nominations is not None else None
            ),
        )

    def _store(self, name: str, kept: NodeVerdict | None, verdict: NodeVerdict | None) -> None:
        if kept is not None:
            pool = kept.pool_name
            if kept.counted:
                self._counted[pool] -= 1
            if kept.unavailable:
                self._unavailable[pool] -= 1
        self._expiring.forget(name)
        self._marked.discard(name)
        if verdict is None:
            self._verdicts.pop(name, None)
        else:
            self._verdicts[name] = verdict
            pool = verdict.pool_name
            if verdict.counted:
                self._counted[pool] += 1
            if verdict.unavailable:
                self._unavailable[pool] += 1
            if verdict.expires is not None:
                self._expiring.add_at(name, verdict.expires)
            if verdict.marked:
                self._marked.add(name)
        for view in self._classes.values():
            view.update(name, verdict)

    # -- what the loop reads ----------------------------------------------------------------------

    def candidates(self, disruption_class: str, queued: Collection[str]) -> list[Candidate]:
        """Every node that may be disrupted now, before any method's own filter."""
        return _unqueued(self._classes[disruption_class].listed(), queued)

    def eligible(self, method: int, queued: Collection[str]) -> list[Candidate]:
        """The candidates method number ``method`` would consider."""
        return _unqueued(self._methods[method].listed(), queued)

    def publish_blocked(
        self, disruption_class: str, now: datetime, queued: Collection[str], events: EventRecorder
    ) -> None:
        """``DisruptionBlocked`` on nodes that are not candidates for a reason a user can act
        on (on the Node and its NodeClaim, in Karpenter's words)."""
        self._classes[disruption_class].events.publish(
            now, self._objects, self._queued(queued), _publisher(events)
        )

    def publish_unconsolidatable(
        self, method: int, now: datetime, queued: Collection[str], events: EventRecorder
    ) -> None:
        """``Unconsolidatable`` on candidates method number ``method`` turns down for a reason a
        user can act on."""
        self._methods[method].events.publish(
            now, self._objects, self._queued(queued), _publisher(events)
        )

    def budget_counts(self, queued: Collection[str]) -> tuple[Mapping[str, int], Counter[str]]:
        """Per NodePool label: nodes its budgets count, and how many of them are unavailable
        or already queued for disruption."""
        disrupting = Counter(self._unavailable)
        for provider_id in queued:
            node = self._state.node_by_provider_id(provider_id)
            verdict = self._verdicts.get(node.name) if node is not None else None
            if verdict is not None and verdict.counted and not verdict.unavailable:
                disrupting[verdict.pool_name] += 1
        return self._counted, disrupting

    def next_due(self, now: datetime) -> datetime | None:
        """When time alone next changes what the loop reads or publishes: a do-not-disrupt
        duration running out, or an event due to be published again (None: never)."""
        queues = [
            self._expiring,
            *(view.events.due for view in self._classes.values()),
            *(view.events.due for view in self._methods),
        ]
        dues = [due for queue in queues if (due := queue.next_due()) is not None]
        # A key ready now (``datetime.min``) comes with the next pass.
        return min((now if due == datetime.min else due for due in dues), default=None)

    def expiring_due(self, now: datetime) -> bool:
        """Whether a do-not-disrupt duration has run out since the last refresh."""
        due = self._expiring.next_due()
        return due is not None and (due == datetime.min or due <= now)

    def marked(self) -> list[str]:
        """Nodes tainted ``karpenter.sh/disrupted`` or whose NodeClaim is marked, by name."""
        return sorted(self._marked)

    def _objects(self, name: str) -> Sequence[KubeObject]:
        verdict = self._verdicts[name]
        return [verdict.node] if verdict.claim is None else [verdict.node, verdict.claim]

    def _queued(self, queued: Collection[str]) -> Callable[[str], bool]:
        def held(name: str) -> bool:
            return self._verdicts[name].node.spec.provider_id in queued

        return held


def _publisher(events: EventRecorder) -> Publisher:
    def publish(
        obj: KubeObject, reason: str, message: str, dedupe: timedelta | None
    ) -> datetime | None:
        return events.publish(obj, reason, message, dedupe=dedupe, dedupe_on=(identity(obj),))

    return publish


def _unqueued(candidates: list[Candidate], queued: Collection[str]) -> list[Candidate]:
    """A new list: the caller may keep or change it."""
    if not queued:
        return list(candidates)
    return [c for c in candidates if c.node.spec.provider_id not in queued]


def _same(kept: NodeVerdict | None, fresh: NodeVerdict | None) -> bool:
    if kept is None or fresh is None:
        return kept is fresh
    return kept.same_as(fresh)


def _pod_order(pod: Pod) -> tuple[str, str]:
    return (pod.metadata.namespace or "", pod.metadata.name)
