"""What a replacement NodeClaim could cost, and narrowing it: to its cheapest types first, to
types cheaper than the nodes it replaces, to one capacity type, within its minValues."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    INSTANCE_TYPE_LABEL,
)
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import NewNodeClaim
from nodewright.scheduling.requirements import Requirement, Requirements


def compatible_prices(instance_type: InstanceType, requirements: Requirements) -> list[float]:
    return [o.price for o in instance_type.offerings if o.available and o.matches(requirements)]


def worst_launch_price(instance_type: InstanceType, requirements: Requirements) -> float:
    """The dearest price a launch could pay, for the first capacity type the claim could
    get (reserved, then spot, then on-demand)."""
    for capacity_type in (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND):
        prices = [
            o.price
            for o in instance_type.offerings
            if o.available and o.capacity_type == capacity_type and o.matches(requirements)
        ]
        if prices:
            return max(prices)
    return math.inf


def order_by_price(claim: NewNodeClaim) -> NewNodeClaim:
    requirements = claim.requirements
    return replace(
        claim,
        instance_types=sorted(
            claim.instance_types, key=lambda it: (it.cheapest(requirements), it.name)
        ),
    )


def with_types(claim: NewNodeClaim, types: Sequence[InstanceType]) -> NewNodeClaim:
    names = frozenset(t.name for t in types)
    requirements = claim.requirements.add(Requirement(INSTANCE_TYPE_LABEL, False, names))
    return replace(claim, instance_types=list(types), requirements=requirements)


def require_capacity_type(claim: NewNodeClaim, capacity_type: str) -> NewNodeClaim:
    requirements = claim.requirements.add(
        Requirement(CAPACITY_TYPE_LABEL, False, frozenset({capacity_type}))
    )
    types = [it for it in claim.instance_types if compatible_prices(it, requirements)]
    return with_types(replace(claim, requirements=requirements), types)


def min_values_needed(claim: NewNodeClaim) -> int:
    return max((r.min_values or 0 for r in claim.requirements.values()), default=0)


def satisfies_min_values(claim: NewNodeClaim) -> bool:
    for key, requirement in claim.requirements.items():
        if not requirement.min_values:
            continue
        seen: set[str] = set()
        for instance_type in claim.instance_types:
            offered = instance_type.requirements.get(key)
            if offered is not None and not offered.complement:
                seen |= {v for v in offered.values if requirement.has(v)}
        if len(seen) < requirement.min_values:
            return False
    return True


def cheaper_than(claim: NewNodeClaim, price: float) -> NewNodeClaim | None:
    """The claim with only the types whose worst launch price is below ``price``."""
    types = [
        it for it in claim.instance_types if worst_launch_price(it, claim.requirements) < price
    ]
    if not types:
        return None
    narrowed = with_types(claim, types)
    return narrowed if satisfies_min_values(narrowed) else None
