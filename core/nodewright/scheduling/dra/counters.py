"""Partitionable devices: the counter sets of a pool (``sharedCounters``) and the devices that
draw on them (``consumesCounters``), as Karpenter and Kubernetes' structured allocator count
them.

A pool's counter sets are its budget: a partition of a GPU (say ``1g.10gb``) is allocatable
only while every counter it uses up still has that much left in its set. The budget of a
published pool is what its slices of the current generation declare, less what the devices
claims hold in the cluster use up; each allocation in a pass takes from it. The budget of an
instance type's template pool is that node's alone. A pool whose devices name a counter set or
counter it does not declare, or that declares a set twice, is invalid.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from nodewright.api.quantity import QuantityError, exact_quantity
from nodewright.scheduling.dra.devices import CounterSet, Device, DeviceID

if TYPE_CHECKING:
    from nodewright.scheduling.dra.pools import PublishedSlice

#: (driver, pool).
PoolKey = tuple[str, str]
#: (counter set, counter) -> amount.
Counters = dict[tuple[str, str], Fraction]


def budget(sets: Iterable[CounterSet]) -> tuple[Counters, bool]:
    """The counters ``sets`` declare, and whether no set is declared twice."""
    total: Counters = {}
    seen: set[str] = set()
    valid = True
    for counter_set in sets:
        valid = valid and counter_set.name not in seen
        seen.add(counter_set.name)
        for name, value in counter_set.counters.items():
            try:
                total[(counter_set.name, name)] = exact_quantity(value)
            except QuantityError:
                valid = False
    return total, valid


def draws_known(total: Mapping[tuple[str, str], Fraction], devices: Iterable[Device]) -> bool:
    """Whether every counter ``devices`` use up is one of ``total``'s."""
    return all(
        (counter_set, name) in total
        for device in devices
        for counter_set, name, _ in device.exact_counters
    )


def has_room(
    device: Device,
    remaining: Mapping[tuple[str, str], Fraction] | None,
    allocating: Mapping[tuple[str, str], Fraction],
) -> bool:
    """Whether ``device``'s counters fit in ``remaining`` less what the search holds."""
    if not device.consumes_counters:
        return True
    if remaining is None:
        return False
    for counter_set, name, amount in device.exact_counters:
        left = remaining.get((counter_set, name))
        if left is None or left - allocating.get((counter_set, name), Fraction(0)) < amount:
            return False
    return True


def draw(into: Counters, device: Device, sign: int = 1) -> None:
    """Add (or with ``sign=-1`` give back) what ``device`` uses up to ``into``."""
    for counter_set, name, amount in device.exact_counters:
        key = (counter_set, name)
        into[key] = into.get(key, Fraction(0)) + sign * amount


def cluster_budgets(
    current: Mapping[PoolKey, Sequence[PublishedSlice]], held: Container[DeviceID]
) -> dict[PoolKey, Counters]:
    """Per published pool with counter sets (``current``: each pool's current slices, see
    :func:`~nodewright.scheduling.dra.pools.current_slices`), what is left of them once the
    devices claims hold (``held``) have drawn on them; an invalid pool has none."""
    budgets: dict[PoolKey, Counters] = {}
    for key, members in current.items():
        total, valid = budget(c for s in members for c in s.shared_counters)
        if not total:
            continue
        devices = [d for s in members for d in s.devices]
        if not valid or not draws_known(total, devices):
            continue
        for device in devices:
            if DeviceID(key[0], key[1], device.name) in held:
                draw(total, device, -1)
        budgets[key] = total
    return budgets


def template_budgets(
    templates: Iterable[tuple[str, str, tuple[CounterSet, ...]]],
) -> dict[PoolKey, Counters]:
    """Per template pool (driver, pool, its counter sets), its whole budget."""
    budgets: dict[PoolKey, Counters] = {}
    for driver, pool, sets in templates:
        if not sets:
            continue
        total = budgets.setdefault((driver, pool), {})
        found, _ = budget(sets)
        total.update(found)
    return budgets
