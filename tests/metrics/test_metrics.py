"""Karpenter's Prometheus metrics, read from the default registry after simulate runs."""

from __future__ import annotations

import time

from prometheus_client import REGISTRY, generate_latest

from nodewright import metrics
from nodewright.metrics import sample
from nodewright.metrics.text import PREFORMATTED
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate


def total(name: str, **labels: str) -> float:
    """The sum of a metric's series whose labels include ``labels`` (every zone, say)."""
    return sum(
        s.value
        for family in REGISTRY.collect()
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    )


def _created(pool: str = "default") -> float:
    return sample(
        "karpenter_nodeclaims_created_total",
        {"reason": "provisioned", "nodepool": pool, "min_values_relaxed": "false"},
    )


def test_provisioning_records_nodeclaims_nodes_pods_and_scheduler(simulate: Simulate) -> None:
    before_claims = _created()
    before_nodes = total("karpenter_nodes_created_total", nodepool="default")
    before_solves = sample(
        "karpenter_scheduler_scheduling_duration_seconds_count", {"controller": "provisioner"}
    )
    before_launches = sample(
        "karpenter_cloudprovider_duration_seconds_count",
        {"controller": "nodeclaim.lifecycle", "method": "Create", "provider": "kwok"},
    )
    before_startups = sample("karpenter_pods_startup_duration_seconds_count")

    result = simulate(node_pool(limits="{cpu: 100}") + KWOK_NODE_CLASS + deployment("web", 5))
    assert result.exit_code == 0, result.stderr
    launched = len(result.nodes())
    assert launched >= 1
    for zone in {node["zone"] for node in result.nodes()}:  # labelled with each node's zone
        assert total("karpenter_nodes_created_total", nodepool="default", zone=zone) >= 1

    assert _created() - before_claims == launched
    assert total("karpenter_nodes_created_total", nodepool="default") - before_nodes == (launched)
    assert (
        sample(
            "karpenter_cloudprovider_duration_seconds_count",
            {"controller": "nodeclaim.lifecycle", "method": "Create", "provider": "kwok"},
        )
        - before_launches
        == launched
    )
    assert (
        sample(
            "karpenter_scheduler_scheduling_duration_seconds_count",
            {"controller": "provisioner"},
        )
        > before_solves
    )
    assert sample("karpenter_scheduler_queue_depth", {"controller": "provisioner"}) == 0
    assert sample("karpenter_pods_startup_duration_seconds_count") - before_startups == 5
    assert sample("karpenter_nodepools_limit", {"nodepool": "default", "resource_type": "cpu"}) == (
        100
    )
    assert (
        sample("karpenter_nodepools_usage", {"nodepool": "default", "resource_type": "nodes"})
        == launched
    )
    # One pods_state series per pod, labelled with its node's pool, zone and capacity type.
    exposition = metrics.exposition().decode()
    web_pods = [
        line
        for line in exposition.splitlines()
        if line.startswith("karpenter_pods_state{") and 'owner="ReplicaSet/web-' in line
    ]
    assert len(web_pods) == 5
    assert all('nodepool="default"' in line and 'phase="Running"' in line for line in web_pods)
    assert all('zone="test-zone-' in line for line in web_pods)


def test_consolidation_records_disruption_and_termination(simulate: Simulate) -> None:
    labels = {"decision": "delete", "reason": "empty", "consolidation_type": "empty"}
    before_decisions = sample("karpenter_voluntary_disruption_decisions_total", labels)
    before_terminated = total("karpenter_nodes_terminated_total", nodepool="default")
    before_disrupted = sum(
        sample(
            "karpenter_nodeclaims_disrupted_total",
            {
                "reason": "empty",
                "nodepool": "default",
                "capacity_type": ct,
                "consolidation_policy": "when_empty_or_underutilized",
                "termination_mode": "graceful",
            },
        )
        for ct in ("spot", "on-demand")
    )
    scenario = """
steps:
  - scale: {kind: Deployment, name: web, replicas: 0}
  - advance: 5m
"""
    result = simulate(node_pool() + KWOK_NODE_CLASS + deployment("web", 3), scenario)
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    assert sample("karpenter_voluntary_disruption_decisions_total", labels) > before_decisions
    disrupted = sum(
        sample(
            "karpenter_nodeclaims_disrupted_total",
            {
                "reason": "empty",
                "nodepool": "default",
                "capacity_type": ct,
                "consolidation_policy": "when_empty_or_underutilized",
                "termination_mode": "graceful",
            },
        )
        for ct in ("spot", "on-demand")
    )
    assert disrupted - before_disrupted >= 1
    terminated = total("karpenter_nodes_terminated_total", nodepool="default")
    assert terminated - before_terminated == disrupted - before_disrupted


def test_many_runs_register_nothing_twice_and_stay_fast(simulate: Simulate) -> None:
    started = time.perf_counter()
    for _ in range(5):
        assert simulate(node_pool() + KWOK_NODE_CLASS + deployment("web", 2)).exit_code == 0
    # Each run is a fraction of a second; metrics must not make it noticeably slower.
    assert time.perf_counter() - started < 15
    names = [m.name for m in REGISTRY.collect() if m.name.startswith("karpenter_nodeclaims")]
    assert len(names) == len(set(names))


def test_series_formatted_when_they_change_read_as_prometheus_client_writes_them(
    simulate: Simulate,
) -> None:
    """The per-node and per-pod lines kept formatted are what a scrape of the same series
    through prometheus_client would write, escaping included."""
    assert simulate(node_pool() + KWOK_NODE_CLASS + deployment("web", 3)).exit_code == 0
    metrics.pods_state.set(("odd", "pod"), ("a\\b", 'say "hi"', "line\nbreak", *[""] * 7))
    try:
        exposition = metrics.exposition().decode()
        assert exposition.endswith(generate_latest(PREFORMATTED).decode())
        assert 'name="a\\\\b",namespace="say \\"hi\\""' in exposition
        assert metrics.node_series.text().count("karpenter_nodes_allocatable{") >= 3
    finally:
        metrics.pods_state.remove(("odd", "pod"))
