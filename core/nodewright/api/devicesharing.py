"""The API server's rules (v1.36) for shared and partitionable devices in a ResourceSlice: a
capacity's ``requestPolicy`` (only on a device with ``allowMultipleAllocations``; one of
``validValues`` or ``validRange``, with a ``default`` that obeys it; bounds within the
capacity), a slice's ``sharedCounters`` (not beside ``devices``) and a device's
``consumesCounters``. Messages and field paths are the server's, checked with ``kubectl apply
--dry-run=server``; a ``step`` of zero, which the v1.36 server does not survive (it answers
with an internal error), is refused in words of our own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

from nodewright.api.excerpt import excerpt
from nodewright.api.fielderror import FieldErrors
from nodewright.api.names import dns_label_problems
from nodewright.api.quantity import optional_quantity
from nodewright.api.resource import (
    CapacityRequestPolicy,
    Counter,
    CounterSet,
    Device,
    DeviceCapacity,
    DeviceCounterConsumption,
)

#: At most this many valid values per capacity (``k8s.io/api/resource/v1``).
MAX_VALID_VALUES = 10


def _shown(value: Fraction) -> str:
    """A computed amount as the server shows it (``33Gi``)."""
    if value.denominator == 1 and value >= 1024 and value % 1024 == 0:
        units, suffixes = int(value), ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
        power = 0
        while units % 1024 == 0 and power < len(suffixes) - 1:
            units, power = units // 1024, power + 1
        return f"{units}{suffixes[power]}"
    return str(math.ceil(value)) if value.denominator != 1 else str(value.numerator)


def check_capacity(report: FieldErrors, path: str, device: Device) -> None:
    """The request policies of ``device``'s capacities."""
    for name, capacity in device.capacity.items():
        policy = capacity.request_policy
        if policy is None:
            continue
        where = f"{path}.capacity[{name}].requestPolicy"
        if not device.allow_multiple_allocations:
            report.add(where, "Forbidden: allowMultipleAllocations must be true")
            continue
        _check_policy(report, where, capacity, policy)


def _check_policy(
    report: FieldErrors, where: str, capacity: DeviceCapacity, policy: CapacityRequestPolicy
) -> None:
    values, valid = policy.valid_values, policy.valid_range
    if values and valid is not None:
        report.add(
            where,
            'Forbidden: exactly one policy can be specified, cannot specify "validValues" and '
            '"validRange" at the same time',
        )
        return
    total, default = optional_quantity(capacity.value), optional_quantity(policy.default)
    if valid is not None:
        if policy.default is None:
            report.add(f"{where}.default", "Required value: required when validRange is defined")
            return
        _check_range(
            report,
            f"{where}.validRange",
            valid_min=valid.min,
            valid_max=valid.max,
            step=valid.step,
            default=default,
            total=total,
        )
    elif values:
        if policy.default is None:
            report.add(f"{where}.default", "Required value: required when validValues is defined")
            return
        _check_values(report, f"{where}.validValues", values, default, total)


def _check_range(
    report: FieldErrors,
    where: str,
    *,
    valid_min: str | None,
    valid_max: str | None,
    step: str | None,
    default: Fraction | None,
    total: Fraction | None,
) -> None:
    low, high, size = (
        optional_quantity(valid_min),
        optional_quantity(valid_max),
        optional_quantity(step),
    )
    if low is None:
        report.add(f"{where}.min", "Required value")
        return
    if total is not None and low > total:
        report.add(
            f"{where}.min",
            f"Invalid value: {excerpt(valid_min)}: min is larger than capacity value: "
            f"{_shown(total)}",
        )
    if default is not None and default < low:
        report.add(
            f"{where}.min",
            f"Invalid value: {excerpt(_shown(default))}: default is less than min: {valid_min}",
        )
    if high is not None:
        if low > high:
            report.add(
                f"{where}.max",
                f"Invalid value: {excerpt(valid_min)}: min is larger than max: {valid_max}",
            )
        if default is not None and default > high:
            report.add(
                f"{where}.max",
                f"Invalid value: {excerpt(_shown(default))}: default is more than max: {valid_max}",
            )
        if total is not None and high > total:
            report.add(
                f"{where}.max",
                f"Invalid value: {excerpt(valid_max)}: max is larger than capacity value: "
                f"{_shown(total)}",
            )
    if size is None:
        return
    if size <= 0:
        report.add(f"{where}.step", f"Invalid value: {excerpt(step)}: must be greater than zero")
        return
    if total is not None and low + size > total:
        report.add(
            f"{where}.step",
            f"Invalid value: {excerpt(step)}: one step {_shown(low + size)} is larger than "
            f"capacity value: {_shown(total)}",
        )
    if default is not None and (math.ceil(default) - math.ceil(low)) % math.ceil(size) != 0:
        report.add(
            f"{where}.step",
            f"Invalid value: {excerpt(_shown(default))}: value is not a multiple of a given "
            f"step ({step}) from ({valid_min})",
        )


def _check_values(
    report: FieldErrors,
    where: str,
    values: Sequence[str],
    default: Fraction | None,
    total: Fraction | None,
) -> None:
    if len(values) > MAX_VALID_VALUES:
        report.add(where, f"Too many: {len(values)}: must have at most {MAX_VALID_VALUES} items")
    amounts = [optional_quantity(v) for v in values]
    seen: set[Fraction] = set()
    for index, (raw, amount) in enumerate(zip(values, amounts, strict=True)):
        if amount is None:
            continue
        if amount in seen:
            report.add(f"{where}[{index}]", f"Duplicate value: {excerpt(_shown(amount))}")
        seen.add(amount)
        previous = amounts[index - 1] if index else None
        if previous is not None and amount < previous:
            report.add(
                f"{where}[{index}]",
                f"Invalid value: {excerpt(raw)}: values must be sorted in ascending order",
            )
        if total is not None and amount > total:
            report.add(
                f"{where}[{index}]",
                f"Invalid value: {excerpt(raw)}: option is larger than capacity value: "
                f"{_shown(total)}",
            )
    if default is not None and default not in seen:
        report.add(
            where,
            f"Invalid value: {excerpt(_shown(default))}: default value is not valid according "
            "to the requestPolicy",
        )


def _check_counter_names(report: FieldErrors, where: str, counters: Mapping[str, Counter]) -> None:
    if not counters:
        report.add(where, "Required value")
    for name in counters:
        for problem in dns_label_problems(name):
            report.add(where, f"Invalid value: {excerpt(name)}: {problem}")


def check_shared_counters(
    report: FieldErrors, sets: Sequence[CounterSet] | None, has_devices: bool
) -> None:
    """A slice's ``sharedCounters`` (beside ``devices``, even an empty list, refused)."""
    if not sets:
        return
    if has_devices:
        report.add(
            "spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed'
        )
    names: set[str] = set()
    for index, counter_set in enumerate(sets):
        where = f"spec.sharedCounters[{index}]"
        if not counter_set.name:
            report.add(f"{where}.name", "Required value")
        else:
            report.add_all(f"{where}.name", dns_label_problems(counter_set.name))
            if counter_set.name in names:
                report.add(where, f"Duplicate value: {excerpt(counter_set.name)}")
            names.add(counter_set.name)
        _check_counter_names(report, f"{where}.counters", counter_set.counters)


def check_consumes_counters(
    report: FieldErrors, path: str, uses: Sequence[DeviceCounterConsumption]
) -> None:
    """A device's ``consumesCounters``."""
    names: set[str] = set()
    for index, use in enumerate(uses):
        where = f"{path}.consumesCounters[{index}]"
        if not use.counter_set:
            report.add(f"{where}.counterSet", "Required value")
        elif use.counter_set in names:
            report.add(where, f"Duplicate value: {excerpt(use.counter_set)}")
        names.add(use.counter_set)
        _check_counter_names(report, f"{where}.counters", use.counters)
