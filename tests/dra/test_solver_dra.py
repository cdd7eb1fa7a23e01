"""The solver with DRA allocation on (``IGNORE_DRA_REQUESTS=false``), as Karpenter's
``provisioning/dra_test.go`` has it: which NodeClaims open, with which instance types, where
the pods go, and the errors of pods whose claims cannot be met."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nodewright.api.labels import INSTANCE_TYPE_LABEL, NODEPOOL_LABEL, ZONE_LABEL
from nodewright.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from nodewright.scheduling.dra.claims import ClaimSpec, read_claim
from nodewright.scheduling.dra.cluster import HeldDevices
from nodewright.scheduling.dra.devices import DeviceID
from nodewright.scheduling.dra.pools import published_slice
from nodewright.scheduling.model import ExistingNode, PodRequest
from nodewright.scheduling.resources import resources
from nodewright.scheduling.solver.devices import DeviceFacts
from nodewright.scheduling.solver.scheduler import solve
from nodewright.testing.catalog import GPU_DRIVER, fake_instance_type, gpu_instance_type
from tests.scheduling.scheduling_fakes import node_pool, pod

CLASSES = {
    "gpu": DeviceClass.model_validate(
        {
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
        }
    )
}


def gpu_claim(name: str, count: int = 1, **status: Any) -> ClaimSpec:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}]
            }
        },
    }
    if status:
        body["status"] = status
    return read_claim(ResourceClaim.model_validate(body), CLASSES)


def gpu_pod(*claims: ClaimSpec, cpu: str = "1") -> PodRequest:
    return replace(pod(cpu), dynamic_resources=True, claims=claims)


CATALOG = (
    fake_instance_type("cpu-only"),
    gpu_instance_type("one-gpu", 1),
    gpu_instance_type("two-gpu", 2, cpu="8", memory="8Gi"),
)
POOL = node_pool(instance_types=CATALOG)


def test_a_pod_with_a_claim_gets_a_node_claim_of_the_types_offering_the_device() -> None:
    result = solve([gpu_pod(gpu_claim("c"))], [], [POOL], devices=DeviceFacts())
    (claim,) = result.new_node_claims
    assert [it.name for it in claim.instance_types] == ["one-gpu", "two-gpu"]
    assert claim.dra_drivers == (GPU_DRIVER,)
    plain = solve([pod("1")], [], [POOL], devices=DeviceFacts())
    (other,) = plain.new_node_claims
    assert other.dra_drivers == ()
    assert "cpu-only" in [it.name for it in other.instance_types]


def test_pods_share_a_node_claim_while_its_types_have_devices_left() -> None:
    pods = [gpu_pod(gpu_claim(f"c{i}")) for i in range(3)]
    result = solve(pods, [], [POOL], devices=DeviceFacts())
    by_size = sorted(result.new_node_claims, key=lambda c: len(c.pods))
    assert [len(c.pods) for c in by_size] == [1, 2]
    assert [it.name for it in by_size[1].instance_types] == ["two-gpu"]


def test_without_devices_the_pods_are_skipped_as_karpenter_does_by_default() -> None:
    result = solve([gpu_pod(gpu_claim("c"))], [], [POOL])
    assert result.new_node_claims == []
    (error,) = result.errors.values()
    assert "not yet supported by Karpenter" in error


def test_no_type_offering_the_device_is_an_allocation_error() -> None:
    result = solve(
        [gpu_pod(gpu_claim("c"))],
        [],
        [node_pool(instance_types=CATALOG[:1])],
        devices=DeviceFacts(),
    )
    assert result.new_node_claims == []
    assert list(result.errors.values()) == [
        'incompatible with nodepool "default", allocating dynamic resources, no instance type '
        "can satisfy the allocation"
    ]


def test_a_claim_not_made_yet_is_the_pods_error() -> None:
    waiting = replace(gpu_pod(), claims_problem='resourceclaim "default/x" not found')
    result = solve([waiting], [], [POOL], devices=DeviceFacts())
    assert result.errors == {waiting.key: 'resourceclaim "default/x" not found'}


def _node(name: str, instance_type: str, *, initialized: bool = True) -> ExistingNode:
    return ExistingNode(
        name=name,
        labels={
            INSTANCE_TYPE_LABEL: instance_type,
            NODEPOOL_LABEL: "default",
            ZONE_LABEL: "test-zone-1",
        },
        taints=(),
        allocatable=resources(cpu="8", memory="8Gi", pods=10),
        requested={},
        initialized=initialized,
        node_pool="default",
        node_claim=name,
    )


def _node_slice(node: str, *devices: str) -> Any:
    return published_slice(
        ResourceSlice.model_validate(
            {
                "metadata": {
                    "name": node,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node}
                    ],
                },
                "spec": {
                    "driver": GPU_DRIVER,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
                    "devices": [{"name": d} for d in devices],
                },
            }
        )
    )


def test_an_existing_node_with_a_free_published_device_takes_the_pod() -> None:
    facts = DeviceFacts(slices=(_node_slice("gpu-node", "gpu-0"),))
    result = solve([gpu_pod(gpu_claim("c"))], [_node("gpu-node", "one-gpu")], [POOL], devices=facts)
    assert list(result.existing_nodes) == ["gpu-node"]
    assert result.new_node_claims == []


def test_an_existing_nodes_held_device_sends_the_pod_to_a_new_node() -> None:
    facts = DeviceFacts(
        slices=(_node_slice("gpu-node", "gpu-0"),),
        held=HeldDevices(frozenset({DeviceID(GPU_DRIVER, "gpu-node", "gpu-0")})),
    )
    result = solve([gpu_pod(gpu_claim("c"))], [_node("gpu-node", "one-gpu")], [POOL], devices=facts)
    assert result.existing_nodes == {}
    assert len(result.new_node_claims) == 1


def test_an_uninitialized_node_offers_its_instance_types_devices() -> None:
    node = _node("starting", "one-gpu", initialized=False)
    result = solve([gpu_pod(gpu_claim("c"))], [node], [POOL], devices=DeviceFacts())
    assert list(result.existing_nodes) == ["starting"]


def test_a_claim_allocated_in_a_zone_pins_the_new_node_claim_there() -> None:
    zoned = gpu_claim(
        "c",
        allocation={
            "devices": {
                "results": [{"request": "gpu", "driver": GPU_DRIVER, "pool": "p", "device": "d"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": ZONE_LABEL, "operator": "In", "values": ["test-zone-2"]}
                        ]
                    }
                ]
            },
        },
    )
    result = solve([gpu_pod(zoned)], [], [POOL], devices=DeviceFacts())
    (claim,) = result.new_node_claims
    assert claim.requirements[ZONE_LABEL].values == frozenset({"test-zone-2"})


def test_a_shared_template_claim_keeps_its_pods_together() -> None:
    shared = gpu_claim("shared")
    pods = [gpu_pod(shared), gpu_pod(shared)]
    result = solve(pods, [], [POOL], devices=DeviceFacts())
    (claim,) = result.new_node_claims
    assert len(claim.pods) == 2
