"""Single-node consolidation: candidates one by one, NodePools interleaved, until one can be
removed or replaced (Karpenter's ``singlenodeconsolidation.go``)."""

from __future__ import annotations

import logging
from collections.abc import Set

from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.consolidation import Consolidation
from nodewright.controllers.disruption.methods import Command, Context
from nodewright.controllers.disruption.timeout import SINGLE_NODE_TIMEOUT, Deadline
from nodewright.logfields import fields

log = logging.getLogger("nodewright.disruption")


class SingleNodeConsolidation(Consolidation):
    """Try candidates one by one (NodePools interleaved); the first that works wins."""

    def __init__(self) -> None:
        super().__init__()
        #: NodePools a search that ran out of time never reached: they go first next time.
        self.unseen_pools: frozenset[str] = frozenset()

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        if self.memo.fresh(context):
            return None
        if self.unseen_pools:
            log.info(
                "prioritizing nodepools that have not yet been considered due to timeouts in "
                "previous runs",
                extra=fields(nodepools=", ".join(sorted(self.unseen_pools))),
            )
        ordered = _interleave(self.order(candidates), self.unseen_pools)
        tried = [c for c in ordered if budgets.get(c.pool.name, 0) > 0]
        constrained = len(tried) < len(ordered)
        if constrained and self.memo.fresh(context, tried):
            return None
        deadline = Deadline(context.clock, SINGLE_NODE_TIMEOUT, "single")
        unseen = {c.pool.name for c in ordered}
        for index, candidate in enumerate(ordered):
            if deadline.passed():
                log.info(
                    "abandoning single-node consolidation due to timeout",
                    extra=fields(candidates_evaluated=index),
                )
                self.unseen_pools = frozenset(unseen)
                return None
            unseen.discard(candidate.pool.name)
            if budgets.get(candidate.pool.name, 0) <= 0:
                continue
            # A Balanced pool's node whose outright deletion would not pass is not tried.
            if not context.balanced.can_pass(candidate):
                continue
            command = self.consolidation(context, [candidate])
            if command is not None and context.balanced.approve(
                command.candidates, command.savings()
            ):
                return command
        self.unseen_pools = frozenset()
        self.memo.mark(context, tried if constrained else None)
        return None


def _interleave(candidates: list[Candidate], first: Set[str] = frozenset()) -> list[Candidate]:
    """Round-robin across NodePools, keeping each pool's own order; the pools in ``first``
    (those a search that ran out of time never reached) take their turn first."""
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_pool.setdefault(candidate.pool.name, []).append(candidate)
    pools = sorted(by_pool, key=lambda name: (name not in first, name))
    result: list[Candidate] = []
    longest = max((len(v) for v in by_pool.values()), default=0)
    for index in range(longest):
        for pool in pools:
            if index < len(by_pool[pool]):
                result.append(by_pool[pool][index])
    return result
