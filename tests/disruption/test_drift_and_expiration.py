"""Drift (NodePool template hash, requirements, provider) and forceful expiration."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.meta import find_condition
from nodewright_kwok.provider import KWOKProvider
from tests.builders import pool_manifest
from tests.disruption.harness import Harness


def _drifted(harness: Harness, name: str) -> str | None:
    claim = harness.cluster.get(NodeClaim, name)
    assert claim is not None
    condition = find_condition(claim.status.conditions, "Drifted")
    return condition.reason if condition is not None and condition.status == "True" else None


def test_a_template_change_drifts_nodes_which_are_replaced_before_they_go(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    node = harness.node("small-instance-type")
    harness.bind_pods(node, 1)
    harness.run(30)
    assert _drifted(harness, node) is None
    assert node in harness.live_claim_names(), "the cheapest node is not consolidated"
    harness.apply(NodePool.model_validate(pool_manifest(labels={"team": "blue"})))
    harness.run(1)
    assert _drifted(harness, node) == "NodePoolDrifted"
    harness.run(30)
    (replacement,) = harness.claims()
    assert replacement.name != node
    assert replacement.metadata.labels["team"] == "blue"
    assert ("node/" + node, "Disrupting Node: Drift/Replace") in harness.event_log(
        "DisruptionTerminating"
    )
    record = harness.operator.disruption.history.records[node]
    assert (record.disruption_reason, record.disruption) == ("Drifted", "Drift/Replace")


def test_an_empty_drifted_node_is_deleted_without_replacement(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(consolidate_after="Never")])
    node = harness.node("small-instance-type")
    harness.run(5)
    harness.apply(
        NodePool.model_validate(pool_manifest(consolidate_after="Never", labels={"v": "2"}))
    )
    harness.run(30)
    assert harness.claim_names() == set()
    assert ("node/" + node, "Disrupting Node: Drift/Delete") in harness.event_log(
        "DisruptionTerminating"
    )


def test_requirements_that_exclude_a_node_drift_it(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    node = harness.node("small-instance-type")
    harness.bind_pods(node, 1)
    harness.run(5)
    only_default = [
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["default-instance-type"],
        }
    ]
    harness.apply(NodePool.model_validate(pool_manifest(requirements=only_default)))
    harness.run(1)
    assert _drifted(harness, node) == "RequirementsDrifted"
    harness.run(30)
    (replacement,) = harness.claims()
    assert harness.instance_type(replacement) == "default-instance-type"


def test_drift_respects_the_drifted_budget(tmp_path: Path) -> None:
    budgets = [{"nodes": "0", "reasons": ["Drifted"]}]
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=budgets)])
    node = harness.node("small-instance-type")
    harness.bind_pods(node, 1)
    harness.run(5)
    harness.apply(NodePool.model_validate(pool_manifest(budgets=budgets, labels={"v": "2"})))
    harness.run(60)
    assert harness.claim_names() == {node}
    assert _drifted(harness, node) == "NodePoolDrifted"


def test_the_providers_drift_reason_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A provider whose answers change with time says when its background work runs (here
    # every minute, as a cloud provider refreshing what it resolves); the first such work 5
    # minutes after the last drift check has the provider asked again.
    work = KWOKProvider.reconcile

    def every_minute(self: KWOKProvider, now: datetime) -> timedelta:
        work(self, now)
        return timedelta(minutes=1)

    monkeypatch.setattr(KWOKProvider, "reconcile", every_minute)
    harness = Harness(tmp_path)
    node = harness.node("small-instance-type")
    harness.bind_pods(node, 1)
    harness.run(10)
    assert _drifted(harness, node) is None
    monkeypatch.setattr(KWOKProvider, "is_drifted", lambda self, claim, node_class: "ImageDrifted")
    harness.run(6 * 60 + 20)
    assert node not in harness.live_claim_names()
    record = harness.operator.disruption.history.records[node]
    assert (record.disruption_reason, record.disruption) == ("Drifted", "Drift/Replace")


def test_a_pdb_blocks_drift_unless_the_nodeclaim_has_a_termination_grace_period(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    node = harness.node("small-instance-type")
    harness.bind_pods(node, 1, owner="guarded", labels={"guard": "yes"})
    harness.pdb("guard", {"guard": "yes"})
    harness.run(5)
    harness.apply(NodePool.model_validate(pool_manifest(labels={"v": "2"})))
    harness.run(60)
    assert harness.live_claim_names() == {node}
    assert (
        "node/" + node,
        "Pdb prevents pod evictions (PodDisruptionBudget=[default/guard])",
    ) in harness.event_log("DisruptionBlocked")


def test_expired_nodes_are_deleted_whatever_the_budget(tmp_path: Path) -> None:
    harness = Harness(tmp_path, pools=[pool_manifest(budgets=[{"nodes": "0"}])])
    (node,) = harness.launch_nodes(1, "small-instance-type", expire_after="1h")
    harness.bind_pods(node, 1)
    harness.run(59 * 60)
    assert node in harness.live_claim_names()
    harness.run(2 * 60)
    assert node not in harness.live_claim_names()
    record = harness.operator.disruption.history.records[node]
    assert record.disruption_reason == "Expired"
    assert record.removed_at is not None
    assert record.launched_at is not None
    assert (record.removed_at - record.launched_at).total_seconds() == pytest.approx(3600, abs=2)
