"""An instance type's offerings under requirements, kept per type (``matching_offerings``,
``for_launch``) as ``cheapest`` keeps its prices: each answer is the one a fresh filter of the
type's offerings gives, and the launch's choice of types follows it."""

from __future__ import annotations

import itertools
import random

from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    INSTANCE_TYPE_LABEL,
    ZONE_LABEL,
)
from nodewright.controllers.nodeclaim.lifecycle.launch import _launch_options
from nodewright.scheduling.instancetype import InstanceType, Offering, Reservation
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.testing.catalog import ZONES, fake_instance_type

RESERVATION = Reservation("cr-1", "example.com/reservation", 2)


def _catalog() -> list[InstanceType]:
    reserved = Offering(ZONES[0], "reserved", 0.01, reservation=RESERVATION)
    return [
        fake_instance_type("small", cpu="2", memory="2Gi"),
        fake_instance_type("default"),
        fake_instance_type(
            "scarce",
            offerings=[
                Offering(ZONES[1], CAPACITY_TYPE_SPOT, 0.2, available=False),
                Offering(ZONES[2], CAPACITY_TYPE_ON_DEMAND, 0.4),
                reserved,
            ],
        ),
    ]


def _random_requirements(rng: random.Random) -> Requirements:
    items = []
    if rng.random() < 0.7:
        zones = rng.sample(ZONES, rng.randint(1, 3))
        items.append(Requirement.of(ZONE_LABEL, rng.choice(["In", "NotIn"]), zones))
    if rng.random() < 0.7:
        kinds = rng.sample([CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND, "reserved"], 2)
        items.append(Requirement.of(CAPACITY_TYPE_LABEL, "In", kinds))
    if rng.random() < 0.3:
        items.append(
            Requirement.of(RESERVATION.label, rng.choice(["In", "DoesNotExist"]), ["cr-1"])
        )
    if rng.random() < 0.6:
        names = rng.sample(["small", "default", "scarce", "absent"], rng.randint(1, 3))
        items.append(Requirement.of(INSTANCE_TYPE_LABEL, rng.choice(["In", "NotIn"]), names))
    return Requirements(items)


def _fresh_options(types: list[InstanceType], requirements: Requirements) -> list[InstanceType]:
    """The launch's choice made afresh: compatible types with their matching offerings,
    cheapest first."""
    options = []
    for instance_type in types:
        if not instance_type.requirements.meets(requirements):
            continue
        offerings = [o for o in instance_type.offerings if o.available and o.matches(requirements)]
        if offerings:
            price = min(o.price for o in offerings)
            options.append((price, instance_type.with_offerings(offerings)))
    options.sort(key=lambda item: (item[0], item[1].name))
    return [it for _, it in options]


def test_kept_offering_answers_are_fresh_filters_under_any_requirements() -> None:
    rng = random.Random(3)
    types = _catalog()
    for _ in range(300):
        requirements = _random_requirements(rng)
        for instance_type in types:
            fresh = tuple(
                o for o in instance_type.offerings if o.available and o.matches(requirements)
            )
            assert instance_type.matching_offerings(requirements) == fresh
            launchable = instance_type.for_launch(requirements)
            if fresh:
                assert launchable == instance_type.with_offerings(fresh)
            else:
                assert launchable is None
        assert _launch_options(types, requirements) == _fresh_options(types, requirements)


def test_a_type_for_launch_is_shared_by_equal_requirements_only() -> None:
    default = _catalog()[1]
    spot = Requirements([Requirement.of(CAPACITY_TYPE_LABEL, "In", [CAPACITY_TYPE_SPOT])])
    again = Requirements([Requirement.of(CAPACITY_TYPE_LABEL, "In", [CAPACITY_TYPE_SPOT])])
    on_demand = Requirements([Requirement.of(CAPACITY_TYPE_LABEL, "In", [CAPACITY_TYPE_ON_DEMAND])])
    first = default.for_launch(spot)
    assert first is not None
    assert default.for_launch(again) is first
    other = default.for_launch(on_demand)
    assert other is not None
    assert {o.capacity_type for o in first.offerings} == {CAPACITY_TYPE_SPOT}
    assert {o.capacity_type for o in other.offerings} == {CAPACITY_TYPE_ON_DEMAND}
    # Each narrowed type requires its own zones and capacity types.
    zones = [sorted(t.requirements[ZONE_LABEL].values) for t in (first, other)]
    assert zones == [list(ZONES[:2]), list(ZONES)]


def test_the_launch_skips_types_a_claim_does_not_name() -> None:
    types = _catalog()
    for names in itertools.combinations(["small", "default", "scarce"], 2):
        requirements = Requirements([Requirement.of(INSTANCE_TYPE_LABEL, "In", names)])
        assert sorted(t.name for t in _launch_options(types, requirements)) == sorted(names)
