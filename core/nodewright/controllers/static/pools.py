"""Static NodePools' NodeClaims as Karpenter's ``NodePoolState`` counts them, the room their
``limits.nodes`` leaves, and the NodeClaim a static pool launches; shared by the static
controllers and the disruption loop's static drift."""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.api.karpenter import CONDITION_DISRUPTION_REASON, NodeClaim, NodePool
from nodewright.api.quantity import parse_quantity
from nodewright.cluster.state import ClusterState
from nodewright.controllers.state.solverdata import node_pool_requirements
from nodewright.scheduling.model import NewNodeClaim


def is_static(pool: NodePool) -> bool:
    return pool.spec.replicas is not None


@dataclass(frozen=True)
class StaticNodeCounts:
    """A pool's NodeClaims as Karpenter's ``NodePoolState`` counts them."""

    #: Not going and not held by a disruption command.
    active: int = 0
    #: Deleting (the NodeClaim or its Node).
    deleting: int = 0
    #: Held by a disruption command that has not deleted them yet (drift replacing them).
    pending_disruption: int = 0

    @property
    def total(self) -> int:
        return self.active + self.deleting + self.pending_disruption


def static_node_counts(state: ClusterState, pool: str) -> StaticNodeCounts:
    active = deleting = pending = 0
    for claim in state.claims_of_pool(pool).values():
        if marked_for_deletion(state, claim):
            deleting += 1
        elif pending_disruption(claim):
            pending += 1
        else:
            active += 1
    return StaticNodeCounts(active, deleting, pending)


def node_limit(pool: NodePool) -> int | None:
    """The pool's ``limits.nodes`` (None: unlimited)."""
    value = pool.spec.limits.get("nodes")
    if value is None:
        return None
    return -(-parse_quantity(value) // 1000)


def nodes_allowed(pool: NodePool, counts: StaticNodeCounts, wanted: int) -> int:
    """How many of ``wanted`` new nodes ``limits.nodes`` leaves room for (Karpenter's
    ``ReserveNodeCount``: active, deleting and pending-disruption NodeClaims all count)."""
    limit = node_limit(pool)
    if limit is None:
        return max(wanted, 0)
    return max(min(wanted, limit - counts.total), 0)


def static_replacement(pool: NodePool) -> NewNodeClaim:
    """A NodeClaim of a static pool: its template's requirements and nothing sized for pods."""
    return NewNodeClaim(
        node_pool=pool.name,
        requirements=node_pool_requirements(pool),
        instance_types=[],
        pods=[],
        requests={},
    )


def marked_for_deletion(state: ClusterState, claim: NodeClaim) -> bool:
    if claim.deleting:
        return True
    node = state.node_for(claim) if claim.status.provider_id else None
    return node is not None and node.deleting


def pending_disruption(claim: NodeClaim) -> bool:
    return any(
        c.type == CONDITION_DISRUPTION_REASON and c.status == "True"
        for c in claim.status.conditions
    )
