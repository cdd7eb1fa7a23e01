"""Emptiness: empty nodes go, all the budgets allow in one command (Karpenter's
``emptiness.go``)."""

from __future__ import annotations

from collections.abc import Callable

from nodewright.api.karpenter import CONDITION_CONSOLIDATABLE
from nodewright.api.meta import is_true
from nodewright.controllers.disruption.candidates import GRACEFUL, REASON_EMPTY, Candidate
from nodewright.controllers.disruption.memo import Memo
from nodewright.controllers.disruption.methods import (
    INELIGIBLE,
    WHEN_EMPTY,
    Command,
    Context,
    Eligibility,
    consolidate_after,
    consolidation_disabled,
)


class Emptiness:
    """Delete every empty, consolidatable node the budgets allow, in one command."""

    reason = REASON_EMPTY
    disruption_class = GRACEFUL
    validated = True

    def __init__(self, holds_buffer: Callable[[str], bool] | None = None) -> None:
        self.memo = Memo()
        #: Whether a node holds CapacityBuffer virtual pods: such a node is not empty.
        self.holds_buffer = holds_buffer

    def _holds_buffer(self, candidate: Candidate) -> bool:
        check = self.holds_buffer
        return check is not None and (check(candidate.name) or check(candidate.claim.name))

    def word(self, candidate: Candidate | None) -> str:
        # Karpenter's WhenEmpty pools removed empty nodes through "emptiness"; pools that
        # consolidate underutilized nodes remove them as part of consolidation.
        if (
            candidate is not None
            and candidate.pool.spec.disruption.consolidation_policy == WHEN_EMPTY
        ):
            return "Emptiness"
        return "Consolidation"

    def eligibility(self, candidate: Candidate) -> Eligibility:
        if candidate.pool.spec.replicas is not None:
            return INELIGIBLE
        if consolidate_after(candidate) is None:
            return consolidation_disabled(candidate)
        return Eligibility(
            candidate.is_empty()
            and is_true(candidate.claim.status.conditions, CONDITION_CONSOLIDATABLE)
        )

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        if self.memo.fresh(context):
            return None
        chosen: list[Candidate] = []
        constrained = False
        for candidate in sorted(candidates, key=lambda c: -c.savings_ratio()):
            if not candidate.is_empty() or self._holds_buffer(candidate):
                continue
            if budgets.get(candidate.pool.name, 0) <= 0:
                constrained = True
                continue
            chosen.append(candidate)
            budgets[candidate.pool.name] -= 1
        if not chosen:
            if not constrained:
                self.memo.mark(context)
            return None
        return Command(self, chosen)
