"""Balanced consolidation (``consolidationPolicy: Balanced``, k = 2), after Karpenter's balanced
suite: a move that saves little next to the disruption it causes is turned down, one that
saves a lot goes ahead and is told with a ``ConsolidationApproved`` event; other policies
consolidate as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from nodewright.controllers.disruption.balanced import PoolTotals, score_move
from tests.builders import pool_manifest
from tests.disruption.harness import Harness, fake_type

#: Prices chosen so that replacing "big" by "medium" saves 10 % and by "small" 80 %.
TYPES = [
    fake_type("big", 8, 16, pods=110, price=1.0),
    fake_type("medium", 4, 8, pods=110, price=0.9),
    fake_type("small", 2, 4, pods=110, price=0.2),
]


def _in_pool(pool: str) -> dict[str, Any]:
    return {"nodeSelector": {"karpenter.sh/nodepool": pool}}


def _moves(decision: str, pool: str = "default", policy: str = "Balanced") -> float:
    value = REGISTRY.get_sample_value(
        "karpenter_consolidation_moves_total",
        {"decision": decision, "nodepool": pool, "policy": policy},
    )
    return value or 0.0


def test_a_replacement_that_saves_little_next_to_its_disruption_is_rejected(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path, types=TYPES, pools=[pool_manifest(policy="Balanced")])
    node = harness.node("big")
    harness.bind_pods(node, 10, cpu="300m")  # 3 CPU: only "medium" is cheaper and fits
    rejected_before = _moves("rejected")
    harness.run(120)
    assert harness.live_claim_names() == {node}, "the node is kept"
    assert harness.event_log("ConsolidationApproved") == []
    assert _moves("rejected") > rejected_before
    # The move was found and offered (Karpenter tells the candidate), then turned down.
    candidates = harness.event_log("ConsolidationCandidate")
    assert ("node/" + node) in {obj for obj, _ in candidates}
    assert all("Consolidation/Replace" in message for _, message in candidates)


def test_the_same_move_goes_ahead_under_when_empty_or_underutilized(tmp_path: Path) -> None:
    harness = Harness(tmp_path, types=TYPES, pools=[pool_manifest()])
    node = harness.node("big")
    harness.bind_pods(node, 10, cpu="300m")
    harness.run(120)
    (replacement,) = harness.claims()
    assert replacement.name != node
    assert harness.instance_type(replacement) == "medium"
    # no score to approve, but the replacement is announced as under every policy
    assert harness.event_log("ConsolidationApproved") == []
    candidates = harness.event_log("ConsolidationCandidate")
    assert {obj for obj, _ in candidates} == {"node/" + node, "nodeclaim/" + node}
    (message,) = {message for _, message in candidates}
    assert message.startswith(
        "Consolidation candidate: Consolidation/Replace: nodepools=[default]: "
    )
    assert f"[{node}] -> [1 replacement]" in message


def test_a_replacement_that_saves_a_lot_is_approved_and_told(tmp_path: Path) -> None:
    harness = Harness(tmp_path, types=TYPES, pools=[pool_manifest(policy="Balanced")])
    node = harness.node("big")
    harness.bind_pods(node, 1, cpu="1")
    approved_before = _moves("approved")
    harness.run(120)
    (replacement,) = harness.claims()
    assert replacement.name != node
    assert harness.instance_type(replacement) == "small"
    approvals = harness.event_log("ConsolidationApproved")
    # Savings 0.8 of the pool's 1.0 $/h; the move disrupts the whole pool: score 0.80.
    message = "score 0.80 >= threshold 0.50 (k: 2, savings 80.0%, disruption 100.0%)"
    assert ("node/" + node, message) in approvals
    assert _moves("approved") > approved_before
    assert ("node/" + node, "Disrupting Node: Consolidation/Replace") in harness.event_log(
        "DisruptionTerminating"
    )


def test_a_node_whose_pods_weigh_little_in_the_pool_is_replaced(tmp_path: Path) -> None:
    # Two big nodes of equal price; neither can take the other's pods. Replacing the light
    # one by "small" saves 40 % of the pool's cost and causes 2 of its 13 disruption.
    harness = Harness(tmp_path, types=TYPES, pools=[pool_manifest(policy="Balanced")])
    busy, light = harness.launch_nodes(2, "big")
    harness.bind_pods(busy, 10, cpu="700m", owner="busy")
    harness.bind_pods(light, 1, cpu="1500m", owner="light")
    harness.run(120)
    names = harness.live_claim_names()
    assert busy in names
    assert light not in names
    approvals = [e for e in harness.event_log("ConsolidationApproved") if e[0].startswith("node/")]
    message = "score 2.60 >= threshold 0.50 (k: 2, savings 40.0%, disruption 15.4%)"
    assert approvals[0] == ("node/" + light, message)


def test_several_underutilized_nodes_are_merged_and_the_pool_is_told(tmp_path: Path) -> None:
    harness = Harness(tmp_path, types=TYPES, pools=[pool_manifest(policy="Balanced")])
    nodes = harness.launch_nodes(3, "big")
    for index, node in enumerate(nodes):
        harness.bind_pods(node, 1, cpu="1", owner=f"app{index}")
    harness.run(120)
    remaining = harness.live_claim_names()
    assert len(remaining) < 3
    assert not set(nodes) & remaining
    assert any(obj == "nodepool/default" for obj, _ in harness.event_log("ConsolidationApproved"))


def test_pools_with_other_policies_are_not_scored(tmp_path: Path) -> None:
    pools = [
        pool_manifest("balanced", policy="Balanced"),
        pool_manifest("classic", policy="WhenEmptyOrUnderutilized"),
    ]
    harness = Harness(tmp_path, types=TYPES, pools=pools)
    scored = harness.node("big", pool="balanced")
    # Each pool's pods stay in their pool.
    harness.bind_pods(scored, 10, cpu="300m", owner="scored", spec=_in_pool("balanced"))
    plain = harness.node("big", pool="classic")
    harness.bind_pods(plain, 10, cpu="300m", owner="plain", spec=_in_pool("classic"))
    harness.run(180)
    names = harness.live_claim_names()
    assert scored in names, "Balanced turns the 10 % saving down"
    assert plain not in names, "the other pool replaces its node as before"


@pytest.mark.parametrize(
    ("savings", "disruption", "approved"),
    [
        (7.26, 4.0, True),  # an oversized node replaced by a small one (Karpenter's RFC pool)
        (4.84, 5.0, True),  # spare capacity deleted
        (2.42, 9.0, False),  # a marginal replacement
        (0.0, 11.0, False),  # a well-packed node, nothing saved
    ],
)
def test_scores_of_karpenters_rfc_pool(savings: float, disruption: float, approved: bool) -> None:
    totals = PoolTotals(total_cost=58.08, total_disruption_cost=90)
    score = score_move(savings, disruption, totals)
    assert score.approved is approved
    assert score.value == pytest.approx((savings / 58.08) / (disruption / 90) if savings else 0)
