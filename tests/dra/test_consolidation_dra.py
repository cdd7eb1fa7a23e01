"""Consolidation of nodes whose pods hold DRA devices (``IGNORE_DRA_REQUESTS=false``), after
the cases of Karpenter's ``disruption/consolidation_dra_test.go``, run through the whole
operator: the candidates' devices leave with them and their pods' claims are allocated again,
from a replacement's devices or a free device of a node that stays; a device a staying pod
holds is never given to another, so a pod is not moved to a node without a free device; and a
claim a staying pod shares keeps its device, wherever the leaving pod goes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodewright.api.core import Node, Pod
from nodewright.api.labels import DO_NOT_DISRUPT_ANNOTATION, INSTANCE_TYPE_LABEL
from nodewright.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from nodewright.controllers.options import Options
from nodewright.testing.catalog import GPU_DRIVER
from tests.disruption.harness import Harness
from tests.dra.builders import allocated_claim, claim_spec

DRIVER = GPU_DRIVER


def _type(name: str, cpu: int, price: float, gpus: int = 0) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": str(cpu), "memory": f"{cpu * 2}Gi", "pods": "20"},
        "offerings": [{"zone": "test-zone-1", "capacityType": "on-demand", "price": price}],
    }
    if gpus:
        devices = [{"name": f"gpu-{i}"} for i in range(gpus)]
        entry["dynamicResources"] = {
            "resourceSlices": [{"driver": DRIVER, "pool": "gpus", "devices": devices}]
        }
    return entry


CPU_ONLY = _type("c-4x", 4, 0.1)
ONE_GPU = _type("g1-4x", 4, 1.0, gpus=1)
#: Cheaper than two one-GPU nodes.
TWO_GPU = _type("g2-8x", 8, 1.5, gpus=2)

#: The claim the ReplicaSet's new pods get in place of one that leaves.
TEMPLATE_CLAIMS = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}


def _harness(tmp_path: Path, *types: dict[str, Any]) -> Harness:
    harness = Harness(tmp_path, types=list(types), options=Options(dra=True))
    harness.cluster.create(
        DeviceClass.model_validate(
            {
                "metadata": {"name": "gpu"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            }
        )
    )
    harness.cluster.create(
        ResourceClaimTemplate.model_validate(
            {
                "metadata": {"name": "one-gpu", "namespace": "default"},
                "spec": {"spec": claim_spec()},
            }
        )
    )
    return harness


def _gpu_pod(
    harness: Harness, node: str, claim: str, *, owner: str = "trainer", **annotations: str
) -> Pod:
    """A running pod of ReplicaSet ``owner`` on ``node`` using the named claim ``claim``."""
    (name,) = harness.bind_pods(
        node,
        owner=owner,
        annotations=annotations,
        spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]},
        template_spec=TEMPLATE_CLAIMS,
    )
    pod = harness.cluster.get(Pod, name, "default")
    assert pod is not None
    return pod


def _gpu_node_with_pod(harness: Harness, instance_type: str, claim: str) -> str:
    """A node of ``instance_type`` running a pod that holds the node's first GPU."""
    node = harness.node(instance_type)
    pod = _gpu_pod(harness, node, claim)
    result = {"pool": _node_pool(harness, node), "device": "gpu-0"}
    allocated_claim(harness, claim, result, [pod], node=node)
    return node


def _node_pool(harness: Harness, node: str) -> str:
    (pool,) = {
        s.spec.pool.name
        for s in harness.cluster.list(ResourceSlice)
        if s.spec.node_name == node and s.spec.driver == DRIVER
    }
    return pool


def _instance_types(harness: Harness) -> list[str]:
    return sorted(n.metadata.labels[INSTANCE_TYPE_LABEL] for n in harness.cluster.list(Node))


def test_two_gpu_nodes_merge_into_one_node_with_two_gpus(tmp_path: Path) -> None:
    # Karpenter: "re-allocates devices from multiple candidate nodes onto one replacement".
    harness = _harness(tmp_path, CPU_ONLY, ONE_GPU, TWO_GPU)
    first = _gpu_node_with_pod(harness, "g1-4x", "gpu-a")
    second = _gpu_node_with_pod(harness, "g1-4x", "gpu-b")
    harness.run(120)
    (node,) = harness.cluster.list(Node)
    assert node.name not in {first, second}
    assert _instance_types(harness) == ["g2-8x"]
    # The trainers' new pods run there, each with a GPU of the new node.
    pods = [p for p in harness.cluster.list(Pod) if p.name.startswith("trainer-")]
    assert [p.spec.node_name for p in pods] == [node.name, node.name]
    devices = set()
    for claim in harness.cluster.list(ResourceClaim):
        if claim.status.allocation is not None and claim.status.reserved_for:
            (result,) = claim.status.allocation.devices.results
            assert result.pool == _node_pool(harness, node.name)
            devices.add(result.device)
    assert devices == {"gpu-0", "gpu-1"}


def test_a_pod_is_not_moved_to_a_node_whose_device_another_pod_holds(tmp_path: Path) -> None:
    # Each one-GPU node has CPU for both trainers, but its GPU is taken: deleting either
    # would leave its trainer without a device, no type has two GPUs to merge them onto,
    # and a CPU-only replacement offers none.
    harness = _harness(tmp_path, CPU_ONLY, ONE_GPU)
    first = _gpu_node_with_pod(harness, "g1-4x", "gpu-a")
    second = _gpu_node_with_pod(harness, "g1-4x", "gpu-b")
    harness.run(120)
    assert harness.node_names() == {first, second}
    assert harness.event_log("DisruptionTerminating") == []
    assert (f"node/{first}", "Can't replace with a cheaper node") in harness.event_log(
        "Unconsolidatable"
    )


def test_a_pod_moves_to_a_node_with_a_free_device(tmp_path: Path) -> None:
    # The same two nodes, but the second one's GPU is free (its pod, which may not be
    # disrupted, holds none): the first node goes and its trainer takes that GPU.
    harness = _harness(tmp_path, CPU_ONLY, ONE_GPU)
    first = _gpu_node_with_pod(harness, "g1-4x", "gpu-a")
    second = harness.node("g1-4x")
    harness.bind_pods(second, owner="keeper", annotations={DO_NOT_DISRUPT_ANNOTATION: "true"})
    harness.run(120)
    assert harness.node_names() == {second}
    assert (f"node/{first}", "Disrupting Node: Consolidation/Delete") in harness.event_log(
        "DisruptionTerminating"
    )
    (trainer,) = [p for p in harness.cluster.list(Pod) if p.name.startswith("trainer-")]
    assert trainer.spec.node_name == second
    (claim,) = [c for c in harness.cluster.list(ResourceClaim) if c.status.reserved_for]
    assert claim.status.allocation is not None
    (result,) = claim.status.allocation.devices.results
    assert (result.pool, result.device) == (_node_pool(harness, second), "gpu-0")


#: The allocation of the shared GPU below.
SHARED_GPU = {"pool": "shared", "device": "gpu-0"}


def _shared_gpu(harness: Harness) -> None:
    """A GPU every node reaches (a network-attached device, say), published by no node."""
    harness.cluster.create(
        ResourceSlice.model_validate(
            {
                "metadata": {"name": "shared"},
                "spec": {
                    "driver": DRIVER,
                    "pool": {"name": "shared", "generation": 0, "resourceSliceCount": 1},
                    "allNodes": True,
                    "devices": [{"name": "gpu-0"}],
                },
            }
        )
    )


def test_a_claim_shared_with_a_pod_that_stays_keeps_its_device(tmp_path: Path) -> None:
    # One claim on the one shared GPU, reserved by a pod that stays and by the candidate's
    # pod: the GPU stays allocated, so the candidate's pod needs no device of its own and
    # its node goes.
    harness = _harness(tmp_path, CPU_ONLY)
    _shared_gpu(harness)
    staying = harness.node("c-4x")
    leaving = harness.node("c-4x")
    keeper = _gpu_pod(
        harness, staying, "shared", owner="keeper", **{DO_NOT_DISRUPT_ANNOTATION: "true"}
    )
    mover = _gpu_pod(harness, leaving, "shared")
    allocated_claim(harness, "shared", SHARED_GPU, [keeper, mover])
    harness.run(120)
    assert harness.node_names() == {staying}
    assert (f"node/{leaving}", "Disrupting Node: Consolidation/Delete") in harness.event_log(
        "DisruptionTerminating"
    )


def test_a_claim_on_a_device_a_staying_pod_holds_cannot_move(tmp_path: Path) -> None:
    # Karpenter: "does not free a device held by a live pod on a non-candidate node". The
    # candidate's own claim is on the one shared GPU, which a pod that stays holds too: its
    # claim would have to be allocated again, and no device is free.
    harness = _harness(tmp_path, CPU_ONLY)
    _shared_gpu(harness)
    staying = harness.node("c-4x")
    leaving = harness.node("c-4x")
    keeper = _gpu_pod(
        harness, staying, "held", owner="keeper", **{DO_NOT_DISRUPT_ANNOTATION: "true"}
    )
    allocated_claim(harness, "held", SHARED_GPU, [keeper])
    mover = _gpu_pod(harness, leaving, "mine")
    allocated_claim(harness, "mine", SHARED_GPU, [mover])
    harness.run(120)
    assert harness.node_names() == {staying, leaving}
