"""Single-node consolidation: candidates one by one, NodePools interleaved, until one can be
removed or replaced (Karpenter's ``singlenodeconsolidation.go``)."""

from __future__ import annotations

from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.consolidation import Consolidation
from nodewright.controllers.disruption.methods import Command, Context


class SingleNodeConsolidation(Consolidation):
    """Try candidates one by one (NodePools interleaved); the first that works wins."""

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        if self.memo.fresh(context):
            return None
        ordered = _interleave(self.order(candidates))
        tried = [c for c in ordered if budgets.get(c.pool.name, 0) > 0]
        constrained = len(tried) < len(ordered)
        if constrained and self.memo.fresh(context, tried):
            return None
        for candidate in tried:
            # A Balanced pool's node whose outright deletion would not pass is not tried.
            if not context.balanced.can_pass(candidate):
                continue
            command = self.consolidation(context, [candidate])
            if command is not None and context.balanced.approve(
                command.candidates, command.savings()
            ):
                return command
        self.memo.mark(context, tried if constrained else None)
        return None


def _interleave(candidates: list[Candidate]) -> list[Candidate]:
    """Round-robin across NodePools, keeping each pool's own order."""
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_pool.setdefault(candidate.pool.name, []).append(candidate)
    result: list[Candidate] = []
    longest = max((len(v) for v in by_pool.values()), default=0)
    for index in range(longest):
        for pool in sorted(by_pool):
            if index < len(by_pool[pool]):
                result.append(by_pool[pool][index])
    return result
