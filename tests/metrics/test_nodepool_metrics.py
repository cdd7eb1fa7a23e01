"""The NodePool series at /metrics: ``karpenter_nodepools_cost_total`` (what the pool's
NodeClaims cost, as their offerings are priced), ``karpenter_nodepools_cost_tracker_errors_total``,
``karpenter_nodepools_usage`` and ``_limit``, and ``karpenter_build_info``."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nodewright import __version__, metrics
from nodewright.api.karpenter import NodePool
from nodewright.metrics import sample
from nodewright.testing import make_node_claim
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from nodewright_kwok.nodeclass import KWOKNodeClass
from tests.conftest import Simulate
from tests.controllers.kwok_world import KWOKWorld

COST = "karpenter_nodepools_cost_total"
ERRORS = "karpenter_nodepools_cost_tracker_errors_total"


def series(name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every series of ``name`` at /metrics, by its labels."""
    text = metrics.exposition().decode()
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


def test_a_pools_cost_is_what_its_nodes_cost(simulate: Simulate) -> None:
    small = '[{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4"]}]'
    pool = node_pool("priced", requirements=small)
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 10))
    assert result.exit_code == 0, result.stderr
    assert len(result.nodes()) > 1
    total = sum(node["pricePerHour"] for node in result.nodes())
    assert sample(COST, {"nodepool": "priced"}) == pytest.approx(total)
    assert total == pytest.approx(result.report["totalPricePerHour"])


def test_a_pools_cost_falls_as_its_nodes_go(simulate: Simulate) -> None:
    scenario = """
steps:
  - scale: {kind: Deployment, name: web, replicas: 0}
  - advance: 10m
"""
    result = simulate(node_pool("shrinking") + KWOK_NODE_CLASS + deployment("web", 5), scenario)
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    assert series(COST)[(("nodepool", "shrinking"),)] == 0


def test_a_deleted_pool_takes_its_series_with_it() -> None:
    world = KWOKWorld()
    world.apply(node_pool("doomed", limits="{cpu: 100}"), KWOK_NODE_CLASS, deployment("web", 2))
    world.settle()
    assert sample(COST, {"nodepool": "doomed"}) > 0
    assert sample("karpenter_nodepools_limit", {"nodepool": "doomed", "resource_type": "cpu"})
    world.cluster.delete(NodePool, "doomed")
    world.settle()
    assert world.claims() == []
    assert (("nodepool", "doomed"),) not in series(COST)
    assert not [
        labels for labels in series("karpenter_nodepools_limit") if ("nodepool", "doomed") in labels
    ]
    assert not [
        labels for labels in series("karpenter_nodepools_usage") if ("nodepool", "doomed") in labels
    ]


def test_usage_names_resources_as_karpenter_does() -> None:
    world = KWOKWorld()
    world.apply(node_pool("usage"), KWOK_NODE_CLASS, deployment("web", 1))
    world.settle()
    labels = {
        labels for labels in series("karpenter_nodepools_usage") if ("nodepool", "usage") in labels
    }
    resources = {dict(labels)["resource_type"] for labels in labels}
    assert {"cpu", "memory", "pods", "nodes", "ephemeral_storage"} <= resources


def test_a_nodeclaim_whose_pool_is_missing_is_a_cost_tracking_error() -> None:
    """A NodeClaim left by a NodePool that is gone cannot be priced: an error for that pool."""
    world = KWOKWorld()
    world.apply(node_pool("present"), KWOK_NODE_CLASS)
    world.settle()
    node_class = world.cluster.get(KWOKNodeClass, "default")
    assert node_class is not None
    before = sample(ERRORS, {"nodepool": "ghost"})
    world.create(make_node_claim("orphaned", node_class, node_pool="ghost"))
    world.settle()
    assert sample(ERRORS, {"nodepool": "ghost"}) > before


def test_build_info_names_the_version_runtime_and_architecture() -> None:
    ((labels, value),) = series("karpenter_build_info").items()
    found = dict(labels)
    assert value == 1
    assert found["version"] == __version__
    assert found["goversion"] == f"python{platform.python_version()}"
    assert found["goarch"] in ("amd64", "arm64", platform.machine().lower())
    assert found["commit"]


def test_every_karpenter_metric_is_documented() -> None:
    """docs/metrics.md names every ``karpenter_`` family /metrics serves."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    text = metrics.exposition().decode()
    families = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in text_string_to_metric_families(text)
        # the Python client's creation times of counters, histograms and summaries
        if family.name.startswith("karpenter_")
        and not (family.type == "gauge" and family.name.endswith("_created"))
    }
    assert sorted(name for name in families if f"`{name}`" not in doc) == []
