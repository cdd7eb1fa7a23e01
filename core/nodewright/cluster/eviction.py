"""The Eviction subresource's PodDisruptionBudget check, as the in-memory API server makes
it: a running pod may be evicted only while the one budget that selects it allows one more
disruption (healthy pods above the desired count); more than one budget is refused."""

from __future__ import annotations

from nodewright.api.apps import PodDisruptionBudget
from nodewright.api.core import Pod
from nodewright.cluster import EvictionBlockedError, InvalidError
from nodewright.cluster.budgetallowance import disruptions_allowed
from nodewright.cluster.budgetcounts import BudgetCount, BudgetCounts, count_selected, countable
from nodewright.cluster.selectors import label_selector_matches
from nodewright.cluster.state import ClusterState


class EvictionCheck:
    """The API server's eviction check over one cluster state, with each budget's pods
    counted from what changed since the last question (a drain asks about every pod of a
    node, and asks again while a budget holds it back; each eviction changes one pod)."""

    def __init__(self, state: ClusterState) -> None:
        self._state = state
        self._counts = BudgetCounts(state)

    def __call__(self, pod: Pod) -> None:
        """Raise :class:`~nodewright.cluster.EvictionBlockedError` when the API server would
        refuse to evict ``pod``."""
        # The API server lets pods that are not running (or already going) leave freely.
        if pod.deleting or pod.status.phase in ("Pending", "Succeeded", "Failed"):
            return
        budgets = [
            pdb
            for pdb in self._state.sorted(PodDisruptionBudget, pod.namespace)
            if label_selector_matches(pdb.spec.selector, pod.metadata.labels)
        ]
        if len(budgets) > 1:
            names = ", ".join(pdb.name for pdb in budgets)
            raise EvictionBlockedError(
                f"pod {pod.key} has more than one PodDisruptionBudget ({names}), "
                "which the eviction subresource does not support"
            )
        if budgets and self._disruptions_allowed(budgets[0]) <= 0:
            raise EvictionBlockedError(
                f"Cannot evict pod {pod.key} as it would violate the pod's disruption "
                f"budget {budgets[0].name}."
            )

    def catch_up(self) -> None:
        """Count the pods that changed since the last eviction now (see
        :meth:`~nodewright.cluster.budgetcounts.BudgetCounts.catch_up`)."""
        self._counts.catch_up()

    def _disruptions_allowed(self, pdb: PodDisruptionBudget) -> int:
        if not countable(pdb.spec.selector):
            return _disruptions_allowed(self._state, pdb)
        return _allowed(pdb, self._counts.count(pdb))


def _disruptions_allowed(state: ClusterState, pdb: PodDisruptionBudget) -> int:
    """How many more pods the budget lets go, counting its namespace's pods now."""
    selector = pdb.spec.selector
    count = count_selected(
        state, pdb.namespace, lambda pod: label_selector_matches(selector, pod.metadata.labels)
    )
    return _allowed(pdb, count)


def _allowed(pdb: PodDisruptionBudget, count: BudgetCount) -> int:
    """Healthy pods minus the desired count; a value that is neither an int nor a percentage
    is refused, as the API server refuses such a budget."""
    try:
        return disruptions_allowed(pdb.spec, count)
    except ValueError as error:
        raise InvalidError(str(error)) from error
