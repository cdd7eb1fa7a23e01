"""Resource lists as plain ``dict[str, int]`` of milli-units (see :mod:`nodewright.api.quantity`).

Plain dicts keep the scheduler's inner loops cheap; these helpers never mutate their inputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from nodewright.api.quantity import format_quantity, parse_quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

ResourceList = dict[str, int]


def parse_resources(quantities: Mapping[str, str | int | float]) -> ResourceList:
    """Parse a Kubernetes ResourceList (``{"cpu": "500m"}``) into milli-units."""
    return {name: parse_quantity(value) for name, value in quantities.items()}


def resources(**quantities: str | int | float) -> ResourceList:
    """Shorthand for providers and tests: ``resources(cpu="4", memory="16Gi", pods=110)``.

    Underscores in names become dashes, so ``ephemeral_storage`` means ``ephemeral-storage``.
    Extended resources with dots or slashes go through :func:`parse_resources`.
    """
    return parse_resources({name.replace("_", "-"): value for name, value in quantities.items()})


def format_resources(values: Mapping[str, int]) -> dict[str, str]:
    """Render milli-units back into API quantity strings."""
    return {name: format_quantity(value, name) for name, value in sorted(values.items())}


def format_resources_json(values: Mapping[str, int]) -> str:
    """Compact rendering used in Karpenter-style messages: ``{"cpu":"1","pods":"1"}``."""
    return json.dumps(format_resources(values), separators=(",", ":"))


def merge(*lists: Mapping[str, int]) -> ResourceList:
    """Sum resource lists."""
    total: ResourceList = {}
    for values in lists:
        for name, value in values.items():
            total[name] = total.get(name, 0) + value
    return total


def subtract(left: Mapping[str, int], right: Mapping[str, int]) -> ResourceList:
    """``left - right`` over the union of names (results may be negative)."""
    result = dict(left)
    for name, value in right.items():
        result[name] = result.get(name, 0) - value
    return result


def maximum(lists: Iterable[Mapping[str, int]]) -> ResourceList:
    """Element-wise maximum."""
    result: ResourceList = {}
    for values in lists:
        for name, value in values.items():
            if name not in result or value > result[name]:
                result[name] = value
    return result


def minimum(lists: Sequence[Mapping[str, int]]) -> ResourceList:
    """Element-wise minimum, a name some list lacks counting as 0 and zeros left out (as
    Karpenter's ``MinResources``)."""
    if not lists:
        return {}
    keys = set().union(*lists)
    smallest = {k: min(values.get(k, 0) for values in lists) for k in keys}
    return {k: v for k, v in smallest.items() if v}


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """True when every requested amount is available.

    A zero request of a resource the node does not have still fits, as in Karpenter.
    """
    for name, value in requests.items():
        if value > 0 and value > available.get(name, 0):
            return False
    return True
