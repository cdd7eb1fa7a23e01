"""NodeOverlays (feature gate ``NodeOverlay``) in a simulation with the KWOK provider: an
extended resource unknown to the provider gets a node, a price overlay changes what is
cheapest, NodeClaims carry Karpenter's ``*-overlay-applied`` annotations, each overlay reports
its outcome in its status, and with the gate off overlays are ignored."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import (
    CONDITION_READY,
    CONDITION_VALIDATION_SUCCEEDED,
    NodeClaim,
    NodePool,
)
from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_paths, load_text
from nodewright.api.meta import find_condition
from nodewright.api.nodeoverlay import (
    CAPACITY_OVERLAY_APPLIED_ANNOTATION,
    PRICE_OVERLAY_APPLIED_ANNOTATION,
    NodeOverlay,
)
from nodewright.commands import main
from nodewright.controllers.catalog import NodePoolNotEvaluatedError
from nodewright.controllers.options import Options
from nodewright.plugin.host import PluginHost
from nodewright.simulation.runner import Simulation
from nodewright.testing.manifests import KWOK_NODE_CLASS, node_pool
from tests.conftest import Simulate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nodeoverlay"
GPU = "example.com/gpu"


def _simulation(gate: bool, *texts: str, example: bool = False) -> Simulation:
    host = PluginHost.load(only=["kwok"])
    registry = KindRegistry()
    for kind in host.node_class_kinds():
        registry.register(kind.model, kind.extra_versions)
    simulation = Simulation(host, Options(node_overlay=gate))
    if example:
        simulation.apply(load_paths([EXAMPLE / "manifests"], registry))
    for text in texts:
        simulation.apply(load_text(text, "manifests.yaml", registry))
    simulation.settle()
    return simulation


def _trainer(simulation: Simulation) -> Pod:
    registry = KindRegistry()
    simulation.apply(load_paths([EXAMPLE / "trainer.yaml"], registry))
    simulation.settle()
    pod = simulation.cluster.get(Pod, "trainer", "default")
    assert pod is not None
    return pod


def _claim_of(simulation: Simulation, node_name: str) -> NodeClaim:
    node = simulation.cluster.get(Node, node_name)
    assert node is not None
    return next(
        c
        for c in simulation.cluster.list(NodeClaim)
        if c.status.provider_id == node.spec.provider_id
    )


def test_a_pod_asking_for_an_overlaid_resource_gets_a_node_only_with_the_gate() -> None:
    on = _simulation(True, example=True)
    pod = _trainer(on)
    assert pod.spec.node_name is not None
    node = on.cluster.get(Node, pod.spec.node_name)
    assert node is not None
    assert node.metadata.labels[INSTANCE_TYPE_LABEL] == "m-8x-amd64-linux"
    assert node.status.allocatable[GPU] == "1"
    claim = _claim_of(on, node.name)
    assert claim.metadata.annotations[CAPACITY_OVERLAY_APPLIED_ANNOTATION] == "true"
    assert claim.status.capacity[GPU] == "1"

    off = _simulation(False, example=True)
    pod = _trainer(off)
    assert pod.spec.node_name is None
    for claim in off.cluster.list(NodeClaim):
        assert CAPACITY_OVERLAY_APPLIED_ANNOTATION not in claim.metadata.annotations
        assert PRICE_OVERLAY_APPLIED_ANNOTATION not in claim.metadata.annotations


def test_a_price_overlay_changes_the_cheapest_capacity_type() -> None:
    for gate, capacity_type in ((True, "on-demand"), (False, "spot")):
        simulation = _simulation(gate, example=True)
        nodes = simulation.cluster.list(Node)
        assert len(nodes) == 1
        assert nodes[0].metadata.labels[CAPACITY_TYPE_LABEL] == capacity_type, gate
        claim = _claim_of(simulation, nodes[0].name)
        annotated = PRICE_OVERLAY_APPLIED_ANNOTATION in claim.metadata.annotations
        assert annotated == gate


def _overlay(name: str, spec: str) -> str:
    return f"""
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: {name}
spec:
{spec}
---
"""


def _status(simulation: Simulation, name: str) -> tuple[str, str, str, str]:
    overlay = simulation.cluster.get(NodeOverlay, name)
    assert overlay is not None
    valid = find_condition(overlay.status.conditions, CONDITION_VALIDATION_SUCCEEDED)
    ready = find_condition(overlay.status.conditions, CONDITION_READY)
    assert valid is not None
    assert ready is not None
    return valid.status, valid.reason or "", valid.message or "", ready.status


def test_each_overlay_reports_whether_it_applies() -> None:
    price = '  requirements: [{key: kubernetes.io/arch, operator: In, values: ["amd64"]}]\n'
    simulation = _simulation(
        True,
        node_pool()
        + KWOK_NODE_CLASS
        + _overlay("valid", price + '  price: "0.01"\n  weight: 5')
        + _overlay("same-weight", price + '  priceAdjustment: "+1"\n  weight: 5')
        + _overlay(
            "restricted",
            "  requirements: [{key: karpenter.kwok.sh/custom, operator: Exists}]\n"
            '  capacity: {example.com/gpu: "1"}',
        ),
    )
    # "valid" sorts after "same-weight" at equal weight, so it applies first and wins
    assert _status(simulation, "valid") == ("True", CONDITION_VALIDATION_SUCCEEDED, "", "True")
    valid, reason, message, ready = _status(simulation, "same-weight")
    assert (valid, reason, message, ready) == (
        "False",
        "Conflict",
        "conflict with another overlay",
        "False",
    )
    valid, reason, message, ready = _status(simulation, "restricted")
    assert (valid, reason, ready) == ("False", "RuntimeValidation", "False")
    assert "spec.requirements[0].key" in message
    assert "karpenter.kwok.sh" in message


def test_overlays_are_left_alone_with_the_gate_off() -> None:
    simulation = _simulation(
        False,
        node_pool()
        + KWOK_NODE_CLASS
        + _overlay("gpu", '  requirements: []\n  capacity: {example.com/gpu: "1"}'),
    )
    overlay = simulation.cluster.get(NodeOverlay, "gpu")
    assert overlay is not None
    assert overlay.status.conditions == []


def test_a_nodepool_is_not_provisioned_for_until_overlays_were_evaluated_for_it() -> None:
    simulation = _simulation(True, node_pool() + KWOK_NODE_CLASS)
    catalog = simulation.operator.catalog
    pool = simulation.cluster.get(NodePool, "default")
    assert pool is not None
    node_class = catalog.node_class(pool.spec.template.spec.node_class_ref)
    assert catalog.pool_instance_types(node_class, "default", strict=True)
    with pytest.raises(NodePoolNotEvaluatedError, match='nodepool "later"'):
        catalog.pool_instance_types(node_class, "later", strict=True)
    # Elsewhere (a launch, a price) the plain catalog stands in.
    assert catalog.pool_instance_types(node_class, "later") == catalog.instance_types(node_class)


def test_the_overlaid_catalog_is_rebuilt_only_when_overlays_or_the_catalog_change() -> None:
    overlay = _overlay("gpu", '  requirements: []\n  capacity: {example.com/gpu: "1"}')
    simulation = _simulation(True, node_pool() + KWOK_NODE_CLASS + overlay)
    catalog = simulation.operator.catalog
    pool = simulation.cluster.get(NodePool, "default")
    assert pool is not None
    node_class = catalog.node_class(pool.spec.template.spec.node_class_ref)
    first = catalog.pool_instance_types(node_class, "default")
    assert all(it.capacity[GPU] == 1000 for it in first)
    again = catalog.pool_instance_types(node_class, "default")
    assert all(a is b for a, b in zip(first, again, strict=True))
    simulation.cluster.delete(NodeOverlay, "gpu")
    simulation.settle()
    after = catalog.pool_instance_types(node_class, "default")
    assert not any(GPU in it.capacity for it in after)


def _run_example(tmp_path: Path, *extra: str) -> dict[str, Any]:
    report = tmp_path / "report.json"
    argv = ["simulate", str(EXAMPLE / "manifests"), "--scenario", str(EXAMPLE / "scenario.yaml")]
    try:
        assert main([*argv, "--json", str(report), *extra]) == 0
    finally:
        logging.getLogger("nodewright").handlers.clear()
    found: dict[str, Any] = json.loads(report.read_text())
    return found


def test_the_example_runs_from_the_command_line(tmp_path: Path) -> None:
    on = _run_example(tmp_path, "--feature-gates", "NodeOverlay=true")
    assert [p for p in on["pods"] if p["node"] is None] == []
    assert sorted((n["instanceType"], n["capacityType"]) for n in on["nodes"]) == [
        ("c-4x-amd64-linux", "on-demand"),
        ("m-8x-amd64-linux", "on-demand"),
    ]
    off = _run_example(tmp_path)
    assert [p["name"] for p in off["pods"] if p["node"] is None] == ["trainer"]
    assert [n["capacityType"] for n in off["nodes"]] == ["spot"]


def test_simulate_refuses_a_malformed_overlay_naming_the_field(simulate: Simulate) -> None:
    bad = _overlay(
        "bad", '  requirements: []\n  price: "1"\n  priceAdjustment: "+1"\n  capacity: {cpu: "1"}'
    )
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + bad, None, "--feature-gates", "NodeOverlay=true"
    )
    assert result.exit_code == 2
    assert "NodeOverlay \"bad\": spec: cannot set both 'price' and 'priceAdjustment'" in (
        result.stderr
    )
    assert 'NodeOverlay "bad": spec.capacity[cpu]: invalid resource' in result.stderr
