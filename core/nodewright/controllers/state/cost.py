"""What each NodePool's NodeClaims cost, kept up to date as they come and go (Karpenter's
``pkg/state/cost``).

A NodeClaim counts once it carries its instance type, zone, capacity type and NodePool labels
(once it launched), at the price of that offering in its NodePool's catalog (NodeOverlays
included), and stops counting when it is gone. Claims of one offering share one price, which
the hourly refresh (:meth:`PoolCosts.reprice`) brings up to date. This is Karpenter's view of
the cost, not a bill.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.scheduling.instancetype import InstanceType


@dataclass(frozen=True)
class OfferingKey:
    """An offering as a NodeClaim's labels name it."""

    instance_type: str
    zone: str
    capacity_type: str


@dataclass
class _Count:
    claims: int
    price: float


class CostError(Exception):
    """The books do not add up: a NodeClaim or NodePool removed that was never counted."""


def offering_of(claim: NodeClaim) -> tuple[str, OfferingKey] | None:
    """The claim's NodePool and offering, or None while it lacks one of their labels."""
    labels = claim.metadata.labels
    pool = labels.get(NODEPOOL_LABEL)
    instance_type = labels.get(INSTANCE_TYPE_LABEL)
    zone = labels.get(ZONE_LABEL)
    capacity_type = labels.get(CAPACITY_TYPE_LABEL)
    if pool is None or instance_type is None or zone is None or capacity_type is None:
        return None
    return pool, OfferingKey(instance_type, zone, capacity_type)


def offering_prices(instance_types: Iterable[InstanceType]) -> dict[OfferingKey, float]:
    """Each offering's price in a catalog (the first, where reservations repeat one)."""
    prices: dict[OfferingKey, float] = {}
    for instance_type in instance_types:
        for offering in instance_type.offerings:
            key = OfferingKey(instance_type.name, offering.zone, offering.capacity_type)
            prices.setdefault(key, offering.price)
    return prices


class PoolCosts:
    """Per NodePool, the offerings its NodeClaims use, how many of each, and their price."""

    def __init__(self) -> None:
        self._pools: dict[str, dict[OfferingKey, _Count]] = {}
        #: NodeClaim name -> the pool and offering it is counted under.
        self._claims: dict[str, tuple[str, OfferingKey]] = {}

    def counted(self, claim: str) -> bool:
        return claim in self._claims

    def known_price(self, pool: str, offering: OfferingKey) -> float | None:
        """The price a pool already counts an offering at, if any of its claims use it."""
        count = self._pools.get(pool, {}).get(offering)
        return None if count is None else count.price

    def add(self, claim: str, pool: str, offering: OfferingKey, price: float) -> None:
        """Count a NodeClaim; ``price`` is used when the pool counts no claim of the offering."""
        if claim in self._claims:
            return
        count = self._pools.setdefault(pool, {}).setdefault(offering, _Count(0, price))
        count.claims += 1
        self._claims[claim] = (pool, offering)

    def remove(self, claim: str) -> str | None:
        """Stop counting a NodeClaim; its pool, or None when it was not counted."""
        counted = self._claims.pop(claim, None)
        if counted is None:
            return None
        pool, offering = counted
        offerings = self._pools.get(pool)
        count = offerings.get(offering) if offerings is not None else None
        if offerings is None or count is None:
            raise CostError(
                f"nodeclaim {claim} was counted under {offering} in nodepool {pool!r}, "
                "which no longer counts it"
            )
        count.claims -= 1
        if count.claims <= 0:
            del offerings[offering]
        if not offerings:
            del self._pools[pool]
        return pool

    def drop_pool(self, pool: str) -> None:
        """Forget a deleted NodePool and its claims."""
        self._pools.pop(pool, None)
        self._claims = {name: c for name, c in self._claims.items() if c[0] != pool}

    def offerings(self, pool: str) -> list[OfferingKey]:
        return list(self._pools.get(pool, {}))

    def reprice(self, pool: str, prices: Mapping[OfferingKey, float]) -> None:
        """Take new prices for the pool's offerings; offerings the catalog no longer lists
        keep theirs."""
        for offering, count in self._pools.get(pool, {}).items():
            count.price = prices.get(offering, count.price)

    def cost(self, pool: str) -> float:
        return sum(c.claims * c.price for c in self._pools.get(pool, {}).values())
