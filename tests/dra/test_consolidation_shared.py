"""Consolidation of nodes whose pods hold a share of a shared device (consumable capacity) or
a partition of a partitionable device, through the whole operator. Karpenter's sixth
``consolidation_dra_test.go`` case: leaving gives back only the candidate's share of a shared
device, so its pod's claim fits again beside the share a staying pod keeps. A partition moves
to a node whose GPU still has counters for it, and not to one whose whole GPU is taken."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodewright.api.core import Pod
from nodewright.api.labels import DO_NOT_DISRUPT_ANNOTATION
from nodewright.api.resource import ResourceClaim, ResourceClaimTemplate, ResourceSlice
from tests.disruption.harness import Harness
from tests.dra.builders import allocated_claim, claim_spec
from tests.dra.test_consolidation_dra import CPU_ONLY, DRIVER, _harness, _node_pool

SHARE_ID = "0b7c7e0e-6f8b-4a3c-9a51-5d2f0c1e9a77"


def _template(harness: Harness, name: str, exactly: dict[str, Any]) -> None:
    harness.cluster.create(
        ResourceClaimTemplate.model_validate(
            {
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"spec": claim_spec(**exactly)},
            }
        )
    )


def _pod(
    harness: Harness, node: str, claim: str, template: str, *, owner: str, **annotations: str
) -> Pod:
    """A running pod of ReplicaSet ``owner`` on ``node`` using claim ``claim``; the pods made
    in its place get theirs from ``template``."""
    (name,) = harness.bind_pods(
        node,
        owner=owner,
        annotations=annotations,
        spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]},
        template_spec={"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]},
    )
    pod = harness.cluster.get(Pod, name, "default")
    assert pod is not None
    return pod


# -- a shared device --------------------------------------------------------------------------


def _share(amount: str) -> dict[str, Any]:
    return {"capacity": {"requests": {"memory": amount}}}


def _shared_device_nodes(tmp_path: Path, live_share: str) -> tuple[Harness, str, str]:
    """A 16Gi shared GPU every node reaches; a pod that stays holds ``live_share`` of it, and
    the candidate's pod 10Gi."""
    harness = _harness(tmp_path, CPU_ONLY)
    harness.cluster.create(
        ResourceSlice.model_validate(
            {
                "metadata": {"name": "shared"},
                "spec": {
                    "driver": DRIVER,
                    "pool": {"name": "shared", "generation": 0, "resourceSliceCount": 1},
                    "allNodes": True,
                    "devices": [
                        {
                            "name": "gpu-0",
                            "allowMultipleAllocations": True,
                            "capacity": {"memory": {"value": "16Gi"}},
                        }
                    ],
                },
            }
        )
    )
    _template(harness, "share-10gi", _share("10Gi"))
    staying = harness.node("c-4x")
    leaving = harness.node("c-4x")
    for node, claim, amount, owner in (
        (staying, "live", live_share, "keeper"),
        (leaving, "candidate", "10Gi", "trainer"),
    ):
        annotations = {DO_NOT_DISRUPT_ANNOTATION: "true"} if owner == "keeper" else {}
        pod = _pod(harness, node, claim, "share-10gi", owner=owner, **annotations)
        result = {
            "pool": "shared",
            "device": "gpu-0",
            "shareID": SHARE_ID,
            "consumedCapacity": {"memory": amount},
        }
        allocated_claim(harness, claim, result, [pod], spec=claim_spec(**_share(amount)))
    return harness, staying, leaving


def test_leaving_gives_back_only_the_candidates_share_of_a_shared_device(
    tmp_path: Path,
) -> None:
    # Karpenter: "reclaims only the candidate's share of a shared device, leaving the live
    # pod's share". 16Gi less the staying pod's 4Gi leaves room for the trainer's 10Gi.
    harness, staying, leaving = _shared_device_nodes(tmp_path, "4Gi")
    harness.run(120)
    assert harness.node_names() == {staying}
    assert (f"node/{leaving}", "Disrupting Node: Consolidation/Delete") in harness.event_log(
        "DisruptionTerminating"
    )
    (trainer,) = [p for p in harness.cluster.list(Pod) if p.name.startswith("trainer-")]
    assert trainer.spec.node_name == staying
    shares = {}
    for claim in harness.cluster.list(ResourceClaim):
        if claim.status.allocation is not None and claim.status.reserved_for:
            (result,) = claim.status.allocation.devices.results
            assert (result.pool, result.device) == ("shared", "gpu-0")
            assert result.share_id
            shares[claim.status.reserved_for[0].name] = result.consumed_capacity
    assert sorted(shares.values(), key=str) == [{"memory": "10Gi"}, {"memory": "4Gi"}]


def test_a_share_that_no_longer_fits_beside_the_staying_share_keeps_its_node(
    tmp_path: Path,
) -> None:
    # The staying pod holds 8Gi: the 8Gi left cannot take the trainer's 10Gi again.
    harness, staying, leaving = _shared_device_nodes(tmp_path, "8Gi")
    harness.run(120)
    assert harness.node_names() == {staying, leaving}
    assert harness.event_log("DisruptionTerminating") == []


# -- a partitionable device -------------------------------------------------------------------


def _partitioned_type() -> dict[str, Any]:
    """An instance type whose GPU splits into a whole, two halves or four quarters, all
    drawing on its 40Gi of memory."""

    def part(name: str, gb: int) -> dict[str, Any]:
        return {
            "name": name,
            "attributes": {"profile": {"string": name.split("-", maxsplit=1)[0]}},
            "consumesCounters": [
                {"counterSet": "gpu-0", "counters": {"memory": {"value": f"{gb}Gi"}}}
            ],
        }

    devices = [part("whole-0", 40), *(part(f"half-{i}", 20) for i in range(2))]
    devices += [part(f"quarter-{i}", 10) for i in range(4)]
    return {
        "name": "a100-4x",
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": "4", "memory": "8Gi", "pods": "20"},
        "offerings": [{"zone": "test-zone-1", "capacityType": "on-demand", "price": 2.0}],
        "dynamicResources": {
            "resourceSlices": [
                {
                    "driver": DRIVER,
                    "pool": "gpus",
                    "sharedCounters": [
                        {"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}
                    ],
                    "devices": devices,
                }
            ]
        },
    }


def _profile(name: str) -> dict[str, Any]:
    return {
        "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].profile == "{name}"'}}]
    }


def _partitioned_nodes(tmp_path: Path, first_holds: str) -> tuple[Harness, str, str]:
    """Two partitioned-GPU nodes: the first's pod holds ``first_holds`` (whole-0 or half-0)
    of its GPU, the second's pod half-0 of its own."""
    harness = _harness(tmp_path, CPU_ONLY, _partitioned_type())
    _template(harness, "one-half", _profile("half"))
    nodes = []
    for index, device in enumerate((first_holds, "half-0")):
        node = harness.node("a100-4x")
        owner = f"trainer{index}"
        claim = f"gpu-{index}"
        pod = _pod(harness, node, claim, "one-half", owner=owner)
        wanted = _profile(device.split("-")[0])
        result = {"pool": _node_pool(harness, node), "device": device}
        allocated_claim(harness, claim, result, [pod], spec=claim_spec(**wanted), node=node)
        nodes.append(node)
    return harness, nodes[0], nodes[1]


def test_a_partition_moves_to_a_gpu_with_counters_left(tmp_path: Path) -> None:
    harness, first, second = _partitioned_nodes(tmp_path, "half-0")
    harness.run(120)
    (kept,) = harness.node_names()
    assert kept in {first, second}
    pool = _node_pool(harness, kept)
    held = sorted(
        result.device
        for claim in harness.cluster.list(ResourceClaim)
        if claim.status.allocation is not None and claim.status.reserved_for
        for result in claim.status.allocation.devices.results
        if result.pool == pool
    )
    assert held == ["half-0", "half-1"]
    assert {
        p.spec.node_name for p in harness.cluster.list(Pod) if p.name.startswith("trainer")
    } == {kept}


def test_a_partition_does_not_move_to_a_gpu_whose_counters_are_used_up(tmp_path: Path) -> None:
    # The first GPU's whole-0 uses all 40Gi: its half-1 is listed and unallocated, but its
    # counters are gone. The second node's half-0 cannot move there, and the first's whole
    # GPU fits nowhere else: both nodes stay.
    harness, first, second = _partitioned_nodes(tmp_path, "whole-0")
    harness.run(120)
    assert harness.node_names() == {first, second}
    assert harness.event_log("DisruptionTerminating") == []
