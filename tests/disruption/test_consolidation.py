"""Karpenter's consolidation scenarios (karpenter-core.md §10, 17-24): NodePool
``WhenEmptyOrUnderutilized``, ``consolidateAfter: 0s``, budget 100%, Karpenter's fake
instance types (small 2 CPU, default 4 CPU, arm 16 CPU)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from nodewright.api.karpenter import NodeClaim
from nodewright.controllers.options import Options
from nodewright_kwok.nodeclass import KWOKNodeClass
from tests.builders import pool_manifest
from tests.disruption.harness import Harness, fake_type


def _new_claims(harness: Harness, before: set[str]) -> list[NodeClaim]:
    return [c for c in harness.claims() if c.name not in before]


def test_17_can_delete_nodes(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    first, second = harness.launch_nodes(2, "small-instance-type")
    harness.bind_pods(first, 2)
    harness.bind_pods(second, 1)
    harness.run(30)
    assert harness.claim_names() == {first}, "the 1-pod node goes, no replacement"
    assert harness.node_names() == {first}
    assert ("node/" + second, "Disrupting Node: Consolidation/Delete") in harness.event_log(
        "DisruptionTerminating"
    )
    (removed,) = [r for r in harness.operator.disruption.history.records.values() if r.removed_at]
    assert (removed.node_claim, removed.disruption_reason) == (second, "Underutilized")


def test_18_can_replace_node_with_a_cheaper_one_launched_first(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    expensive = harness.node("default-instance-type")
    harness.bind_pods(expensive, 1)
    # Replacements take 30 s to register, so the wait for them is visible.
    harness.apply(
        KWOKNodeClass.model_validate(
            {"metadata": {"name": "default"}, "spec": {"nodeRegistrationDelay": "30s"}}
        )
    )
    harness.run(20)  # past the 15 s validation: the replacement exists, not yet initialized
    (replacement,) = _new_claims(harness, {expensive})
    assert "default-instance-type" not in _types(replacement)
    assert "small-instance-type" in _types(replacement)
    assert expensive in harness.live_claim_names(), "kept until the replacement initializes"
    assert ("nodeclaim/" + replacement.name, "Waiting on readiness to continue disruption") in (
        harness.event_log("DisruptionWaitingReadiness")
    )
    assert ("nodeclaim/" + replacement.name, "Launching NodeClaim: Consolidation/Replace") in (
        harness.event_log("DisruptionLaunching")
    )
    harness.run(40)
    assert harness.claim_names() == {replacement.name}
    assert ("node/" + expensive, "Disrupting Node: Consolidation/Replace") in harness.event_log(
        "DisruptionTerminating"
    )
    (claim,) = harness.claims()
    assert harness.instance_type(claim) == "small-instance-type"
    assert claim.metadata.labels["karpenter.sh/capacity-type"] == "spot", (
        "a replacement that could be spot or on-demand is priced, and launched, as spot"
    )


def test_19_can_merge_3_nodes_into_1(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    nodes = harness.launch_nodes(3, "default-instance-type")
    for node in nodes:
        harness.bind_pods(node, 1)
    harness.run(60)
    remaining = harness.claims()
    assert len(remaining) == 1
    assert remaining[0].name not in nodes
    assert harness.instance_type(remaining[0]) == "small-instance-type"


def test_20_wont_merge_2_nodes_into_1_of_the_same_type(tmp_path: Path) -> None:
    only_default = [
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["default-instance-type"],
        }
    ]
    harness = Harness(tmp_path, pools=[pool_manifest(requirements=only_default)])
    first, second = harness.launch_nodes(2, "default-instance-type")
    harness.bind_pods(first, 1)
    harness.bind_pods(second, 2)
    harness.run(60)
    assert harness.claim_names() == {second}, "delete the 1-pod node, launch nothing"


def _ladder(count: int) -> list[dict[str, Any]]:
    """``count`` spot-only types that all fit the test pod, each dearer than the last."""
    return [
        fake_type(
            f"type-{i:02d}",
            4,
            4,
            spot_zones=["test-zone-1"],
            on_demand_zones=[],
            price=0.1 + 0.01 * i,
        )
        for i in range(count)
    ]


def test_21_cannot_replace_spot_with_spot_among_the_15_cheapest(tmp_path: Path) -> None:
    harness = Harness(tmp_path, types=_ladder(20), options=Options(spot_to_spot_consolidation=True))
    node = harness.node("type-05", capacity_type="spot")
    harness.bind_pods(node, 1)
    harness.run(60)
    assert harness.claim_names() == {node}
    assert (
        "node/" + node,
        "SpotToSpotConsolidation requires 15 cheaper instance type options than the current "
        "candidate to consolidate, got 5",
    ) in harness.event_log("Unconsolidatable")


def test_spot_to_spot_replaces_with_the_15_cheapest_when_outside_them(tmp_path: Path) -> None:
    harness = Harness(tmp_path, types=_ladder(20), options=Options(spot_to_spot_consolidation=True))
    node = harness.node("type-19", capacity_type="spot")
    harness.bind_pods(node, 1)
    harness.run(60)
    (replacement,) = harness.claims()
    assert replacement.name != node
    assert _types(replacement) == {f"type-{i:02d}" for i in range(15)}
    assert harness.instance_type(replacement) == "type-00"


def test_spot_to_spot_is_off_by_default(tmp_path: Path) -> None:
    harness = Harness(tmp_path, types=_ladder(20))
    node = harness.node("type-19", capacity_type="spot")
    harness.bind_pods(node, 1)
    harness.run(60)
    assert harness.claim_names() == {node}
    assert (
        "node/" + node,
        "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node",
    ) in harness.event_log("Unconsolidatable")


def test_22_waits_15_seconds_before_consolidating_a_non_empty_node(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    first, second = harness.launch_nodes(2, "small-instance-type")
    harness.bind_pods(first, 2)
    harness.bind_pods(second, 1)
    harness.run(14)
    assert harness.live_claim_names() == {first, second}
    assert harness.event_log("DisruptionTerminating") == []
    harness.run(17)
    assert harness.claim_names() == {first}


def test_23_can_delete_nodes_considering_pdbs(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    first, second = harness.launch_nodes(2, "small-instance-type")
    harness.bind_pods(first, 2)
    harness.bind_pods(second, 1, owner="guarded", labels={"guard": "yes"})
    harness.pdb("guard", {"guard": "yes"}, max_unavailable=0)
    harness.run(60)
    assert harness.claim_names() == {second}, "the node with more pods goes instead"
    assert (
        "node/" + second,
        "Pdb prevents pod evictions (PodDisruptionBudget=[default/guard])",
    ) in harness.event_log("DisruptionBlocked")


def test_24_wont_delete_a_node_if_it_would_violate_pod_anti_affinity(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    nodes = harness.launch_nodes(3, "small-instance-type")
    anti = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "spread"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    }
    for node in nodes:
        harness.bind_pods(node, 1, owner="spread", spec=anti)
    harness.run(120)
    assert harness.claim_names() == set(nodes)


def test_pods_with_do_not_disrupt_keep_their_node(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    first, second = harness.launch_nodes(2, "small-instance-type")
    harness.bind_pods(first, 2)
    (pod,) = harness.bind_pods(second, 1, annotations={"karpenter.sh/do-not-disrupt": "true"})
    harness.run(60)
    assert harness.claim_names() == {second}, "the other node is consolidated instead"
    assert (
        "node/" + second,
        f'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/{pod})',
    ) in harness.event_log("DisruptionBlocked")


def test_churn_during_validation_rejects_the_command(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    first, second = harness.launch_nodes(2, "small-instance-type")
    harness.bind_pods(first, 2)
    harness.bind_pods(second, 1)
    harness.run(5)  # the command to delete `second` now waits for its validation
    harness.cluster.update(_annotated(harness, second))
    harness.run(30)
    assert second in harness.live_claim_names()
    # (`first` may go next: its pods fit on the now protected node.)
    rejected = [
        m for obj, m in harness.event_log("ConsolidationRejected") if obj == "node/" + second
    ]
    assert rejected
    assert "reason: churn" in rejected[0]


def test_a_replace_is_rejected_when_a_cheaper_node_is_no_longer_needed(tmp_path: Path) -> None:
    """Validation re-simulates: once the pod fits elsewhere the replace is stale."""
    harness = Harness(tmp_path)
    expensive = harness.node("default-instance-type")
    harness.bind_pods(expensive, 1)
    harness.run(5)
    spare = harness.node("small-instance-type", annotations={"karpenter.sh/do-not-disrupt": "true"})
    harness.run(15)
    assert harness.claim_names() >= {expensive, spare}
    assert any(
        "reason: scheduling" in m
        for obj, m in harness.event_log("ConsolidationRejected")
        if obj == "node/" + expensive
    )


@pytest.mark.parametrize("policy", ["WhenEmpty"])
def test_when_empty_pools_leave_underutilized_nodes(tmp_path: Path, policy: str) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(policy=policy)])
    node = harness.node("default-instance-type")
    harness.bind_pods(node, 1)
    harness.run(60)
    assert harness.claim_names() == {node}
    assert (
        "node/" + node,
        'NodePool "default" has consolidation policy WhenEmpty, but node is not empty',
    ) in harness.event_log("Unconsolidatable")


def _types(claim: NodeClaim) -> set[str]:
    for requirement in claim.spec.requirements:
        if requirement.key == "node.kubernetes.io/instance-type":
            return set(requirement.values)
    return set()


def _annotated(harness: Harness, node: str) -> Any:
    from nodewright.api.core import Node
    from nodewright.cluster.objects import mutable

    stored = harness.cluster.get(Node, node)
    assert stored is not None
    current = mutable(stored)
    current.metadata.annotations["karpenter.sh/do-not-disrupt"] = "true"
    return current


def test_replaces_a_node_whose_pods_select_a_provider_label(tmp_path: Path) -> None:
    """A pod with ``nodeSelector: karpenter.kwok.sh/instance-family: c`` still lets its node be
    replaced by a cheaper type of that family: the provider's labels are known to the
    consolidation simulation as they are to provisioning."""
    types = [fake_type("c-4x-amd64-linux", 4, 8), fake_type("c-2x-amd64-linux", 2, 4)]
    harness = Harness(tmp_path, types=types)
    expensive = harness.node("c-4x-amd64-linux")
    harness.bind_pods(
        expensive, 1, spec={"nodeSelector": {"karpenter.kwok.sh/instance-family": "c"}}
    )
    harness.run(60)
    (claim,) = harness.claims()
    assert claim.name != expensive
    assert harness.instance_type(claim) == "c-2x-amd64-linux"
    assert ("node/" + expensive, "Disrupting Node: Consolidation/Replace") in harness.event_log(
        "DisruptionTerminating"
    )
    assert not [m for _, m in harness.event_log("Unconsolidatable") if "known values" in m]


def test_offerings_a_launch_found_without_capacity_are_not_offered_to_consolidation(
    tmp_path: Path,
) -> None:
    """A launch that buys a dearer type because the cheaper one has no capacity reports that
    offering; consolidation then does not try to replace the node with the exhausted type
    (which would fail with InsufficientCapacityError) while it stays unavailable."""
    types = [fake_type("small-instance-type", 2, 2), fake_type("default-instance-type", 4, 4)]
    harness = Harness(
        tmp_path,
        types=types,
        kwok_options={"fault-insufficient-capacity": "small-instance-type/*/*"},
    )
    harness.bind_pods(None, 1)
    harness.run(120)
    (claim,) = harness.claims()
    assert harness.instance_type(claim) == "default-instance-type"
    assert harness.event_log("InsufficientCapacityError") == []
    assert not harness.event_log("DisruptionLaunching"), "no replacement on the exhausted type"


def test_a_replacement_without_capacity_is_not_retried_at_once(tmp_path: Path) -> None:
    """The cheaper type has no capacity at all: the first replacement fails with
    InsufficientCapacityError, then the node is left alone ("Can't replace with a cheaper
    node") and the cluster settles. As Karpenter does, consolidation looks again only when its
    memo lapses (5 minutes) after the offering's 3 minutes of unavailability: one failed
    attempt every ~5 minutes, not one every pass."""
    types = [fake_type("small-instance-type", 2, 2), fake_type("default-instance-type", 4, 4)]
    harness = Harness(
        tmp_path,
        types=types,
        kwok_options={"fault-insufficient-capacity": "small-instance-type/*/*"},
    )
    node = harness.node("default-instance-type")
    harness.bind_pods(node, 1)
    harness.start()
    started = harness.sim.clock.now()
    harness.sim.settle()
    assert harness.sim.clock.now() - started < timedelta(minutes=5), "the run settles"
    assert len(harness.event_log("InsufficientCapacityError")) == 1
    assert ("node/" + node, "Can't replace with a cheaper node") in harness.event_log(
        "Unconsolidatable"
    )
    harness.run(30 * 60)
    assert harness.claim_names() == {node}, "the node stays"
    attempts = harness.event_log("InsufficientCapacityError")
    assert 4 <= len(attempts) <= 7, attempts
