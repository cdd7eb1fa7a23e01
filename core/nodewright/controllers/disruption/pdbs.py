"""PodDisruptionBudgets as the disruption controller reads them (Karpenter's ``pdb.Limits``).

A node whose pods could not all be evicted is not a candidate: a pod under a budget that
allows no disruption now, or under more than one budget (the Eviction API refuses those).
``status.disruptionsAllowed`` is used when a controller maintains it; otherwise (the
embedded cluster) it is worked out from the pods the way kube-controller-manager does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.api.apps import PodDisruptionBudget, ReplicaSet, StatefulSet
from nodewright.api.core import Pod
from nodewright.cluster.selectors import InvalidSelectorError, label_selector_matches
from nodewright.cluster.state import ClusterState
from nodewright.controllers.state import is_terminal


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
        limits = []
        for budget in state.sorted(PodDisruptionBudget):
            limit = PdbLimit(budget, 0, _fully_blocking(budget))
            if _maintained(budget):
                allowed = budget.status.disruptions_allowed
            else:
                selected = [
                    p
                    for p in sorted(
                        state.in_namespace(Pod, budget.namespace).values(),
                        key=lambda p: p.metadata.name,
                    )
                    if limit.selects(p) and not is_terminal(p)
                ]
                allowed = _allowed(budget, selected, state)
            limits.append(PdbLimit(budget, allowed, limit.fully_blocking))
        return cls(limits)

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


def _maintained(budget: PodDisruptionBudget) -> bool:
    status = budget.status
    return bool(status.expected_pods or status.current_healthy or status.disruptions_allowed)


def _fully_blocking(budget: PodDisruptionBudget) -> bool:
    spec = budget.spec
    if spec.max_unavailable is not None:
        return str(spec.max_unavailable).strip() in ("0", "0%")
    return spec.min_available is not None and str(spec.min_available).strip() == "100%"


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, int):
        return value
    text = value.strip()
    try:
        if text.endswith("%"):
            return math.ceil(int(text[:-1]) * total / 100)
        return int(text)
    except ValueError:
        return total  # an unreadable budget protects everything


def _scale_of(state: ClusterState, kind: str, namespace: str, name: str) -> int | None:
    """The replicas of a pod's ReplicaSet or StatefulSet (what the budget expects)."""
    if kind == "ReplicaSet":
        rs = state.get(ReplicaSet, (namespace, name))
        return None if rs is None else rs.spec.replicas
    if kind == "StatefulSet":
        sts = state.get(StatefulSet, (namespace, name))
        return None if sts is None else sts.spec.replicas
    return None


def _allowed(budget: PodDisruptionBudget, pods: Sequence[Pod], state: ClusterState) -> int:
    healthy = sum(1 for p in pods if p.status.phase == "Running" and not p.deleting)
    expected = 0
    owners: set[tuple[str, str, str]] = set()
    for pod in pods:
        owner = next((ref for ref in pod.metadata.owner_references if ref.controller), None)
        key = (owner.kind, pod.namespace, owner.name) if owner else None
        scale = None if key is None else _scale_of(state, *key)
        if key is None or scale is None:
            expected += 0 if pod.deleting else 1
        elif key not in owners:
            owners.add(key)
            expected += scale
    spec = budget.spec
    if spec.max_unavailable is not None:
        desired = max(0, expected - _scaled(spec.max_unavailable, expected))
    elif spec.min_available is not None:
        desired = _scaled(spec.min_available, expected)
    else:
        desired = expected
    return max(0, healthy - desired)
