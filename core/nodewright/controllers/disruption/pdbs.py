"""PodDisruptionBudgets as the disruption controller reads them (Karpenter's ``pdb.Limits``).

A node whose pods could not all be evicted is not a candidate: a pod under a budget that
allows no disruption now, or under more than one budget (the Eviction API refuses those).
``status.disruptionsAllowed`` is used when a controller maintains it; otherwise (the
embedded cluster) it is worked out from the pods the way kube-controller-manager does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.api.apps import PodDisruptionBudget, ReplicaSet, StatefulSet
from nodewright.api.core import Pod
from nodewright.cluster.budgetallowance import disruptions_allowed
from nodewright.cluster.budgetcounts import BudgetCount, BudgetCounts, count_selected, countable
from nodewright.cluster.selectors import InvalidSelectorError, label_selector_matches
from nodewright.cluster.state import ClusterState


@dataclass(frozen=True)
class PdbLimit:
    budget: PodDisruptionBudget
    #: Evictions the budget allows now.
    allowed: int
    #: ``maxUnavailable: 0`` or ``minAvailable: 100%``: nothing under it will ever be evicted.
    fully_blocking: bool

    @property
    def key(self) -> str:
        return f"{self.budget.namespace}/{self.budget.name}"

    def selects(self, pod: Pod) -> bool:
        if pod.namespace != self.budget.namespace:
            return False
        try:
            return label_selector_matches(self.budget.spec.selector, pod.metadata.labels)
        except InvalidSelectorError:
            return False


class PdbLimits:
    """Every PodDisruptionBudget in the cluster, with what it allows now."""

    def __init__(self, limits: Sequence[PdbLimit]) -> None:
        self._limits = list(limits)
        self._by_namespace: dict[str, list[PdbLimit]] = {}
        for limit in self._limits:
            self._by_namespace.setdefault(limit.budget.namespace, []).append(limit)

    @classmethod
    def load(cls, state: ClusterState) -> PdbLimits:
        namespaces = sorted({key[0] for key in state.objects(PodDisruptionBudget)})
        return cls([limit for ns in namespaces for limit in namespace_limits(state, ns)])

    def matching(self, pod: Pod) -> list[PdbLimit]:
        return [limit for limit in self._by_namespace.get(pod.namespace, ()) if limit.selects(pod)]

    def blocking(self, pods: Sequence[Pod]) -> list[str] | None:
        """Budgets that stop one of ``pods`` from being evicted now, or None.

        More than one budget on a pod blocks (all are named); one allowing nothing blocks.
        """
        for pod in pods:
            matching = self.matching(pod)
            if len(matching) > 1:
                return [limit.key for limit in matching]
            if matching and matching[0].allowed <= 0:
                return [matching[0].key]
        return None

    def fully_blocked(self, pod: Pod) -> bool:
        matching = self.matching(pod)
        return len(matching) > 1 or any(limit.fully_blocking for limit in matching)

    def facts(self) -> list[tuple[str, object, bool, bool]]:
        """What disruption decisions read from the budgets: each one's selector, whether it
        allows an eviction now and whether it never will (compared, not hashed)."""
        return [
            (limit.key, limit.budget.spec.selector, limit.allowed > 0, limit.fully_blocking)
            for limit in self._limits
        ]


def namespace_limits(
    state: ClusterState, namespace: str, counts: BudgetCounts | None = None
) -> list[PdbLimit]:
    """The budgets of one namespace, by name, with what each allows now (from ``counts``
    where it can keep a budget's count, else from the namespace's pods)."""
    limits = []
    budgets = state.in_namespace(PodDisruptionBudget, namespace)
    for key in sorted(budgets):
        budget = budgets[key]
        limit = PdbLimit(budget, 0, _fully_blocking(budget))
        if _maintained(budget):
            allowed = budget.status.disruptions_allowed
        elif counts is not None and countable(budget.spec.selector):
            allowed = _allowed(budget, counts.count(budget))
        else:
            allowed = _allowed(budget, count_selected(state, namespace, limit.selects))
        limits.append(PdbLimit(budget, allowed, limit.fully_blocking))
    return limits


class PdbTracker:
    """:class:`PdbLimits` kept current from changes.

    A namespace's budgets are worked out again only when a budget there changed or, while one
    of them has no maintained status, when a pod, ReplicaSet or StatefulSet there changed.
    """

    def __init__(self, state: ClusterState) -> None:
        self._state = state
        self._changes = state.feed(PodDisruptionBudget, Pod, ReplicaSet, StatefulSet)
        self._counts = BudgetCounts(state)
        self._by_namespace: dict[str, list[PdbLimit]] = {}
        #: Namespaces with a budget whose allowance is worked out from the pods.
        self._counting: set[str] = set()
        self._limits: PdbLimits | None = None
        self._full = True
        self._primed = False

    @property
    def limits(self) -> PdbLimits:
        if self._limits is None:
            self._limits = PdbLimits(
                [limit for ns in sorted(self._by_namespace) for limit in self._by_namespace[ns]]
            )
        return self._limits

    def resync(self) -> None:
        """Work every namespace out again on the next refresh."""
        self._full = True

    def refresh(self) -> tuple[set[str], set[str]]:
        """Bring the limits up to date.

        Returns the namespaces where which pods a budget selects or whether it allows an
        eviction changed (what node verdicts depend on), and the namespaces of those that a
        full refresh found different from what changes had kept (none, if nothing was
        missed).
        """
        self._counts.catch_up()
        dirty: set[str] = set()
        for change in self._changes.drain():
            namespace = change.key[0]
            if change.kind is PodDisruptionBudget or namespace in self._counting:
                dirty.add(namespace)
        full, self._full = self._full, False
        if full:
            self._counts.reset()
            known = {key[0] for key in self._state.objects(PodDisruptionBudget)}
            everywhere = known | set(self._by_namespace)
        else:
            everywhere = dirty
        changed: set[str] = set()
        missed: set[str] = set()
        for namespace in everywhere:
            limits = namespace_limits(self._state, namespace, self._counts)
            before = self._by_namespace.get(namespace, [])
            if _verdict_facts(limits) != _verdict_facts(before):
                changed.add(namespace)
            if self._primed and namespace not in dirty and _facts(limits) != _facts(before):
                missed.add(namespace)
            if limits:
                self._by_namespace[namespace] = limits
            else:
                self._by_namespace.pop(namespace, None)
            if any(not _maintained(limit.budget) for limit in limits):
                self._counting.add(namespace)
            else:
                self._counting.discard(namespace)
            self._limits = None
        self._primed = True
        return changed, missed


def _verdict_facts(limits: Sequence[PdbLimit]) -> list[tuple[str, object, bool]]:
    """What decides whether a budget stops a pod's eviction: whom it selects, and whether it
    allows one now."""
    return [(limit.key, limit.budget.spec.selector, limit.allowed > 0) for limit in limits]


def _facts(limits: Sequence[PdbLimit]) -> list[tuple[PodDisruptionBudget, int, bool]]:
    return [(limit.budget, limit.allowed, limit.fully_blocking) for limit in limits]


def _maintained(budget: PodDisruptionBudget) -> bool:
    status = budget.status
    return bool(status.expected_pods or status.current_healthy or status.disruptions_allowed)


def _fully_blocking(budget: PodDisruptionBudget) -> bool:
    spec = budget.spec
    if spec.max_unavailable is not None:
        return str(spec.max_unavailable).strip() in ("0", "0%")
    return spec.min_available is not None and str(spec.min_available).strip() == "100%"


def _allowed(budget: PodDisruptionBudget, count: BudgetCount) -> int:
    """Evictions the budget allows now: never below 0, and none when a value is neither an
    int nor a percentage (an unreadable budget protects everything)."""
    try:
        return max(0, disruptions_allowed(budget.spec, count))
    except ValueError:
        return 0
