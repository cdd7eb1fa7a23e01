"""Multi-node consolidation: the most candidates one command can remove or replace together
(Karpenter's ``multinodeconsolidation.go``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace

from nodewright.controllers.disruption.balanced import Score
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.consolidation import Consolidation
from nodewright.controllers.disruption.methods import Command, Context
from nodewright.controllers.disruption.pricing import cheaper_than
from nodewright.controllers.disruption.timeout import MULTI_NODE_TIMEOUT, Deadline
from nodewright.logfields import fields
from nodewright.scheduling.model import NewNodeClaim
from nodewright.scheduling.requirements import Requirements

#: Multi-node consolidation looks at no more candidates than this.
MULTI_NODE_MAX_CANDIDATES = 100

log = logging.getLogger("nodewright.disruption")


class MultiNodeConsolidation(Consolidation):
    """Find the largest prefix of candidates (at least two) that one command can remove."""

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        if self.memo.fresh(context):
            return None
        allowed: list[Candidate] = []
        constrained = False
        for candidate in self.order(candidates):
            if budgets.get(candidate.pool.name, 0) <= 0:
                constrained = True
                continue
            allowed.append(candidate)
            budgets[candidate.pool.name] -= 1
        tried = allowed[:MULTI_NODE_MAX_CANDIDATES]
        if constrained and self.memo.fresh(context, tried):
            return None
        command, timed_out = self._first_n(context, tried)
        if command is None and not timed_out:
            self.memo.mark(context, tried if constrained else None)
        return command

    def _first_n(
        self, context: Context, candidates: list[Candidate]
    ) -> tuple[Command | None, bool]:
        """The longest prefix one command can take, and whether the search ran out of time."""
        if len(candidates) < 2:
            return None, False
        deadline = Deadline(context.clock, MULTI_NODE_TIMEOUT, "multi")
        timed_out = False
        low, high = 1, len(candidates) - 1
        best: Command | None = None
        best_scores: dict[str, Score] = {}
        #: The last move Balanced scoring turned down, told once when nothing is found.
        rejected: tuple[Command, dict[str, Score]] | None = None
        while low <= high:
            middle = (low + high) // 2
            if deadline.passed():
                timed_out = True
                _log_timeout(best, middle)
                break
            batch = candidates[: middle + 1]
            command = self.consolidation(context, batch)
            if command is not None and command.replacements:
                narrowed = _filter_out_same_type(command.replacements[0], batch)
                command = replace(command, replacements=[narrowed]) if narrowed else None
            if command is not None:
                approved, scores = context.balanced.evaluate(command.candidates, command.savings())
                if not approved:
                    rejected = (command, scores)
                    command = None
                else:
                    best_scores = scores
            if command is not None:
                best = command
                low = middle + 1
            else:
                high = middle - 1
        if best is not None:
            context.balanced.multi_node_outcome(best.candidates, best_scores, approved=True)
        elif rejected is not None and not timed_out:
            context.balanced.multi_node_outcome(rejected[0].candidates, rejected[1], approved=False)
        return best, timed_out


def _log_timeout(best: Command | None, batch: int) -> None:
    if best is None:
        log.info(
            "failed to find a multi-node consolidation after timeout",
            extra=fields(last_batch_size=batch),
        )
    else:
        log.info(
            "stopping multi-node consolidation after timeout, returning last valid command",
            extra=fields(command=best.describe()),
        )


def _filter_out_same_type(
    claim: NewNodeClaim, candidates: Sequence[Candidate]
) -> NewNodeClaim | None:
    """Karpenter's ``filterOutSameInstanceType``: merging nodes into one of a type already
    among them is just deleting the others, so only strictly cheaper types stay."""
    prices: dict[str, float] = {}
    for candidate in candidates:
        if candidate.instance_type is None:
            continue
        labels = Requirements.from_labels(candidate.node.metadata.labels)
        offered = [o.price for o in candidate.instance_type.offerings if o.matches(labels)]
        if offered:
            name = candidate.instance_type.name
            prices[name] = min(prices.get(name, math.inf), *offered)
    ceiling = min(
        (prices[it.name] for it in claim.instance_types if it.name in prices), default=math.inf
    )
    if ceiling == math.inf:
        return claim
    return cheaper_than(claim, ceiling)
