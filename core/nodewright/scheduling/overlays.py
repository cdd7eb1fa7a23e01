"""NodeOverlays applied to instance types, as Karpenter's overlay store applies them.

An overlay selects, per NodePool, the instance types whose requirements (with the pool's name
and template labels) are compatible with its own, and of those the offerings compatible with
them. It then changes their price (absolute ``price`` or relative ``priceAdjustment``) and adds
extended resources to their capacity. Overlays apply heaviest first: what a heavier overlay set
stays (a lighter one only adds resources not yet overlaid). Two overlays of the same weight that
change the same offering's price, or the same resource of the same type, conflict: the one
evaluated second is rejected as a whole, on every pool, so no overlay applies halfway.

:func:`plan_overlays` evaluates every overlay once for all pools; the resulting
:class:`OverlayPlan` rewrites a pool's catalog on demand and knows which pools it evaluated
(a pool created since is not offered until the next evaluation, as Karpenter skips it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodewright.api.labels import NODEPOOL_LABEL
from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.requirements import Requirements

#: An offering within one instance type: zone, capacity type and its further labels.
OfferingKey = tuple[str, str, tuple[tuple[str, str], ...]]


def offering_key(offering: Offering) -> OfferingKey:
    return (offering.zone, offering.capacity_type, tuple(sorted(offering.labels.items())))


def adjusted_price(price: float, change: str) -> float:
    """``price`` after an overlay's ``price`` (``"0.5"``: that price) or ``priceAdjustment``
    (``"+0.1"``, ``"-10%"``: relative to it), never below zero."""
    if not change:
        return price
    if not change.startswith(("+", "-")):
        return float(change)
    if change.endswith("%"):
        adjusted = price * (1 + float(change[:-1]) / 100)
    else:
        adjusted = price + float(change)
    return max(adjusted, 0.0)


@dataclass(frozen=True)
class OverlayRule:
    """One valid NodeOverlay, parsed."""

    name: str
    weight: int
    requirements: Requirements
    #: The ``price`` or ``priceAdjustment`` text, or None when it changes no price.
    price: str | None = None
    #: Extended resources it adds, in milli-units.
    capacity: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PoolCatalog:
    """What an overlay is matched against for one NodePool: its name, its template labels
    and its instance types."""

    name: str
    labels: Mapping[str, str]
    instance_types: Sequence[InstanceType]


@dataclass
class _PriceChange:
    change: str
    lowest_weight: int


@dataclass
class _CapacityChange:
    added: dict[str, int]
    #: The resources the lightest overlay applied so far set, and its weight.
    lowest_resources: frozenset[str]
    lowest_weight: int


@dataclass
class _TypeChanges:
    prices: dict[OfferingKey, _PriceChange] = field(default_factory=dict)
    capacity: _CapacityChange | None = None


@dataclass
class OverlayPlan:
    """The changes every valid, non-conflicting overlay makes, per NodePool and instance type."""

    #: NodePools whose catalogs the plan was evaluated on.
    evaluated: frozenset[str] = frozenset()
    #: Overlays rejected because an overlay of the same weight changes the same thing.
    conflicting: tuple[str, ...] = ()
    #: Overlays that changed at least one instance type of some pool.
    applied: tuple[str, ...] = ()
    _changes: dict[str, dict[str, _TypeChanges]] = field(default_factory=dict)

    def apply(self, pool: str, instance_types: Iterable[InstanceType]) -> list[InstanceType]:
        """The pool's instance types with its overlays applied (unchanged types as they were)."""
        changes = self._changes.get(pool)
        if not changes:
            return list(instance_types)
        return [_apply(it, changes.get(it.name)) for it in instance_types]


def _apply(instance_type: InstanceType, changes: _TypeChanges | None) -> InstanceType:
    if changes is None:
        return instance_type
    updated = instance_type
    if changes.capacity is not None and changes.capacity.added:
        updated = replace(
            updated,
            capacity={**updated.capacity, **changes.capacity.added},
            capacity_overlaid=True,
        )
    if changes.prices:
        offerings = []
        for offering in updated.offerings:
            change = changes.prices.get(offering_key(offering))
            if change is None:
                offerings.append(offering)
            else:
                offerings.append(
                    replace(
                        offering,
                        price=adjusted_price(offering.price, change.change),
                        price_overlaid=True,
                    )
                )
        updated = replace(updated, offerings=tuple(offerings))
    return updated


def _selected_offerings(
    pool: PoolCatalog, instance_type: InstanceType, rule: OverlayRule
) -> list[Offering]:
    """The offerings of ``instance_type`` in ``pool`` the rule selects ([]: the type is not
    selected). Keys the overlay requires must be defined by the type, the pool's labels or
    its name (``karpenter.sh/nodepool``)."""
    known = instance_type.requirements.add(
        Requirements.from_labels({**pool.labels, NODEPOOL_LABEL: pool.name})
    )
    if not known.compatible(rule.requirements, allow_undefined=frozenset()):
        return []
    return [o for o in instance_type.offerings if o.matches(rule.requirements)]


def _conflicts(
    changes: Mapping[str, dict[str, _TypeChanges]],
    pool: PoolCatalog,
    rule: OverlayRule,
) -> bool:
    by_type = changes.get(pool.name, {})
    for instance_type in pool.instance_types:
        offerings = _selected_offerings(pool, instance_type, rule)
        if not offerings:
            continue
        found = by_type.get(instance_type.name)
        if found is None:
            continue
        if rule.price is not None:
            for offering in offerings:
                change = found.prices.get(offering_key(offering))
                if change is not None and change.lowest_weight == rule.weight:
                    return True
        capacity = found.capacity
        if (
            rule.capacity
            and capacity is not None
            and capacity.lowest_weight == rule.weight
            and capacity.lowest_resources & set(rule.capacity)
        ):
            return True
    return False


def _record(
    changes: dict[str, dict[str, _TypeChanges]], pool: PoolCatalog, rule: OverlayRule
) -> bool:
    by_type = changes.setdefault(pool.name, {})
    recorded = False
    for instance_type in pool.instance_types:
        offerings = _selected_offerings(pool, instance_type, rule)
        if not offerings:
            continue
        found = by_type.setdefault(instance_type.name, _TypeChanges())
        if rule.price is not None:
            recorded = True
            for offering in offerings:
                key = offering_key(offering)
                change = found.prices.get(key)
                if change is None:
                    found.prices[key] = _PriceChange(rule.price, rule.weight)
                else:  # a heavier overlay set this price; it stays
                    change.lowest_weight = rule.weight
        if rule.capacity:
            recorded = True
            capacity = found.capacity
            if capacity is None:
                found.capacity = _CapacityChange(
                    dict(rule.capacity), frozenset(rule.capacity), rule.weight
                )
            else:
                for resource, value in rule.capacity.items():
                    capacity.added.setdefault(resource, value)
                capacity.lowest_resources = frozenset(rule.capacity)
                capacity.lowest_weight = rule.weight
    return recorded


def plan_overlays(rules: Sequence[OverlayRule], pools: Sequence[PoolCatalog]) -> OverlayPlan:
    """Evaluate ``rules`` (heaviest first, see :func:`nodewright.api.nodeoverlay.by_weight`)
    against every pool's catalog."""
    changes: dict[str, dict[str, _TypeChanges]] = {}
    conflicting: list[str] = []
    applied: list[str] = []
    for rule in rules:
        # Check every pool before changing any, so a conflicting overlay applies nowhere.
        if any(_conflicts(changes, pool, rule) for pool in pools):
            conflicting.append(rule.name)
            continue
        recorded = [_record(changes, pool, rule) for pool in pools]  # on every pool
        if any(recorded):
            applied.append(rule.name)
    return OverlayPlan(
        evaluated=frozenset(pool.name for pool in pools),
        conflicting=tuple(conflicting),
        applied=tuple(applied),
        _changes=changes,
    )
