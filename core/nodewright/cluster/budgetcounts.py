"""What a PodDisruptionBudget counts, kept from changes: the pods it selects that have not
finished, how many of them are healthy, and how many it expects.

A budget without a maintained status is worked out from its pods, as kube-controller-manager
does: healthy pods are Running and not terminating; the expected count is the scale of each
pod's controlling ReplicaSet or StatefulSet, counted once per controller, and one for every
other pod that is not terminating. The API server's eviction check and the disruption
controller both ask for it; counting a namespace's pods on each question made the cost of a
drain follow the size of the cluster. :class:`BudgetCounts` counts a budget's pods once, when
it is first asked about, and from then on only the pods that changed; the scales are read when
asked (one lookup per controller).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from nodewright.api.apps import PodDisruptionBudget, ReplicaSet, StatefulSet
from nodewright.api.core import LABEL_SELECTOR_OPERATORS, LabelSelector, Pod
from nodewright.cluster.selectors import label_selector_matches
from nodewright.cluster.state import ChangeFeed, ClusterState, Key, is_terminal

#: A pod's controlling owner: (kind, name), in the pod's namespace.
Owner = tuple[str, str]


@dataclass(frozen=True)
class BudgetCount:
    """What one budget counts now."""

    #: Selected pods that are Running and not terminating.
    healthy: int
    #: Pods the budget expects: the scale of each controller, one per other live pod.
    expected: int


@dataclass
class _Member:
    owner: Owner | None
    deleting: bool
    healthy: bool


@dataclass
class _Tally:
    """One budget's selected pods, with running totals."""

    selector: LabelSelector | None
    members: dict[Key, _Member] = field(default_factory=dict)
    healthy: int = 0
    #: Controller -> [selected pods, those not terminating].
    owners: dict[Owner, list[int]] = field(default_factory=dict)
    #: Selected pods without a controller that are not terminating.
    ownerless_live: int = 0

    def add(self, key: Key, pod: Pod) -> None:
        owner_ref = next((ref for ref in pod.metadata.owner_references if ref.controller), None)
        owner = (owner_ref.kind, owner_ref.name) if owner_ref is not None else None
        member = _Member(owner, pod.deleting, pod.status.phase == "Running" and not pod.deleting)
        self.members[key] = member
        self._count(member, 1)

    def remove(self, key: Key) -> None:
        member = self.members.pop(key, None)
        if member is not None:
            self._count(member, -1)

    def _count(self, member: _Member, sign: int) -> None:
        live = 0 if member.deleting else sign
        if member.healthy:
            self.healthy += sign
        if member.owner is None:
            self.ownerless_live += live
            return
        counts = self.owners.get(member.owner)
        if counts is None:
            counts = self.owners[member.owner] = [0, 0]
        counts[0] += sign
        counts[1] += live
        if counts[0] == 0:
            del self.owners[member.owner]


def countable(selector: LabelSelector | None) -> bool:
    """Whether a budget's selector can be kept: one with an operator the API does not know
    fails (or not) pod by pod, depending on their labels, and is counted the long way."""
    return selector is None or all(
        requirement.operator in LABEL_SELECTOR_OPERATORS
        for requirement in selector.match_expressions
    )


class BudgetCounts:
    """Every asked-about budget's count over one cluster state, kept current from changes to
    pods and budgets; the cost of a question follows what changed since the last one."""

    def __init__(self, state: ClusterState) -> None:
        self._state = state
        #: Changes to pods and budgets, while a budget is kept (None: none is).
        self._changes: ChangeFeed | None = None
        self._tallies: dict[Key, _Tally] = {}
        #: Namespace -> keys of its kept budgets.
        self._by_namespace: dict[str, set[Key]] = {}

    def count(self, budget: PodDisruptionBudget) -> BudgetCount:
        """What ``budget`` (as the state holds it now) counts; its selector must be
        :func:`countable`."""
        self.catch_up()
        key = (budget.namespace, budget.name)
        tally = self._tallies.get(key)
        if tally is None or tally.selector != budget.spec.selector:
            tally = self._build(key, budget)
        return BudgetCount(tally.healthy, _expected(self._state, budget.namespace, tally))

    def reset(self) -> None:
        """Count every budget from its pods again when next asked."""
        self._tallies.clear()
        self._by_namespace.clear()
        self._close()

    def catch_up(self) -> None:
        """Count the changes since the last question now. Its owner calls this on each of its
        passes, asked or not: changes left in a feed keep every old version of the pods."""
        if self._changes is None:
            return
        for change in self._changes.drain():
            namespace = change.key[0]
            keys = self._by_namespace.get(namespace)
            if not keys:
                continue
            if change.kind is PodDisruptionBudget:
                if change.key in keys:
                    keys.discard(change.key)
                    del self._tallies[change.key]
                    if not self._tallies:
                        self._close()
                        return
                continue
            pod = change.new
            for key in keys:
                tally = self._tallies[key]
                tally.remove(change.key)
                if isinstance(pod, Pod) and _selects(tally.selector, pod):
                    tally.add(change.key, pod)

    def _build(self, key: Key, budget: PodDisruptionBudget) -> _Tally:
        if self._changes is None:
            self._changes = self._state.feed(Pod, PodDisruptionBudget)
        selector = budget.spec.selector
        tally = _Tally(selector)
        for pod_key, pod in self._state.in_namespace(Pod, budget.namespace).items():
            if _selects(selector, pod):
                tally.add(pod_key, pod)
        self._tallies[key] = tally
        self._by_namespace.setdefault(budget.namespace, set()).add(key)
        return tally

    def _close(self) -> None:
        if self._changes is not None:
            self._state.close(self._changes)
            self._changes = None


def count_selected(
    state: ClusterState, namespace: str, selects: Callable[[Pod], bool]
) -> BudgetCount:
    """What a budget of ``namespace`` counts when it selects the pods ``selects`` accepts
    (counted now, in full; a finished pod is never counted, and ``selects`` is asked first)."""
    tally = _Tally(None)
    for key, pod in state.in_namespace(Pod, namespace).items():
        if selects(pod) and not is_terminal(pod):
            tally.add(key, pod)
    return BudgetCount(tally.healthy, _expected(state, namespace, tally))


def _expected(state: ClusterState, namespace: str, tally: _Tally) -> int:
    expected = tally.ownerless_live
    for (kind, name), (_, live) in tally.owners.items():
        scale = controller_scale(state, kind, namespace, name)
        expected += live if scale is None else scale
    return expected


def _selects(selector: LabelSelector | None, pod: Pod) -> bool:
    return not is_terminal(pod) and label_selector_matches(selector, pod.metadata.labels)


def controller_scale(state: ClusterState, kind: str, namespace: str, name: str) -> int | None:
    """The replicas of a pod's ReplicaSet or StatefulSet (what a budget expects of it); None
    for another kind or one that is gone."""
    if kind == "ReplicaSet":
        replica_set = state.get(ReplicaSet, (namespace, name))
        return None if replica_set is None else replica_set.spec.replicas
    if kind == "StatefulSet":
        stateful_set = state.get(StatefulSet, (namespace, name))
        return None if stateful_set is None else stateful_set.spec.replicas
    return None
