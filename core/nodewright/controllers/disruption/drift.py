"""Drift: drifted nodes are replaced one at a time (Karpenter's ``drift.go``)."""

from __future__ import annotations

from datetime import datetime

from nodewright.api.karpenter import CONDITION_DRIFTED
from nodewright.api.meta import find_condition, is_true
from nodewright.controllers.disruption.candidates import EVENTUAL, REASON_DRIFTED, Candidate
from nodewright.controllers.disruption.methods import Command, Context, Eligibility, sentence


class Drift:
    """Replace drifted nodes one at a time, oldest drift first, empty nodes before others."""

    reason = REASON_DRIFTED
    disruption_class = EVENTUAL
    validated = False

    def word(self, candidate: Candidate | None) -> str:
        return "Drift"

    def eligibility(self, candidate: Candidate) -> Eligibility:
        # Static pools' drifted nodes are StaticDrift's.
        return Eligibility(
            candidate.pool.spec.replicas is None
            and is_true(candidate.claim.status.conditions, CONDITION_DRIFTED)
        )

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        def drifted_at(candidate: Candidate) -> datetime:
            condition = find_condition(candidate.claim.status.conditions, CONDITION_DRIFTED)
            return (condition.last_transition_time if condition else None) or context.now

        ordered = sorted(candidates, key=lambda c: (bool(c.reschedulable), drifted_at(c), c.name))
        for candidate in ordered:
            if budgets.get(candidate.pool.name, 0) <= 0:
                continue
            rescheduling = context.simulate([candidate])
            if not rescheduling.all_scheduled():
                context.blocked(candidate, sentence(rescheduling.error_text()))
                continue
            return Command(
                self,
                [candidate],
                list(rescheduling.result.new_node_claims),
                context.destinations(rescheduling),
            )
        return None
