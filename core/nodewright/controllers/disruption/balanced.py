"""Balanced consolidation (``consolidationPolicy: Balanced``, Karpenter's ``balanced.go`` and
``designs/balanced-consolidation.md``): a consolidation move in a Balanced NodePool goes ahead
only when what it saves is worth the disruption it causes, both measured against the pool.

Per pool, a move's score is (savings ÷ the pool's total cost) ÷ (the move's disruption cost ÷
the pool's total disruption cost); it is approved iff the score is at least 1/k, k = 2. A
node's disruption cost is 1 plus the positive eviction costs of its pods; the pool totals count
every node of the pool, candidates or not. Pools with other policies are not scored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from nodewright import metrics
from nodewright.api.core import Node
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.labels import INSTANCE_TYPE_LABEL
from nodewright.controllers.disruption.candidates import (
    Candidate,
    Snapshot,
    offering_price,
)
from nodewright.controllers.disruptioncost import eviction_cost, is_active
from nodewright.controllers.events import KARPENTER_DEDUPE, EventRecorder, identity
from nodewright.controllers.state.cluster import owner_kind
from nodewright.scheduling.instancetype import InstanceType

BALANCED = "Balanced"
#: Karpenter's ``BalancedK``: a move must score at least 1/k.
BALANCED_K = 2


def is_balanced(pool: NodePool) -> bool:
    return pool.spec.disruption.consolidation_policy == BALANCED


@dataclass(frozen=True)
class PoolTotals:
    """What a NodePool's nodes cost per hour, and how disruptive removing all of them is."""

    total_cost: float
    total_disruption_cost: float


@dataclass(frozen=True)
class Score:
    """A move's share of its pool's savings and disruption, and the verdict on them."""

    savings_fraction: float = 0.0
    disruption_fraction: float = 0.0
    k: int = BALANCED_K

    @property
    def value(self) -> float:
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return math.inf
        return self.savings_fraction / self.disruption_fraction

    @property
    def threshold(self) -> float:
        return 1.0 / self.k

    @property
    def approved(self) -> bool:
        return self.value >= self.threshold

    def message(self) -> str:
        """The ``ConsolidationApproved`` event's message, as Karpenter words it."""
        return (
            f"score {self.value:.2f} >= threshold {self.threshold:.2f} (k: {self.k}, "
            f"savings {self.savings_fraction * 100:.1f}%, "
            f"disruption {self.disruption_fraction * 100:.1f}%)"
        )


def score_move(savings: float, disruption_cost: float, totals: PoolTotals) -> Score:
    if totals.total_cost <= 0 or totals.total_disruption_cost <= 0:
        return Score()
    return Score(savings / totals.total_cost, disruption_cost / totals.total_disruption_cost)


def pool_totals(
    snapshot: Snapshot, pools: Sequence[str], candidates: Sequence[Candidate]
) -> dict[str, PoolTotals]:
    """Each named pool's totals: the price of each of its launched NodeClaims (Karpenter's
    cluster cost; the candidates' prices when none is known) and the disruption cost of each
    of its nodes (a candidate's own, worked out from the pods of the others)."""
    by_name = {c.name: c for c in candidates}
    state = snapshot.state
    totals: dict[str, PoolTotals] = {}
    for name in pools:
        types = {it.name: it for it in snapshot.instance_types.get(name, [])}
        cost = 0.0
        disruption = 0.0
        nodes: set[str] = set()
        for node in state.nodes_of_pool(name).values():
            nodes.add(node.name)
            candidate = by_name.get(node.name)
            if candidate is not None:
                disruption += candidate.reschedule_cost
            else:
                disruption += _node_disruption(snapshot, node)
        for claim in state.claims_of_pool(name).values():
            cost += _claim_price(claim, types)
            if claim.status.provider_id and state.node_for(claim) is None:
                disruption += 1.0  # launched, no Node yet: the per-node base cost
        if cost <= 0:
            cost = sum(c.price for c in candidates if c.pool.name == name)
        totals[name] = PoolTotals(cost, disruption)
    return totals


def _claim_price(claim: NodeClaim, types: Mapping[str, InstanceType]) -> float:
    instance_type = types.get(claim.metadata.labels.get(INSTANCE_TYPE_LABEL, ""))
    return offering_price(instance_type, claim.metadata.labels)


def _node_disruption(snapshot: Snapshot, node: Node) -> float:
    pods = snapshot.state.pods_on(node.name).values()
    return 1.0 + sum(
        max(0.0, eviction_cost(p)) for p in pods if is_active(p) and owner_kind(p) != "DaemonSet"
    )


class BalancedEvaluator:
    """One disruption pass's scoring of consolidation moves (Karpenter's balanced evaluator).

    Totals are worked out, once per pass, only for the pools a move touches. Every
    single-node move is counted in ``karpenter_consolidation_moves_total``; Balanced pools'
    scores go to ``karpenter_consolidation_score`` and approvals are told with a
    ``ConsolidationApproved`` event. Rejections are counted, not told: under Balanced they
    are many and would bury the approvals.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        candidates: Callable[[], Sequence[Candidate]],
        events: EventRecorder,
    ) -> None:
        self._snapshot = snapshot
        #: Every candidate of the pass, asked for only when a Balanced pool is scored.
        self._candidates = candidates
        self._every: Sequence[Candidate] | None = None
        self._events = events
        self._totals: dict[str, PoolTotals] = {}

    def totals(self, pool: str) -> PoolTotals:
        found = self._totals.get(pool)
        if found is None:
            if self._every is None:
                self._every = self._candidates()
            found = pool_totals(self._snapshot, [pool], self._every)[pool]
            self._totals[pool] = found
        return found

    def can_pass(self, candidate: Candidate) -> bool:
        """Whether deleting ``candidate`` outright (the best any move on it can do) would be
        approved; always true outside Balanced pools."""
        if not is_balanced(candidate.pool):
            return True
        totals = self.totals(candidate.pool.name)
        if totals.total_cost <= 0:
            return True
        return score_move(candidate.price, candidate.reschedule_cost, totals).approved

    def evaluate(
        self, candidates: Sequence[Candidate], savings: float
    ) -> tuple[bool, dict[str, Score]]:
        """Score a move on each Balanced pool it touches; approved when every one approves.
        A move across pools credits each with its share of the candidates' prices."""
        by_pool: dict[str, list[Candidate]] = {}
        for candidate in candidates:
            by_pool.setdefault(candidate.pool.name, []).append(candidate)
        source = sum(c.price for c in candidates)
        approved = bool(candidates)
        scores: dict[str, Score] = {}
        for name, members in by_pool.items():
            if not is_balanced(members[0].pool):
                continue
            share = savings
            if source > 0 and len(by_pool) > 1:
                share = savings * sum(c.price for c in members) / source
            disruption = sum(c.reschedule_cost for c in members)
            score = score_move(share, disruption, self.totals(name))
            scores[name] = score
            approved = approved and score.approved
        return approved, scores

    def approve(self, candidates: Sequence[Candidate], savings: float) -> bool:
        """Whether a move may go ahead; a single-node move is counted, and approved ones in
        Balanced pools are told on the node and its NodeClaim."""
        approved, scores = self.evaluate(candidates, savings)
        if len(candidates) == 1:
            (candidate,) = candidates
            pool = candidate.pool
            score = scores.get(pool.name)
            decision = "rejected" if score is not None and not score.approved else "approved"
            policy = pool.spec.disruption.consolidation_policy
            metrics.consolidation_moves.labels(decision, pool.name, policy).inc()
            if score is not None:
                metrics.consolidation_score.labels(decision, pool.name, policy).observe(score.value)
                if score.approved:
                    for obj in (candidate.node, candidate.claim):
                        self._events.publish(
                            obj,
                            "ConsolidationApproved",
                            score.message(),
                            dedupe=KARPENTER_DEDUPE,
                            dedupe_on=(identity(obj),),
                        )
        return approved

    def multi_node_outcome(
        self, candidates: Sequence[Candidate], scores: Mapping[str, Score], approved: bool
    ) -> None:
        """Count a multi-node move per pool; each Balanced pool that approves it is told with
        a ``ConsolidationApproved`` event on the NodePool."""
        pools: dict[str, NodePool] = {}
        for candidate in candidates:
            pools.setdefault(candidate.pool.name, candidate.pool)
        for name, pool in pools.items():
            policy = pool.spec.disruption.consolidation_policy
            decision = "approved" if approved else "rejected"
            metrics.consolidation_moves.labels(decision, name, policy).inc()
            score = scores.get(name)
            if score is None:
                continue
            verdict = "approved" if score.approved else "rejected"
            metrics.consolidation_score.labels(verdict, name, policy).observe(score.value)
            if score.approved:
                self._events.publish(
                    pool,
                    "ConsolidationApproved",
                    score.message(),
                    dedupe=KARPENTER_DEDUPE,
                    dedupe_on=(identity(pool),),
                )
