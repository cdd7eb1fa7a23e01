"""Emptiness and disruption budgets: empty nodes go after consolidateAfter and the 15 s
validation, never more at once than the NodePool's budgets allow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodewright.api.karpenter import NodePool
from nodewright.controllers.disruption.methods import Context
from tests.builders import pool_manifest
from tests.disruption.harness import Harness


def test_an_empty_node_is_deleted_after_consolidate_after_and_validation(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(consolidate_after="30s")])
    empty = harness.node()
    busy = harness.node()
    harness.bind_pods(busy, 1)
    harness.run(29)
    assert harness.live_claim_names() == {empty, busy}, "consolidateAfter has not passed yet"
    harness.run(30)
    assert empty not in harness.claim_names()
    assert busy in harness.live_claim_names()
    assert ("node/" + empty, "Disrupting Node: Consolidation/Delete") in harness.event_log(
        "DisruptionTerminating"
    )
    assert (
        "nodeclaim/" + empty,
        "Disrupting NodeClaim: Consolidation/Delete",
    ) in harness.event_log("DisruptionTerminating")


def test_when_empty_pools_word_the_deletion_as_emptiness(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(policy="WhenEmpty")])
    empty = harness.node()
    harness.run(30)
    assert empty not in harness.node_names()
    assert ("node/" + empty, "Disrupting Node: Emptiness/Delete") in harness.event_log(
        "DisruptionTerminating"
    )


def test_budget_of_30_percent_lets_3_of_10_empty_nodes_go(tmp_path: Path) -> None:
    """Karpenter: "should only allow 3 empty nodes to be disrupted" (10 nodes, nodes: 30%)."""
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=[{"nodes": "30%"}])])
    harness.launch_nodes(10)
    harness.run(16)
    assert harness.operator.disruption.allowed_disruptions[("default", "Empty")] == 3
    assert len(harness.live_claim_names()) == 7


def test_percentages_round_up(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=[{"nodes": "10%"}])])
    harness.launch_nodes(3)
    harness.run(16)
    assert harness.operator.disruption.allowed_disruptions[("default", "Empty")] == 1
    assert len(harness.live_claim_names()) == 2


def test_a_zero_budget_blocks_and_says_so_on_the_nodepool(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=[{"nodes": "0"}])])
    node = harness.node()
    harness.run(60)
    assert node in harness.live_claim_names()
    assert (
        "nodepool/default",
        "No allowed disruptions for disruption reason Empty due to blocking budget",
    ) in harness.event_log("DisruptionBlocked")


def test_budgets_only_apply_to_their_reasons(tmp_path: Path) -> None:
    budgets = [{"nodes": "0", "reasons": ["Underutilized", "Drifted"]}]
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=budgets)])
    node = harness.node()
    harness.run(30)
    assert node not in harness.claim_names(), "the budget does not cover Empty"


def test_a_scheduled_budget_blocks_only_inside_its_window(tmp_path: Path) -> None:
    # The simulation starts at midnight UTC; this budget blocks for the first 10 minutes of
    # every hour.
    budgets = [{"nodes": "0", "schedule": "0 * * * *", "duration": "10m"}]
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=budgets)])
    node = harness.node()
    harness.run(5 * 60)
    assert node in harness.live_claim_names()
    harness.run(6 * 60)
    assert node not in harness.claim_names()


def test_nodes_already_deleting_count_against_the_budget(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=[{"nodes": "1"}])])
    blocked = harness.node()
    # A pod that cannot be evicted keeps the node being deleted (its drain waits).
    harness.bind_pods(blocked, 1, owner="guarded", labels={"guard": "yes"})
    harness.pdb("guard", {"guard": "yes"})
    empty = harness.node()
    from nodewright.api.karpenter import NodeClaim

    harness.cluster.delete(NodeClaim, blocked)
    harness.run(60)
    assert blocked in harness.claim_names(), "still draining"
    assert empty in harness.live_claim_names(), "the one allowed disruption is in use"


def test_consolidation_disabled_keeps_empty_nodes(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(consolidate_after="Never")])
    node = harness.node()
    harness.run(120)
    assert node in harness.live_claim_names()
    assert ("node/" + node, 'NodePool "default" has consolidation disabled') in harness.event_log(
        "Unconsolidatable"
    )


def test_do_not_disrupt_on_a_node_keeps_it(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    node = harness.node(annotations={"karpenter.sh/do-not-disrupt": "true"})
    harness.run(60)
    assert node in harness.live_claim_names()
    assert (
        "node/" + node,
        'Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation',
    ) in harness.event_log("DisruptionBlocked")


def test_changing_a_budget_is_not_drift(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=[{"nodes": "0"}])])
    node = harness.node("small-instance-type")
    harness.bind_pods(node, 1)
    harness.run(30)
    harness.apply(NodePool.model_validate(pool_manifest(budgets=[{"nodes": "5"}])))
    harness.run(60)
    assert node in harness.live_claim_names()
    (claim,) = harness.claims()
    assert not any(c.type == "Drifted" for c in claim.status.conditions)
    assert ("node/" + node, "Can't replace with a cheaper node") in harness.event_log(
        "Unconsolidatable"
    )


def test_a_search_held_back_by_budgets_is_not_repeated_until_something_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four busy nodes, no cheaper home for any pod, a budget of two: consolidation tries
    # two candidates and finds nothing. Repeating that trial scheduling on every pass of an
    # idle cluster would find nothing again, so it waits for a change.
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=[{"nodes": "2"}])])
    nodes = harness.launch_nodes(4)
    for node in nodes:
        harness.bind_pods(node, 1, cpu="3")
    harness.start()
    trials: list[list[str]] = []
    simulate = Context.simulate

    def counting(self: Context, candidates: Any, decide: bool = False) -> Any:
        trials.append([c.name for c in candidates])
        return simulate(self, candidates, decide)

    monkeypatch.setattr(Context, "simulate", counting)
    harness.run(30)
    assert trials, "the first passes search"
    trials.clear()
    harness.run(120)
    assert trials == []
    assert harness.node_names() >= set(nodes)
    harness.bind_pods(nodes[0], 1, cpu="100m")  # a change: search again, same answer
    harness.run(30)
    assert trials
    assert harness.node_names() >= set(nodes)
