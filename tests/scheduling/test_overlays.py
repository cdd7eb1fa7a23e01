"""NodeOverlays applied to a pool's instance types (Karpenter's overlay store semantics): which
types and offerings an overlay selects, absolute and relative prices, added capacity, weight
order, and conflicts between overlays of the same weight."""

from __future__ import annotations

import pytest

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.overlays import (
    OverlayRule,
    PoolCatalog,
    adjusted_price,
    plan_overlays,
)
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import parse_resources
from tests.scheduling.scheduling_fakes import instance_type

GPU = "example.com/gpu"


def _catalog() -> list[InstanceType]:
    return [instance_type("small", cpu="2", memory="2Gi"), instance_type("large", cpu="8")]


def _pool(name: str = "default", labels: dict[str, str] | None = None) -> PoolCatalog:
    return PoolCatalog(name, labels or {}, _catalog())


def _rule(
    name: str,
    *requirements: tuple[str, str, list[str]],
    weight: int = 0,
    price: str | None = None,
    capacity: dict[str, str] | None = None,
) -> OverlayRule:
    return OverlayRule(
        name, weight, Requirements.of(*requirements), price, parse_resources(capacity or {})
    )


def _applied(rules: list[OverlayRule], pool: PoolCatalog | None = None) -> dict[str, InstanceType]:
    pool = pool or _pool()
    plan = plan_overlays(rules, [pool])
    return {it.name: it for it in plan.apply(pool.name, pool.instance_types)}


def _prices(it: InstanceType) -> dict[tuple[str, str], float]:
    return {(o.zone, o.capacity_type): round(o.price, 6) for o in it.offerings}


@pytest.mark.parametrize(
    ("price", "change", "expected"),
    [
        (1.0, "0.25", 0.25),
        (1.0, "+0.5", 1.5),
        (1.0, "-0.25", 0.75),
        (1.0, "-2", 0.0),  # never below zero
        (2.0, "+10%", 2.2),
        (2.0, "-15%", 1.7),
        (2.0, "-100%", 0.0),
        (2.0, "", 2.0),
    ],
)
def test_price_changes(price: float, change: str, expected: float) -> None:
    assert adjusted_price(price, change) == pytest.approx(expected)


def test_no_overlay_changes_nothing() -> None:
    pool = _pool()
    plan = plan_overlays([], [pool])
    assert plan.apply("default", pool.instance_types) == list(pool.instance_types)
    assert plan.evaluated == frozenset({"default"})


def test_capacity_is_added_to_the_selected_types_only() -> None:
    types = _applied([_rule("gpu", (INSTANCE_TYPE_LABEL, "In", ["large"]), capacity={GPU: "2"})])
    assert types["large"].capacity[GPU] == 2000
    assert types["large"].allocatable()[GPU] == 2000
    assert types["large"].capacity_overlaid
    assert GPU not in types["small"].capacity
    assert not types["small"].capacity_overlaid
    assert not any(o.price_overlaid for o in types["large"].offerings)


def test_a_price_overlay_changes_only_the_offerings_it_selects() -> None:
    base = {it.name: it for it in _catalog()}
    rule = _rule("spot-discount", (CAPACITY_TYPE_LABEL, "In", ["spot"]), price="-50%")
    types = _applied([rule])
    for name, it in types.items():
        for offering, original in zip(it.offerings, base[name].offerings, strict=True):
            if offering.capacity_type == "spot":
                assert offering.price == pytest.approx(original.price / 2)
                assert offering.price_overlaid
            else:
                assert offering.price == original.price
                assert not offering.price_overlaid


def test_an_absolute_price_can_make_the_larger_type_cheapest() -> None:
    rule = _rule("cheap-large", (INSTANCE_TYPE_LABEL, "In", ["large"]), price="0.001")
    types = _applied([rule])
    cheapest = min(types.values(), key=lambda it: min(o.price for o in it.offerings))
    assert cheapest.name == "large"
    assert set(_prices(types["large"]).values()) == {0.001}


def test_an_overlay_may_select_a_pool_by_name_or_template_label() -> None:
    by_name = _rule("mine", ("karpenter.sh/nodepool", "In", ["gpu"]), capacity={GPU: "1"})
    by_label = _rule("team", ("team", "In", ["ml"]), capacity={GPU: "1"})
    other, gpu = _pool("other", {"team": "web"}), _pool("gpu", {"team": "ml"})
    for rule, selected in ((by_name, "gpu"), (by_label, "gpu")):
        plan = plan_overlays([rule], [other, gpu])
        for pool in (other, gpu):
            types = plan.apply(pool.name, pool.instance_types)
            assert all((GPU in it.capacity) == (pool.name == selected) for it in types)


def test_a_key_the_type_does_not_define_selects_nothing() -> None:
    # as Karpenter: an overlay's In / Exists keys must be defined by the type or the pool
    rule = _rule("undefined", ("example.com/accelerator", "Exists", []), capacity={GPU: "1"})
    assert not any(GPU in it.capacity for it in _applied([rule]).values())
    negative = _rule(
        "negative", ("example.com/accelerator", "DoesNotExist", []), capacity={GPU: "1"}
    )
    assert all(GPU in it.capacity for it in _applied([negative]).values())


def test_an_overlay_selecting_one_zone_changes_that_zones_offerings() -> None:
    zone = "test-zone-1"
    rule = _rule("zone", (ZONE_LABEL, "In", [zone]), price="+1")
    small = _applied([rule])["small"]
    base = next(it for it in _catalog() if it.name == "small")
    for offering, original in zip(small.offerings, base.offerings, strict=True):
        expected = original.price + 1 if offering.zone == zone else original.price
        assert offering.price == pytest.approx(expected)


def test_the_heavier_overlay_sets_the_price() -> None:
    heavy = _rule("heavy", (INSTANCE_TYPE_LABEL, "In", ["small"]), weight=20, price="1")
    light = _rule("light", (INSTANCE_TYPE_LABEL, "In", ["small"]), weight=10, price="2")
    for order in ([heavy, light],):
        plan = plan_overlays(order, [_pool()])
        assert plan.conflicting == ()
        small = next(it for it in plan.apply("default", _catalog()) if it.name == "small")
        assert set(_prices(small).values()) == {1.0}


def test_lighter_overlays_only_add_resources_not_yet_overlaid() -> None:
    heavy = _rule("heavy", (INSTANCE_TYPE_LABEL, "In", ["small"]), weight=20, capacity={GPU: "1"})
    light = _rule(
        "light",
        (INSTANCE_TYPE_LABEL, "In", ["small"]),
        weight=10,
        capacity={GPU: "4", "example.com/fpga": "1"},
    )
    small = _applied([heavy, light])["small"]
    assert small.capacity[GPU] == 1000
    assert small.capacity["example.com/fpga"] == 1000


def test_same_weight_overlays_on_the_same_price_conflict_and_the_second_applies_nowhere() -> None:
    first = _rule("b-first", (INSTANCE_TYPE_LABEL, "In", ["small"]), weight=5, price="1")
    second = _rule("a-second", (INSTANCE_TYPE_LABEL, "In", ["small", "large"]), weight=5, price="9")
    plan = plan_overlays([first, second], [_pool()])
    assert plan.conflicting == ("a-second",)
    types = {it.name: it for it in plan.apply("default", _catalog())}
    assert set(_prices(types["small"]).values()) == {1.0}
    # the conflicting overlay did not change "large" either, although only "small" clashed
    assert not any(o.price_overlaid for o in types["large"].offerings)


def test_same_weight_overlays_on_different_resources_do_not_conflict() -> None:
    gpu = _rule("gpu", (INSTANCE_TYPE_LABEL, "In", ["small"]), weight=5, capacity={GPU: "1"})
    fpga = _rule(
        "fpga", (INSTANCE_TYPE_LABEL, "In", ["small"]), weight=5, capacity={"example.com/fpga": "1"}
    )
    same = _rule("same", (INSTANCE_TYPE_LABEL, "In", ["small"]), weight=5, capacity={GPU: "2"})
    plan = plan_overlays([gpu, fpga], [_pool()])
    assert plan.conflicting == ()
    small = next(it for it in plan.apply("default", _catalog()) if it.name == "small")
    assert small.capacity[GPU] == 1000
    assert small.capacity["example.com/fpga"] == 1000
    assert plan_overlays([gpu, same], [_pool()]).conflicting == ("same",)


def test_a_pool_not_evaluated_is_known_as_such() -> None:
    plan = plan_overlays([], [_pool("default")])
    assert "default" in plan.evaluated
    assert "new" not in plan.evaluated
