"""Shared devices (consumable capacity) and partitionable devices (counter sets) are allocated
as Karpenter v1.14 and Kubernetes' structured allocator do: a shared device takes claims
until its capacity is used up, each request's share rounded by the capacity's request policy;
a partition is allocatable while its pool's counters last (cases after Karpenter's
``allocator_test.go``, consumable capacity and partitionable devices)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from nodewright.api.resource import ResourceSlice
from nodewright.scheduling.dra.allocator import Allocator
from nodewright.scheduling.dra.cluster import HeldDevices, held_devices
from nodewright.scheduling.dra.devices import (
    CounterConsumption,
    CounterSet,
    Device,
    DeviceID,
    ResourceSliceTemplate,
)
from nodewright.scheduling.dra.pools import PublishedSlice, published_slice
from nodewright.scheduling.dra.search import AllocationError
from tests.dra.test_allocator import GPU, claim, exactly, new_claim

GI = 2**30
NONE_FITS = "no instance type can satisfy the allocation"
SHARED = DeviceID(GPU, "shared", "gpu-0")


def shared_slice(capacity: dict[str, Any], *, pool: str = "shared") -> PublishedSlice:
    return published_slice(
        ResourceSlice.model_validate(
            {
                "metadata": {"name": pool},
                "spec": {
                    "driver": GPU,
                    "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                    "allNodes": True,
                    "devices": [
                        {"name": "gpu-0", "allowMultipleAllocations": True, "capacity": capacity}
                    ],
                },
            }
        )
    )


def memory(amount: str) -> dict[str, Any]:
    return {"capacity": {"requests": {"memory": amount}}}


def no_gpu_node() -> Any:
    return new_claim({"cpu-only": ()})


def test_a_shared_device_takes_claims_until_its_capacity_is_used_up() -> None:
    allocator = Allocator([shared_slice({"memory": {"value": "16Gi"}})])
    first = allocator.allocate(no_gpu_node(), [claim("a", exactly(**memory("10Gi")))])
    [(_, device, share)] = first.claims["default/a"].results["cpu-only"]
    assert (device, share) == (SHARED, {"memory": Fraction(10 * GI)})
    allocator.commit(first)
    with pytest.raises(AllocationError, match=NONE_FITS):
        allocator.allocate(no_gpu_node(), [claim("b", exactly(**memory("10Gi")))])
    # 6Gi is what is left, and another NodeClaim may take it: the device is shared.
    other = new_claim({"cpu-only": ()}, "placeholder-2")
    assert allocator.allocate(other, [claim("c", exactly(**memory("6Gi")))]).instance_types


def test_a_request_without_an_amount_takes_the_default_or_the_whole_capacity() -> None:
    whole = Allocator([shared_slice({"memory": {"value": "16Gi"}})])
    whole.commit(whole.allocate(no_gpu_node(), [claim("a", exactly())]))
    with pytest.raises(AllocationError, match=NONE_FITS):
        whole.allocate(no_gpu_node(), [claim("b", exactly(**memory("1")))])
    policy = {"default": "4Gi", "validRange": {"min": "1Gi"}}
    defaulted = Allocator([shared_slice({"memory": {"value": "16Gi", "requestPolicy": policy}})])
    for name in "abcd":
        result = defaulted.allocate(no_gpu_node(), [claim(name, exactly())])
        assert result.claims[f"default/{name}"].results["cpu-only"][0][2] == {
            "memory": Fraction(4 * GI)
        }
        defaulted.commit(result)
    with pytest.raises(AllocationError, match=NONE_FITS):
        defaulted.allocate(no_gpu_node(), [claim("e", exactly())])


@pytest.mark.parametrize(
    ("policy", "asked", "taken"),
    [
        # Up to the next step above min, and min itself for less.
        ({"default": "1Gi", "validRange": {"min": "1Gi", "step": "2Gi"}}, "2Gi", 3 * GI),
        ({"default": "1Gi", "validRange": {"min": "1Gi", "step": "2Gi"}}, "100Mi", GI),
        # Any amount above min when there is no step.
        ({"default": "1Gi", "validRange": {"min": "1Gi"}}, "1500Mi", 1500 * 2**20),
        # The first valid value not below the amount.
        ({"default": "4Gi", "validValues": ["4Gi", "8Gi", "16Gi"]}, "5Gi", 8 * GI),
    ],
)
def test_a_share_is_rounded_up_by_the_request_policy(
    policy: dict[str, Any], asked: str, taken: int
) -> None:
    allocator = Allocator([shared_slice({"memory": {"value": "16Gi", "requestPolicy": policy}})])
    result = allocator.allocate(no_gpu_node(), [claim("a", exactly(**memory(asked)))])
    assert result.claims["default/a"].results["cpu-only"][0][2] == {"memory": Fraction(taken)}


@pytest.mark.parametrize(
    ("capacity", "asked"),
    [
        # Above the range's max, or beyond every valid value: the policy is broken.
        (
            {
                "value": "16Gi",
                "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "max": "4Gi"}},
            },
            memory("5Gi"),
        ),
        (
            {"value": "16Gi", "requestPolicy": {"default": "4Gi", "validValues": ["4Gi"]}},
            memory("5Gi"),
        ),
        # More than the device has at all.
        ({"value": "16Gi"}, memory("17Gi")),
        # A capacity the device lacks.
        ({"value": "16Gi"}, {"capacity": {"requests": {"cores": "1"}}}),
    ],
)
def test_a_request_the_shared_device_cannot_meet_matches_nothing(
    capacity: dict[str, Any], asked: dict[str, Any]
) -> None:
    allocator = Allocator([shared_slice({"memory": capacity})])
    with pytest.raises(AllocationError, match=NONE_FITS):
        allocator.allocate(no_gpu_node(), [claim("a", exactly(**asked))])


def test_shares_held_in_the_cluster_count_and_a_leaving_pods_share_is_given_back() -> None:
    def allocated(name: str, amount: str, uid: str) -> Any:
        return claim(
            name,
            exactly(**memory(amount)),
            status={
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "request": "gpu",
                                "driver": GPU,
                                "pool": "shared",
                                "device": "gpu-0",
                                "shareID": "6a4a2b0e-0d3c-4c55-9f7b-1a8d1f3b6f10",
                                "consumedCapacity": {"memory": amount},
                            }
                        ]
                    }
                },
                "reservedFor": [{"resource": "pods", "name": uid, "uid": uid}],
            },
        )

    claims = [allocated("live", "4Gi", "u-live"), allocated("leaving", "10Gi", "u-leaving")]
    slices = [shared_slice({"memory": {"value": "16Gi"}})]
    staying = held_devices(claims, frozenset())
    assert staying.shared == {SHARED: {"memory": Fraction(14 * GI)}}
    with pytest.raises(AllocationError, match=NONE_FITS):
        Allocator(slices, staying).allocate(
            no_gpu_node(), [claim("new", exactly(**memory("10Gi")))]
        )
    # The leaving pod's 10Gi come back; the live pod's 4Gi stay held.
    moving = held_devices(claims, frozenset({"u-leaving"}))
    assert moving == HeldDevices(frozenset(), {SHARED: {"memory": Fraction(4 * GI)}})
    allocator = Allocator(slices, moving)
    assert allocator.allocate(no_gpu_node(), [claim("new", exactly(**memory("12Gi")))])
    with pytest.raises(AllocationError, match=NONE_FITS):
        allocator.allocate(no_gpu_node(), [claim("new", exactly(**memory("13Gi")))])


def test_a_shared_template_device_is_shared_by_the_pods_of_its_node_claim_only() -> None:
    device = Device("gpu-0", capacity={"memory": "16Gi"}, allow_multiple_allocations=True)
    templates: dict[str, tuple[ResourceSliceTemplate, ...]] = {
        "shared-gpu": (ResourceSliceTemplate(GPU, "gpus", (device,)),)
    }
    allocator = Allocator([])
    for name in ("a", "b"):
        result = allocator.allocate(new_claim(templates), [claim(name, exactly(**memory("8Gi")))])
        allocator.commit(result)
    with pytest.raises(AllocationError, match=NONE_FITS):
        allocator.allocate(new_claim(templates), [claim("c", exactly(**memory("1Gi")))])
    other = new_claim(templates, "placeholder-2")
    assert allocator.allocate(other, [claim("c", exactly(**memory("16Gi")))]).instance_types


def test_a_node_claim_holds_the_largest_share_any_of_its_instance_types_takes() -> None:
    # Both instance types take 10Gi of the published shared device; only one will launch, so
    # the NodeClaim holds 10Gi, not 20Gi, until its instance types are dropped.
    templates: dict[str, tuple[ResourceSliceTemplate, ...]] = {"small": (), "big": ()}
    allocator = Allocator([shared_slice({"memory": {"value": "16Gi"}})])
    first = allocator.allocate(new_claim(templates), [claim("a", exactly(**memory("10Gi")))])
    assert first.instance_types == ("small", "big")
    allocator.commit(first)
    other = new_claim({"cpu-only": ()}, "placeholder-2")
    assert allocator.allocate(other, [claim("b", exactly(**memory("6Gi")))]).instance_types
    with pytest.raises(AllocationError, match=NONE_FITS):
        allocator.allocate(other, [claim("b", exactly(**memory("7Gi")))])
    allocator.release("placeholder-1", ["small"])
    with pytest.raises(AllocationError, match=NONE_FITS):
        allocator.allocate(other, [claim("b", exactly(**memory("7Gi")))])
    allocator.release("placeholder-1", ["big"])
    assert allocator.allocate(other, [claim("b", exactly(**memory("16Gi")))]).instance_types


# -- partitionable devices ------------------------------------------------------------------


def partitions(memory_gb: int = 40) -> ResourceSliceTemplate:
    """A GPU of ``memory_gb`` split three ways: whole, two halves, four quarters."""

    def part(name: str, gb: int) -> Device:
        return Device(
            name,
            {"profile": name.split("-", maxsplit=1)[0]},
            consumes_counters=(CounterConsumption("gpu-0", {"memory": f"{gb}Gi"}),),
        )

    quarter, half = memory_gb // 4, memory_gb // 2
    devices = (
        part("whole-0", memory_gb),
        *(part(f"half-{i}", half) for i in range(2)),
        *(part(f"quarter-{i}", quarter) for i in range(4)),
    )
    return ResourceSliceTemplate(
        GPU, "gpus", devices, shared_counters=(CounterSet("gpu-0", {"memory": f"{memory_gb}Gi"}),)
    )


def profile(name: str) -> dict[str, Any]:
    return exactly(
        selectors=[{"cel": {"expression": f'device.attributes["{GPU}"].profile == "{name}"'}}]
    )


def test_partitions_are_allocated_while_their_counters_last() -> None:
    templates: dict[str, tuple[ResourceSliceTemplate, ...]] = {"a100": (partitions(),)}
    allocator = Allocator([])
    # A half and two quarters use up 40Gi: nothing more fits on this NodeClaim.
    for name, wanted in (("a", "half"), ("b", "quarter"), ("c", "quarter")):
        result = allocator.allocate(new_claim(templates), [claim(name, profile(wanted))])
        allocator.commit(result)
    for wanted in ("quarter", "half", "whole"):
        with pytest.raises(AllocationError, match=NONE_FITS):
            allocator.allocate(new_claim(templates), [claim("d", profile(wanted))])
    # The whole GPU fits a NodeClaim of its own.
    other = new_claim(templates, "placeholder-2")
    assert allocator.allocate(other, [claim("d", profile("whole"))]).instance_types


def test_one_claim_cannot_take_more_partitions_than_the_counters_allow() -> None:
    templates: dict[str, tuple[ResourceSliceTemplate, ...]] = {"a100": (partitions(),)}
    with pytest.raises(AllocationError, match=NONE_FITS):
        Allocator([]).allocate(
            new_claim(templates),
            [claim("a", profile("half") | {"exactly": {**profile("half")["exactly"], "count": 3}})],
        )
    four = profile("quarter")
    four["exactly"]["count"] = 4
    assert Allocator([]).allocate(new_claim(templates), [claim("a", four)]).instance_types


def published_partitions(held: frozenset[DeviceID] = frozenset()) -> list[PublishedSlice]:
    template = partitions()
    counters = published_slice(
        ResourceSlice.model_validate(
            {
                "metadata": {"name": "counters"},
                "spec": {
                    "driver": GPU,
                    "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 2},
                    "allNodes": True,
                    "sharedCounters": [
                        {"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}
                    ],
                },
            }
        )
    )
    devices = published_slice(
        ResourceSlice.model_validate(
            {
                "metadata": {"name": "devices"},
                "spec": {
                    "driver": GPU,
                    "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 2},
                    "allNodes": True,
                    "devices": [
                        {
                            "name": d.name,
                            "attributes": {"profile": {"string": d.attributes["profile"]}},
                            "consumesCounters": [
                                {
                                    "counterSet": "gpu-0",
                                    "counters": {
                                        k: {"value": v}
                                        for k, v in d.consumes_counters[0].counters.items()
                                    },
                                }
                            ],
                        }
                        for d in template.devices
                    ],
                },
            }
        )
    )
    return [counters, devices]


def test_partitions_held_in_the_cluster_draw_on_the_published_counters() -> None:
    held = HeldDevices(frozenset({DeviceID(GPU, "pool", "half-0")}))
    allocator = Allocator(published_partitions(), held)
    with pytest.raises(AllocationError, match=NONE_FITS):
        allocator.allocate(no_gpu_node(), [claim("a", profile("whole"))])
    result = allocator.allocate(no_gpu_node(), [claim("a", profile("half"))])
    assert result.devices["cpu-only"] == [(DeviceID(GPU, "pool", "half-1"), False)]
    allocator.commit(result)
    with pytest.raises(AllocationError, match=NONE_FITS):
        allocator.allocate(no_gpu_node(), [claim("b", profile("quarter"))])


def test_a_pool_whose_devices_draw_on_an_unknown_counter_set_is_not_used() -> None:
    counters, devices = published_partitions()
    renamed = PublishedSlice(
        **{**counters.__dict__, "shared_counters": (CounterSet("other", {"memory": "40Gi"}),)}
    )
    with pytest.raises(AllocationError, match=NONE_FITS):
        Allocator([renamed, devices]).allocate(no_gpu_node(), [claim("a", profile("quarter"))])
