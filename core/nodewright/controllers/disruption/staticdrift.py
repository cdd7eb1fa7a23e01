"""Static drift: drifted nodes of static NodePools are replaced by fresh NodeClaims of their
pool (Karpenter's ``staticdrift.go``)."""

from __future__ import annotations

from nodewright.api.karpenter import CONDITION_DRIFTED
from nodewright.api.meta import is_true
from nodewright.controllers.disruption.candidates import EVENTUAL, REASON_DRIFTED, Candidate
from nodewright.controllers.disruption.methods import Command, Context, Eligibility
from nodewright.controllers.static.pools import (
    nodes_allowed,
    static_node_counts,
    static_replacement,
)


class StaticDrift:
    """Replace drifted nodes of static NodePools, each by a fresh NodeClaim of its pool.

    As Karpenter's: no rescheduling simulation (a static pool's size does not follow its
    pods); a pool still scaling down waits; as many as its Drifted budget allows and its
    ``limits.nodes`` leaves room for, one command each, all started in the same pass.
    """

    reason = REASON_DRIFTED
    disruption_class = EVENTUAL
    validated = False

    def word(self, candidate: Candidate | None) -> str:
        return "Drift"

    def eligibility(self, candidate: Candidate) -> Eligibility:
        return Eligibility(
            candidate.pool.spec.replicas is not None
            and is_true(candidate.claim.status.conditions, CONDITION_DRIFTED)
        )

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        commands = self.commands(context, budgets, candidates)
        return commands[0] if commands else None

    def commands(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> list[Command]:
        by_pool: dict[str, list[Candidate]] = {}
        for candidate in sorted(candidates, key=lambda c: c.name):
            by_pool.setdefault(candidate.pool.name, []).append(candidate)
        commands: list[Command] = []
        for name, members in sorted(by_pool.items()):
            pool = members[0].pool
            allowed = budgets.get(name, 0)
            if allowed <= 0:
                continue
            counts = static_node_counts(context.snapshot.state, name)
            if counts.active + counts.pending_disruption > (pool.spec.replicas or 0):
                continue  # scaling down first
            room = nodes_allowed(pool, counts, min(allowed, len(members)))
            for candidate in members[:room]:
                commands.append(Command(self, [candidate], [static_replacement(pool)]))
        return commands
