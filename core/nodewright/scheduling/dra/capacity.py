"""Consumable capacity: how much of a shared device (``allowMultipleAllocations``) one
allocation takes, as Kubernetes' structured allocator reckons it.

Every capacity of the device is taken in part. A request that names an amount
(``capacity.requests``) takes it, rounded up by the capacity's request policy: to the first
valid value not below it, or into the valid range (at least ``min``, then up to the next
``step`` above ``min``); a request that names none takes the policy's ``default``, or the
whole capacity when there is no policy. The result must still obey the policy (not above
``max``, on a step, one of the valid values; the default always does), and a request naming a
capacity the device lacks matches nothing. A device whose shares add up past a capacity is
full for that allocation.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from fractions import Fraction
from typing import TypeVar

from nodewright.api.quantity import canonical_quantity, optional_quantity
from nodewright.scheduling.dra.devices import Device, RequestPolicy, ValidRange

#: Capacity name -> amount.
Amounts = Mapping[str, Fraction]
K = TypeVar("K", bound=Hashable)


def _whole(value: Fraction) -> int:
    """A quantity as Kubernetes' ``Value()`` gives it: rounded up to a whole number."""
    return math.ceil(value)


def _round_up_range(requested: Fraction, valid: ValidRange) -> Fraction:
    low = optional_quantity(valid.min)
    if low is None:
        return requested
    if requested < low:
        return low
    step = optional_quantity(valid.step)
    if step is None or _whole(step) <= 0:
        return requested
    whole_step, whole_low = _whole(step), _whole(low)
    steps = -(-(_whole(requested) - whole_low) // whole_step)
    return Fraction(whole_low + whole_step * steps)


def _round_up_values(requested: Fraction, values: Iterable[str]) -> Fraction:
    for raw in values:
        value = optional_quantity(raw)
        if value is not None and requested <= value:
            return value
    return requested


def _taken(
    requested: Fraction | None, capacity: Fraction, policy: RequestPolicy | None
) -> Fraction:
    if requested is None:
        default = None if policy is None else optional_quantity(policy.default)
        return capacity if default is None else default
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min:
        return _round_up_range(requested, policy.valid_range)
    if policy.valid_values:
        return _round_up_values(requested, policy.valid_values)
    return requested


def _breaks(amount: Fraction, policy: RequestPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == optional_quantity(policy.default):
        return False
    valid = policy.valid_range
    if valid is not None:
        top = optional_quantity(valid.max)
        if top is not None and amount > top:
            return True
        step, low = optional_quantity(valid.step), optional_quantity(valid.min)
        if step is not None and low is not None and _whole(step) > 0:
            return (_whole(amount) - _whole(low)) % _whole(step) != 0
        return False
    if policy.valid_values:
        return all(amount != optional_quantity(v) for v in policy.valid_values)
    return False


def consumed_capacity(device: Device, requests: Amounts) -> dict[str, Fraction] | None:
    """What one allocation of the shared ``device`` for a request asking ``requests`` takes,
    per capacity; None when the request cannot be met by it whatever is left (it names a
    capacity the device lacks, or its amount breaks the capacity's policy)."""
    capacity = device.exact_capacity
    if any(name not in capacity for name in requests):
        return None
    taken: dict[str, Fraction] = {}
    for name, total in capacity.items():
        policy = device.request_policies.get(name)
        amount = _taken(requests.get(name), total, policy)
        if _breaks(amount, policy):
            return None
        taken[name] = amount
    return taken


def fits(device: Device, taken: Amounts, used: Iterable[Amounts]) -> bool:
    """Whether ``taken`` still fits on ``device`` beside what ``used`` already holds."""
    sources = list(used)
    capacity = device.exact_capacity
    for name, amount in taken.items():
        total = amount + sum((s.get(name, Fraction(0)) for s in sources), Fraction(0))
        if total > capacity.get(name, Fraction(0)):
            return False
    return True


def add(into: dict[K, Fraction], amounts: Mapping[K, Fraction], sign: int = 1) -> None:
    """Add (or with ``sign=-1`` take away) ``amounts`` to ``into``."""
    for name, amount in amounts.items():
        into[name] = into.get(name, Fraction(0)) + sign * amount


def largest(shares: Iterable[Mapping[K, Fraction]]) -> dict[K, Fraction]:
    """Per capacity, the largest of ``shares``."""
    top: dict[K, Fraction] = {}
    for share in shares:
        for name, amount in share.items():
            if name not in top or amount > top[name]:
                top[name] = amount
    return top


def quantity_text(amount: Fraction) -> str:
    """``amount`` as a quantity the API server keeps as written: binary suffixes for whole
    multiples of 1024, otherwise its canonical decimal form (rounded up to a nano-unit)."""
    if amount.denominator == 1 and amount >= 1024 and amount % 1024 == 0:
        units, power = int(amount), 0
        while units % 1024 == 0 and power < len(_BINARY) - 1:
            units, power = units // 1024, power + 1
        return f"{units}{_BINARY[power]}"
    nanos = math.ceil(amount * 10**9)
    return canonical_quantity(f"{nanos}n")


_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
