"""Which instance type and offering a launch buys, and the labels its node gets."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nodewright.plugin import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    ZONE_LABEL,
    InstanceType,
    InsufficientCapacityError,
    Offering,
    Requirements,
)
from nodewright_kwok.labels import KWOK_NODE_KEY, KWOK_NODE_VALUE

#: ``(instance_type, zone, capacity_type) -> True`` when that offering has no capacity now.
CapacityCheck = Callable[[str, str, str], bool]


def cheapest_offering(
    instance_types: Sequence[InstanceType],
    requirements: Requirements,
    lacks_capacity: CapacityCheck,
) -> tuple[InstanceType, Offering, tuple[tuple[str, str, str], ...]]:
    """The cheapest available offering compatible with ``requirements``, and the compatible
    offerings passed over for lack of capacity (``(instance_type, zone, capacity_type)``).

    Ties go to the earlier instance type in ``instance_types``, then to the zone and
    capacity type that sort first, so the same request always buys the same thing.

    Raises InsufficientCapacityError naming the offerings that lacked capacity when nothing
    is left to buy.
    """
    best: tuple[float, int, str, str] | None = None
    choice: tuple[InstanceType, Offering] | None = None
    exhausted: list[tuple[str, str, str]] = []
    for position, instance_type in enumerate(instance_types):
        if not requirements.meets(instance_type.requirements):
            continue
        for offering in instance_type.offerings:
            if not offering.available or not requirements.meets(offering.requirements()):
                continue
            if lacks_capacity(instance_type.name, offering.zone, offering.capacity_type):
                exhausted.append((instance_type.name, offering.zone, offering.capacity_type))
                continue
            rank = (offering.price, position, offering.zone, offering.capacity_type)
            if best is None or rank < best:
                best, choice = rank, (instance_type, offering)
    if choice is not None:
        return choice[0], choice[1], tuple(exhausted)
    names = ", ".join(it.name for it in instance_types[:5]) + (
        f" and {len(instance_types) - 5} others" if len(instance_types) > 5 else ""
    )
    if exhausted:
        raise InsufficientCapacityError(
            f"no capacity for any compatible offering of {names}", offerings=exhausted
        )
    raise InsufficientCapacityError(
        f"no available offering of {names or 'no instance types'} is compatible with {requirements}"
    )


def instance_labels(
    instance_type: InstanceType,
    offering: Offering,
    requirements: Requirements,
    node_name: str,
) -> dict[str, str]:
    """The labels a node of this type and offering carries, as Karpenter's KWOK sets them.

    A label the type allows several values for (an OS list) takes the first value the
    request also allows.
    """
    labels: dict[str, str] = {}
    for key, offered in instance_type.requirements.items():
        if key in (ZONE_LABEL, CAPACITY_TYPE_LABEL):
            continue
        allowed = offered.intersection(requirements[key]) if key in requirements else offered
        if not allowed.complement and allowed.values:
            labels[key] = min(allowed.values)
    labels.update(offering.labels)
    labels[ZONE_LABEL] = offering.zone
    labels[CAPACITY_TYPE_LABEL] = offering.capacity_type
    labels[HOSTNAME_LABEL] = node_name
    labels[KWOK_NODE_KEY] = KWOK_NODE_VALUE
    return labels
