"""What both consolidation methods share (Karpenter's ``consolidation.go``): which nodes they
consider, and turning a set of candidates into a delete, a replacement by one cheaper
NodeClaim (spot to spot under its own rules), or nothing."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.karpenter import CONDITION_CONSOLIDATABLE
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    INSTANCE_TYPE_LABEL,
)
from nodewright.api.meta import is_true
from nodewright.controllers.disruption.candidates import GRACEFUL, REASON_UNDERUTILIZED, Candidate
from nodewright.controllers.disruption.memo import Memo
from nodewright.controllers.disruption.methods import (
    INELIGIBLE,
    WHEN_EMPTY,
    Command,
    Context,
    Eligibility,
    consolidate_after,
    consolidation_disabled,
    sentence,
)
from nodewright.controllers.disruption.pricing import (
    cheaper_than,
    min_values_needed,
    order_by_price,
    require_capacity_type,
    satisfies_min_values,
    with_types,
)
from nodewright.controllers.disruption.rescheduling import Rescheduling
from nodewright.scheduling.model import NewNodeClaim

#: Spot-to-spot replacement needs this many cheaper spot types, and launches only that many.
SPOT_TO_SPOT_MIN_TYPES = 15


class Consolidation:
    reason = REASON_UNDERUTILIZED
    disruption_class = GRACEFUL
    validated = True

    def __init__(self) -> None:
        self.memo = Memo()

    def word(self, candidate: Candidate | None) -> str:
        return "Consolidation"

    def eligibility(self, candidate: Candidate) -> Eligibility:
        if candidate.pool.spec.replicas is not None:
            return INELIGIBLE
        labels = candidate.node.metadata.labels
        if candidate.instance_type is None:
            return Eligibility(
                False, f'Instance Type "{labels.get(INSTANCE_TYPE_LABEL, "")}" not found'
            )
        for key in (CAPACITY_TYPE_LABEL, "topology.kubernetes.io/zone"):
            if key not in labels:
                return Eligibility(False, f'Node does not have label "{key}"')
        if consolidate_after(candidate) is None:
            return consolidation_disabled(candidate)
        if candidate.is_empty():
            return INELIGIBLE
        if candidate.pool.spec.disruption.consolidation_policy == WHEN_EMPTY:
            return Eligibility(
                False,
                f'NodePool "{candidate.pool.name}" has consolidation policy WhenEmpty, '
                "but node is not empty",
            )
        return Eligibility(is_true(candidate.claim.status.conditions, CONDITION_CONSOLIDATABLE))

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        raise NotImplementedError

    @staticmethod
    def order(candidates: Sequence[Candidate]) -> list[Candidate]:
        return sorted(candidates, key=lambda c: (-c.savings_ratio(), c.name))

    def consolidation(self, context: Context, candidates: Sequence[Candidate]) -> Command | None:
        """Karpenter's ``computeConsolidation``: delete, replace with one cheaper, or nothing.

        Only a single candidate's "no" is told (an ``Unconsolidatable`` event quoting the
        simulation), and only while the recorder would record it: other trials want just the
        decision, and their simulation stops as soon as it is "no"."""
        single = candidates[0] if len(candidates) == 1 else None
        decide = single is None or not context.unconsolidatable_recorded(single)
        rescheduling = context.simulate(candidates, decide)
        if rescheduling.result.decided_no:
            if single is not None:
                context.unconsolidatable_dropped()
            return None
        command = self._decide(context, candidates, rescheduling)
        if command is not None:
            command.destinations = context.destinations(rescheduling)
        return command

    def _decide(
        self, context: Context, candidates: Sequence[Candidate], rescheduling: Rescheduling
    ) -> Command | None:
        single = candidates[0] if len(candidates) == 1 else None
        if not rescheduling.all_scheduled():
            if single is not None:
                context.unconsolidatable(single, sentence(rescheduling.error_text()))
            return None
        new = rescheduling.result.new_node_claims
        if not new:
            return Command(self, list(candidates))
        if len(new) != 1:
            if single is not None:
                context.unconsolidatable(
                    single, f"Can't remove without creating {len(new)} candidates"
                )
            return None
        price = sum(c.price for c in candidates)
        replacement = order_by_price(new[0])
        capacity = replacement.requirements.get(CAPACITY_TYPE_LABEL)
        all_spot = all(c.capacity_type == CAPACITY_TYPE_SPOT for c in candidates)
        if all_spot and (capacity is None or capacity.has(CAPACITY_TYPE_SPOT)):
            return self._spot_to_spot(context, candidates, replacement, price)
        cheaper = cheaper_than(replacement, price)
        if cheaper is None:
            if single is not None:
                context.unconsolidatable(single, "Can't replace with a cheaper node")
            return None
        capacity = cheaper.requirements.get(CAPACITY_TYPE_LABEL)
        if capacity is None or (
            capacity.has(CAPACITY_TYPE_SPOT) and capacity.has(CAPACITY_TYPE_ON_DEMAND)
        ):
            # Priced assuming spot: never let an on-demand launch make it dearer. When no
            # option has spot capacity now (an offering that just failed to launch, say),
            # the node is left alone rather than replaced by a launch bound to fail, which
            # would be tried again at once, forever.
            cheaper = require_capacity_type(cheaper, CAPACITY_TYPE_SPOT)
            if not cheaper.instance_types or not satisfies_min_values(cheaper):
                if single is not None:
                    context.unconsolidatable(single, "Can't replace with a cheaper node")
                return None
        command = Command(self, list(candidates), [cheaper])
        context.candidate_events(command)
        return command

    def _spot_to_spot(
        self,
        context: Context,
        candidates: Sequence[Candidate],
        replacement: NewNodeClaim,
        price: float,
    ) -> Command | None:
        single = candidates[0] if len(candidates) == 1 else None
        if not context.spot_to_spot:
            if single is not None:
                context.unconsolidatable(
                    single,
                    "SpotToSpotConsolidation is disabled, can't replace a spot node with a "
                    "spot node",
                )
            return None
        spot = require_capacity_type(replacement, CAPACITY_TYPE_SPOT)
        cheaper = cheaper_than(spot, price)
        if cheaper is None:
            if single is not None:
                context.unconsolidatable(single, "Can't replace with a cheaper node")
            return None
        if single is None:
            command = Command(self, list(candidates), [cheaper])
            context.candidate_events(command)
            return command
        if len(cheaper.instance_types) < SPOT_TO_SPOT_MIN_TYPES:
            context.unconsolidatable(
                single,
                f"SpotToSpotConsolidation requires {SPOT_TO_SPOT_MIN_TYPES} cheaper instance "
                "type options than the current candidate to consolidate, got "
                f"{len(cheaper.instance_types)}",
            )
            return None
        keep = max(SPOT_TO_SPOT_MIN_TYPES, min_values_needed(cheaper))
        command = Command(
            self, list(candidates), [with_types(cheaper, cheaper.instance_types[:keep])]
        )
        context.candidate_events(command)
        return command
