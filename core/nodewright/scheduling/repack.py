"""Repacking: a cheaper packing of pods that nothing but their size ties to a NodeClaim.

Karpenter takes pods largest CPU first, so the NodeClaims opened early fill up on CPU and
those opened late on memory; each is then bought as an instance type sized for its fuller
dimension, and the other is paid for but idle. For a large batch of unconstrained pods that
costs far more than necessary (40% above the linear-programming bound in Karpenter's own
benchmark mix).

After a solve, the pods of such NodeClaims are solved again on their own, in an order that
alternates CPU-heavy and memory-heavy pods so every NodeClaim fills evenly. The new packing
replaces the old one only when it is strictly cheaper, so small batches, where Karpenter's
packing is usually already the best, come out exactly as Karpenter's.

Only pods that nothing else can observe move: no node requirements or preferences, no
topology terms, no topology term of any other pod selects them, no host ports, volumes or
DRA claims.
Pools with limits or reserved capacity are left alone (a new packing could count against
them differently).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from nodewright.scheduling.model import (
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
)
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import CPU, MEMORY
from nodewright.scheduling.topology import TopologyTerm

#: A repacking must save at least this share of the old price to be used.
MIN_SAVING = 0.01

Solve = Callable[[Sequence[PodRequest], NodePoolTemplate], SchedulingResult]


def claim_price(claim: NewNodeClaim) -> float:
    """What the NodeClaim costs if the provider buys its cheapest option."""
    if not claim.instance_types:
        return 0.0
    prices = [
        o.price
        for o in claim.instance_types[0].offerings
        if o.available and o.matches(claim.requirements)
    ]
    return min(prices, default=0.0)


def repack_terms(
    pods: Iterable[PodRequest], placed_terms: Iterable[TopologyTerm]
) -> set[TopologyTerm]:
    terms: set[TopologyTerm] = set(placed_terms)
    for pod in pods:
        terms.update(pod.topology)
        terms.update(pod.preferred_affinity)
        terms.update(pod.preferred_anti_affinity)
        terms.update(pod.schedule_anyway)
    return terms


def movable(pod: PodRequest, terms: set[TopologyTerm]) -> bool:
    if (
        pod.topology
        or pod.preferred_affinity
        or pod.preferred_anti_affinity
        or pod.schedule_anyway
        or pod.host_ports
        or pod.volumes
        or pod.volume_requirements
        or pod.preferred_terms
        or pod.dynamic_resources
    ):
        return False
    if pod.requirement_terms != (Requirements(),):
        return False
    return not any(term.selects(pod.namespace, pod.labels) for term in terms)


def interleave(pods: Sequence[PodRequest], scale: Mapping[str, int]) -> list[PodRequest]:
    """Pods in an order that keeps a running total balanced between CPU and memory.

    Each pod's lean is its CPU share minus its memory share of ``scale`` (the largest node);
    the next pod comes from whichever end of the lean-sorted list pulls the running total
    back towards even.
    """
    cpu_scale = max(scale.get(CPU, 0), 1)
    memory_scale = max(scale.get(MEMORY, 0), 1)

    def lean(pod: PodRequest) -> float:
        return pod.requests.get(CPU, 0) / cpu_scale - pod.requests.get(MEMORY, 0) / memory_scale

    ordered = sorted(pods, key=lambda p: (lean(p), p.order, p.uid))
    result: list[PodRequest] = []
    low, high = 0, len(ordered) - 1
    balance = 0.0
    while low <= high:
        if balance <= 0:
            pod = ordered[high]
            high -= 1
        else:
            pod = ordered[low]
            low += 1
        balance += lean(pod)
        result.append(pod)
    return result


def _largest(template: NodePoolTemplate) -> dict[str, int]:
    largest: dict[str, int] = {}
    for instance_type in template.instance_types:
        for name, value in instance_type.allocatable().items():
            if value > largest.get(name, 0):
                largest[name] = value
    return largest


def repack(
    result: SchedulingResult,
    pods: Sequence[PodRequest],
    templates: Sequence[NodePoolTemplate],
    placed_terms: Iterable[TopologyTerm],
    solve_in_order: Solve,
) -> SchedulingResult:
    """``result`` with the NodeClaims of movable pods replaced by a cheaper packing, if any.

    ``placed_terms`` are the required anti-affinity terms of the pods already running;
    ``solve_in_order`` solves pods against one pool, taking them in the order given.
    """
    terms = repack_terms(pods, placed_terms)
    by_pool: dict[str, list[NewNodeClaim]] = {}
    for claim in result.new_node_claims:
        by_pool.setdefault(claim.node_pool, []).append(claim)
    replaced: dict[str, list[NewNodeClaim]] = {}
    for template in templates:
        claims = by_pool.get(template.name, [])
        if template.remaining is not None:
            continue
        candidates = [c for c in claims if all(movable(p, terms) for p in c.pods)]
        if len(candidates) < 2 or has_reservations(template):
            continue
        moving = [p for c in candidates for p in c.pods]
        again = solve_in_order(interleave(moving, _largest(template)), template)
        if again.errors or again.existing_nodes:
            continue
        old = sum(claim_price(c) for c in candidates)
        new = sum(claim_price(c) for c in again.new_node_claims)
        if new < old * (1 - MIN_SAVING):
            kept = [c for c in claims if c not in candidates]
            replaced[template.name] = kept + again.new_node_claims
    if not replaced:
        return result
    packed = [c for c in result.new_node_claims if c.node_pool not in replaced]
    for pool_claims in replaced.values():
        packed.extend(pool_claims)
    for index, claim in enumerate(packed, start=1):
        claim.hostname = f"hostname-placeholder-{index:04d}"
    return SchedulingResult(
        new_node_claims=packed,
        existing_nodes=result.existing_nodes,
        errors=result.errors,
        awaiting_reservation=result.awaiting_reservation,
    )


def has_reservations(template: NodePoolTemplate) -> bool:
    return any(o.reservation is not None for it in template.instance_types for o in it.offerings)
