"""Existing nodes whose devices claims in the cluster already partly use: a pod takes what is
left of a node's shared device, or a partition its GPU's counters still pay for, and goes to a
new node (or nowhere) when what is left is too little."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from nodewright.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from nodewright.scheduling.dra.claims import ClaimSpec, read_claim
from nodewright.scheduling.dra.cluster import HeldDevices
from nodewright.scheduling.dra.devices import DeviceID
from nodewright.scheduling.dra.pools import PublishedSlice, published_slice
from nodewright.scheduling.solver.devices import DeviceFacts
from nodewright.scheduling.solver.scheduler import solve
from nodewright.testing.catalog import GPU_DRIVER
from tests.dra.test_solver_dra import POOL, _node, gpu_pod

GI = 2**30
CLASSES = {
    "gpu": DeviceClass.model_validate(
        {
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
        }
    )
}
NODE = "gpu-node"


def _claim(name: str, **exactly: Any) -> ClaimSpec:
    body = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", **exactly}}]
            }
        },
    }
    return read_claim(ResourceClaim.model_validate(body), CLASSES)


def _slice(name: str, spec: dict[str, Any], count: int = 1) -> PublishedSlice:
    return published_slice(
        ResourceSlice.model_validate(
            {
                "metadata": {
                    "name": name,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": NODE}
                    ],
                },
                "spec": {
                    "driver": GPU_DRIVER,
                    "nodeName": NODE,
                    "pool": {"name": NODE, "generation": 0, "resourceSliceCount": count},
                    **spec,
                },
            }
        )
    )


def _shared_node(held: str) -> DeviceFacts:
    """The node's one 16Gi shared GPU, of which claims in the cluster hold ``held``."""
    device = {
        "name": "gpu-0",
        "allowMultipleAllocations": True,
        "capacity": {"memory": {"value": "16Gi"}},
    }
    return DeviceFacts(
        slices=(_slice(NODE, {"devices": [device]}),),
        held=HeldDevices(
            shared={DeviceID(GPU_DRIVER, NODE, "gpu-0"): {"memory": Fraction(held) * GI}}
        ),
    )


def _share(name: str, gib: int) -> ClaimSpec:
    return _claim(name, capacity={"requests": {"memory": f"{gib}Gi"}})


def test_a_pod_takes_what_is_left_of_an_existing_nodes_shared_device() -> None:
    result = solve(
        [gpu_pod(_share("c", 6))], [_node(NODE, "one-gpu")], [POOL], devices=_shared_node("10")
    )
    assert list(result.existing_nodes) == [NODE]
    assert result.new_node_claims == []


def test_a_share_larger_than_what_is_left_goes_to_a_new_node() -> None:
    result = solve(
        [gpu_pod(_share("c", 7))], [_node(NODE, "one-gpu")], [POOL], devices=_shared_node("10")
    )
    assert result.existing_nodes == {}
    (claim,) = result.new_node_claims
    assert [it.name for it in claim.instance_types] == ["one-gpu", "two-gpu"]


def test_two_pods_split_what_is_left_and_the_third_goes_elsewhere() -> None:
    pods = [gpu_pod(_share(f"c{i}", 3)) for i in range(3)]
    result = solve(pods, [_node(NODE, "one-gpu")], [POOL], devices=_shared_node("10"))
    assert [len(p) for p in result.existing_nodes.values()] == [2]
    assert len(result.new_node_claims) == 1


def _partitioned_node(*held: str) -> DeviceFacts:
    """The node's 40Gi GPU as a whole, two halves and four quarters; claims hold ``held``."""

    def part(name: str, gib: int) -> dict[str, Any]:
        return {
            "name": name,
            "attributes": {"profile": {"string": name.split("-", maxsplit=1)[0]}},
            "consumesCounters": [
                {"counterSet": "gpu", "counters": {"memory": {"value": f"{gib}Gi"}}}
            ],
        }

    parts = [part("whole-0", 40), part("half-0", 20), part("half-1", 20)]
    parts += [part(f"quarter-{i}", 10) for i in range(4)]
    counters = {"sharedCounters": [{"name": "gpu", "counters": {"memory": {"value": "40Gi"}}}]}
    return DeviceFacts(
        slices=(
            _slice(f"{NODE}-counters", counters, 2),
            _slice(NODE, {"devices": parts}, 2),
        ),
        held=HeldDevices(frozenset(DeviceID(GPU_DRIVER, NODE, d) for d in held)),
    )


def _profile(name: str, profile: str) -> ClaimSpec:
    expression = f'device.attributes["{GPU_DRIVER}"].profile == "{profile}"'
    return _claim(name, selectors=[{"cel": {"expression": expression}}])


def test_a_partition_its_gpus_counters_still_pay_for_lands_on_the_existing_node() -> None:
    pods = [gpu_pod(_profile("q0", "quarter")), gpu_pod(_profile("q1", "quarter"))]
    result = solve(pods, [_node(NODE, "one-gpu")], [POOL], devices=_partitioned_node("half-0"))
    assert [len(p) for p in result.existing_nodes.values()] == [2]
    assert result.new_node_claims == []


def test_a_partition_the_counters_no_longer_pay_for_schedules_nowhere() -> None:
    # quarter-2 and quarter-3 are free, but half-0 and two quarters use all 40Gi; no instance
    # type offers partitions, so the pod fails as Karpenter says.
    quarter = gpu_pod(_profile("q", "quarter"))
    facts = _partitioned_node("half-0", "quarter-0", "quarter-1")
    result = solve([quarter], [_node(NODE, "one-gpu")], [POOL], devices=facts)
    assert result.existing_nodes == {}
    assert result.new_node_claims == []
    assert result.errors == {
        quarter.key: 'incompatible with nodepool "default", allocating dynamic resources, no '
        "instance type can satisfy the allocation"
    }
