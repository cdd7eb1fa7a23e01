"""The device allocator decides as Karpenter's does: which instance types can meet a pod's
claims, which devices it takes, which node requirements follow, and why not when it cannot
(cases after Karpenter's ``provisioning/dra_test.go`` and ``scheduling/dynamicresources``
tests)."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from nodewright.scheduling.dra.allocator import Allocator, Target
from nodewright.scheduling.dra.claims import ClaimSpec, read_claim
from nodewright.scheduling.dra.cluster import HeldDevices
from nodewright.scheduling.dra.constraints import build_bindings
from nodewright.scheduling.dra.devices import (
    AttributeBinding,
    Device,
    DeviceID,
    DynamicResources,
    ResourceSliceTemplate,
)
from nodewright.scheduling.dra.pools import PublishedSlice, published_slice
from nodewright.scheduling.dra.search import AllocationError
from nodewright.scheduling.requirements import Requirements

GPU = "gpu.example.com"
NIC = "nic.example.com"
ZONE = "topology.kubernetes.io/zone"

CLASSES = {
    "gpu": DeviceClass.model_validate(
        {
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]},
        }
    ),
    "nic": DeviceClass.model_validate(
        {
            "metadata": {"name": "nic"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{NIC}"'}}]},
        }
    ),
}


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
) -> ClaimSpec:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": list(requests), "constraints": constraints or []}},
    }
    if status is not None:
        body["status"] = status
    return read_claim(ResourceClaim.model_validate(body), CLASSES)


def exactly(name: str = "gpu", device_class: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": device_class, **fields}}


def gpus(count: int, pool: str = "node-gpus", **attributes: Any) -> ResourceSliceTemplate:
    return ResourceSliceTemplate(
        GPU, pool, tuple(Device(f"gpu-{i}", dict(attributes)) for i in range(count))
    )


def new_claim(
    templates: dict[str, tuple[ResourceSliceTemplate, ...]],
    name: str = "placeholder-1",
    requirements: Requirements | None = None,
) -> Target:
    return Target(
        id=name,
        node_pool="default",
        requirements=requirements or Requirements(),
        instance_types=tuple(templates),
        templates=templates,
    )


def slice_(name: str, driver: str, pool: str, *devices: str, **reach: Any) -> PublishedSlice:
    return published_slice(
        ResourceSlice.model_validate(
            {
                "metadata": {"name": name},
                "spec": {
                    "driver": driver,
                    "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": d} for d in devices],
                    **reach,
                },
            }
        )
    )


def test_only_instance_types_offering_the_device_survive() -> None:
    target = new_claim({"cpu-only": (), "one-gpu": (gpus(1),)})
    result = Allocator([]).allocate(target, [claim("c", exactly())])
    assert result.instance_types == ("one-gpu",)
    assert result.devices["one-gpu"] == [(DeviceID(GPU, "node-gpus", "gpu-0"), True)]


def test_devices_taken_by_earlier_pods_of_the_node_claim_are_not_reused() -> None:
    allocator = Allocator([])
    target = new_claim({"two-gpu": (gpus(2),)})
    for index in range(2):
        result = allocator.allocate(target, [claim(f"c{index}", exactly())])
        assert result.devices["two-gpu"] == [(DeviceID(GPU, "node-gpus", f"gpu-{index}"), True)]
        allocator.commit(result)
    with pytest.raises(AllocationError, match="no instance type can satisfy the allocation"):
        allocator.allocate(target, [claim("c2", exactly())])
    # A second NodeClaim has devices of its own.
    other = allocator.allocate(
        new_claim({"two-gpu": (gpus(2),)}, "placeholder-2"), [claim("c2", exactly())]
    )
    assert other.instance_types == ("two-gpu",)


def test_count_and_all_modes() -> None:
    target = new_claim({"two": (gpus(2),), "four": (gpus(4),)})
    three = Allocator([]).allocate(target, [claim("c", exactly(count=3))])
    assert three.instance_types == ("four",)
    every = Allocator([]).allocate(target, [claim("c", exactly(allocationMode="All"))])
    assert {t: len(d) for t, d in every.devices.items()} == {"two": 2, "four": 4}


def test_match_attribute_picks_devices_sharing_the_value() -> None:
    templates = (
        ResourceSliceTemplate(
            GPU,
            "gpus",
            (
                Device("gpu-0", {"pci.example.com/root": "a"}),
                Device("gpu-1", {"pci.example.com/root": "b"}),
            ),
        ),
        ResourceSliceTemplate(NIC, "nics", (Device("nic-0", {"pci.example.com/root": "b"}),)),
    )
    result = Allocator([]).allocate(
        new_claim({"box": templates}),
        [
            claim(
                "c",
                exactly("gpu", "gpu"),
                exactly("nic", "nic"),
                constraints=[{"matchAttribute": "pci.example.com/root"}],
            )
        ],
    )
    assert [d.device for d, _ in result.devices["box"]] == ["gpu-1", "nic-0"]


def test_attribute_bindings_meet_a_constraint_on_a_runtime_attribute() -> None:
    templates = (gpus(2), ResourceSliceTemplate(NIC, "nics", (Device("nic-0"),)))
    bound = DynamicResources(
        templates,
        (
            AttributeBinding(
                "pci.example.com/root",
                (DeviceID(GPU, "node-gpus", "gpu-1"), DeviceID(NIC, "nics", "nic-0")),
            ),
        ),
    )
    request = [
        claim(
            "c",
            exactly("gpu", "gpu"),
            exactly("nic", "nic"),
            constraints=[{"matchAttribute": "pci.example.com/root"}],
        )
    ]
    without = Allocator([])
    with pytest.raises(AllocationError):
        without.allocate(new_claim({"box": templates}), request)
    with_bindings = Allocator([], bindings=build_bindings({"default": [("box", bound)]}))
    result = with_bindings.allocate(new_claim({"box": templates}), request)
    assert [d.device for d, _ in result.devices["box"]] == ["gpu-1", "nic-0"]


def test_a_zoned_published_device_pins_the_node_claim_to_its_zone() -> None:
    zoned = slice_(
        "s",
        GPU,
        "zonal",
        "gpu-a",
        nodeSelector={
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a"]}]}
            ]
        },
    )
    target = new_claim(
        {"cpu": ()}, requirements=Requirements.of((ZONE, "In", ["zone-a", "zone-b"]))
    )
    result = Allocator([zoned]).allocate(target, [claim("c", exactly())])
    assert result.devices["cpu"] == [(DeviceID(GPU, "zonal", "gpu-a"), False)]
    assert result.requirements[ZONE].values == frozenset({"zone-a"})
    out_of_reach = new_claim({"cpu": ()}, requirements=Requirements.of((ZONE, "In", ["zone-b"])))
    with pytest.raises(AllocationError):
        Allocator([zoned]).allocate(out_of_reach, [claim("c", exactly())])


def test_a_node_pinned_slice_serves_only_its_node() -> None:
    pinned = slice_("s", GPU, "node-a", "gpu-0", nodeName="node-a")
    node = Target("node-a", "default", Requirements(), ("box",), node_name="node-a")
    assert Allocator([pinned]).allocate(node, [claim("c", exactly())]).instance_types == ("box",)
    with pytest.raises(AllocationError):
        Allocator([pinned]).allocate(new_claim({"box": ()}), [claim("c", exactly())])


def test_published_devices_come_before_templates_and_held_ones_are_skipped() -> None:
    shared = slice_("s", GPU, "shared", "gpu-x", allNodes=True)
    target = new_claim({"box": (gpus(1),)})
    first = Allocator([shared]).allocate(target, [claim("c", exactly())])
    assert first.devices["box"] == [(DeviceID(GPU, "shared", "gpu-x"), False)]
    held = Allocator([shared], HeldDevices(frozenset({DeviceID(GPU, "shared", "gpu-x")})))
    assert held.allocate(target, [claim("c", exactly())]).devices["box"][0][1] is True


def test_a_claim_allocated_in_the_cluster_narrows_and_is_not_searched() -> None:
    allocated = claim(
        "c",
        exactly(),
        status={
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": GPU, "pool": "p", "device": "d"}]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE, "operator": "In", "values": ["zone-a"]}
                            ]
                        }
                    ]
                },
            }
        },
    )
    result = Allocator([]).allocate(new_claim({"cpu": ()}), [allocated])
    assert result.instance_types == ("cpu",)
    assert result.requirements[ZONE].values == frozenset({"zone-a"})
    elsewhere = new_claim({"cpu": ()}, requirements=Requirements.of((ZONE, "In", ["zone-b"])))
    with pytest.raises(AllocationError, match="in-cluster allocation topology is incompatible"):
        Allocator([]).allocate(elsewhere, [allocated])


def test_a_claim_held_only_by_leaving_pods_is_allocated_again() -> None:
    moving = claim(
        "c",
        exactly(),
        status={
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": GPU, "pool": "p", "device": "d"}]
                }
            },
            "reservedFor": [{"resource": "pods", "name": "old", "uid": "uid-old"}],
        },
    )
    target = new_claim({"cpu": (), "gpu": (gpus(1),)})
    staying = Allocator([]).allocate(target, [moving])
    assert staying.instance_types == ("cpu", "gpu")
    assert not staying.devices
    leaving = Allocator([], deleting_pods=frozenset({"uid-old"})).allocate(target, [moving])
    assert leaving.instance_types == ("gpu",)


def test_a_shared_claim_on_a_template_device_binds_later_pods_to_its_node_claim() -> None:
    allocator = Allocator([])
    first = new_claim({"gpu": (gpus(1),)}, "placeholder-1")
    allocator.commit(allocator.allocate(first, [claim("shared", exactly())]))
    assert allocator.allocate(first, [claim("shared", exactly())]).devices == {}
    with pytest.raises(AllocationError, match="bound to a different in-flight NodeClaim"):
        allocator.allocate(
            new_claim({"gpu": (gpus(1),)}, "placeholder-2"), [claim("shared", exactly())]
        )


def test_released_instance_types_give_published_devices_back() -> None:
    shared = slice_("s", GPU, "shared", "gpu-x", allNodes=True)
    allocator = Allocator([shared])
    allocator.commit(allocator.allocate(new_claim({"a": (), "b": ()}), [claim("c1", exactly())]))
    other = new_claim({"a": ()}, "placeholder-2")
    with pytest.raises(AllocationError):
        allocator.allocate(other, [claim("c2", exactly())])
    allocator.release("placeholder-1", ["a", "b"])
    assert allocator.allocate(other, [claim("c2", exactly())]).instance_types == ("a",)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (exactly(device_class="missing"), 'DeviceClass "missing" not found'),
        (
            {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "gpu"}]},
            "only Exactly requests are supported",
        ),
        (exactly(selectors=[{"cel": {"expression": "device.colour == 1"}}]), "failed to compile"),
        (
            exactly(selectors=[{"cel": {"expression": 'timestamp("x") == 1'}}]),
            "not supported by nodewright",
        ),
        (exactly(count=33), "exceeding maximum of 32"),
    ],
)
def test_claims_it_cannot_allocate_say_why(request_: dict[str, Any], message: str) -> None:
    with pytest.raises(AllocationError, match=message) as caught:
        Allocator([]).allocate(new_claim({"gpu": (gpus(1),)}), [claim("c", request_)])
    assert str(caught.value).startswith('validating claim "c": ')
