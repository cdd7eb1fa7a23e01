"""Node repair rehearsed with ``nodewright simulate``: the ``setNodeCondition`` scenario step,
its input errors (exit status 2, naming the field), and the shipped example run with and
without ``--feature-gates NodeRepair=true``."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from nodewright.commands import main
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

EXAMPLE = Path(__file__).parents[2] / "examples" / "node-repair"
ONE_PER_NODE = """
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app: web}}
"""
MANIFESTS = node_pool() + KWOK_NODE_CLASS + deployment("web", 3, extra_spec=ONE_PER_NODE)
GATE = ("--feature-gates", "NodeRepair=true")


def _run_example(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    report = tmp_path / "report.json"
    argv = [
        "simulate",
        str(EXAMPLE / "manifests"),
        "--scenario",
        str(EXAMPLE / "scenario.yaml"),
        "--json",
        str(report),
        *extra,
    ]
    try:
        assert main(argv) == 0
    finally:
        logging.getLogger("nodewright").handlers.clear()
    capsys.readouterr()
    return dict(json.loads(report.read_text()))


def test_the_example_replaces_a_broken_node_and_is_blocked_above_twenty_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _run_example(tmp_path, capsys, *GATE)
    removed = report["removedNodes"]
    assert [(r["disruptionReason"], r["disruption"]) for r in removed] == [
        ("Unhealthy", "Repair/Delete: Ready=False"),
        ("Unhealthy", "Repair/Delete: Ready=False"),
    ]
    # The first is replaced when its 10 minutes run out (Ready=False set at 00:01:xx).
    assert removed[0]["removedAt"].startswith("2026-01-01T00:11:")
    assert len(report["nodes"]) == 5, "each repaired node was replaced"
    assert all(p["node"] for p in report["pods"])
    blocked = [e for e in report["events"] if e["reason"] == "NodeRepairBlocked"]
    kinds = sorted({e["object"].split("/")[0] for e in blocked})
    assert kinds == ["node", "nodeclaim", "nodepool"]
    assert {e["type"] for e in blocked} == {"Warning"}
    assert {e["message"] for e in blocked} == {"more than 20% nodes are unhealthy in the nodepool"}
    # Repair resumed only after one of the two recovered (00:35:xx), within 5 minutes.
    assert "2026-01-01T00:35:" < removed[1]["removedAt"] < "2026-01-01T00:41:"


def test_the_example_without_the_gate_replaces_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _run_example(tmp_path, capsys)
    assert report["removedNodes"] == []
    assert [e for e in report["events"] if e["reason"] == "NodeRepairBlocked"] == []
    ready = [
        n["name"] for n in report["nodes"] if n["labels"].get("karpenter.sh/nodepool") == "default"
    ]
    assert len(ready) == 5


def test_a_node_named_in_the_step_is_the_one_replaced(simulate: Simulate) -> None:
    first = simulate(MANIFESTS, None, *GATE)
    target = sorted(n["name"] for n in first.nodes())[1]
    scenario = f"""
steps:
  - setNodeCondition: {{node: {target}, type: Ready, status: Unknown}}
  - advance: 9m
"""
    tolerated = simulate(MANIFESTS, scenario, *GATE)
    assert tolerated.report["removedNodes"] == []
    repaired = simulate(MANIFESTS, scenario + "  - advance: 2m\n  - settle: {}\n", *GATE)
    assert [r["name"] for r in repaired.report["removedNodes"]] == [target]
    assert f"Set condition Ready=Unknown on node {target}" in repaired.stdout


@pytest.mark.parametrize(
    ("step", "words"),
    [
        ("{node: x, type: Ready, status: False}", ".status: False is a YAML boolean; quote it"),
        ('{node: x, type: Ready, status: "no"}', ".status: expected one of True, False, Unknown"),
        ('{node: x, status: "False"}', ".type: expected a condition type such as Ready, missing"),
        ('{type: Ready, status: "False"}', ": give either node (a Node's name) or selector"),
        (
            '{node: x, selector: {a: b}, type: Ready, status: "False"}',
            ": give either node (a Node's name) or selector",
        ),
        ('{node: x, count: 2, type: Ready, status: "False"}', ".count: only with selector"),
        (
            '{selector: {a: b}, count: 0, type: Ready, status: "False"}',
            ".count: expected a whole number >= 1",
        ),
        ('{selector: [a], type: Ready, status: "False"}', ".selector: expected labels"),
        ('{node: x, type: Ready, status: "False", colour: red}', "unknown field(s) 'colour'"),
        ("Ready", "setNodeCondition: expected a mapping"),
    ],
)
def test_a_bad_set_node_condition_step_exits_2_naming_the_field(
    simulate: Simulate, tmp_path: Path, step: str, words: str
) -> None:
    result = simulate(MANIFESTS, f"steps:\n  - setNodeCondition: {step}\n", *GATE)
    assert result.exit_code == 2
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith(f"error: {tmp_path / 'scenario.yaml'}:2: steps[0].setNodeCondition")
    assert words in error


@pytest.mark.parametrize(
    ("step", "words"),
    [
        (
            '{node: nope, type: Ready, status: "False"}',
            "setNodeCondition.node: Node 'nope' does not exist (nodes: default-",
        ),
        (
            '{selector: {team: red}, type: Ready, status: "False"}',
            "setNodeCondition.selector: no Node carries the labels team=red",
        ),
        (
            '{selector: {karpenter.sh/nodepool: default}, count: 4, type: Ready, status: "False"}',
            "3 Node(s) carry the labels karpenter.sh/nodepool=default, fewer than count 4",
        ),
    ],
)
def test_a_step_that_matches_no_node_exits_2_saying_so(
    simulate: Simulate, step: str, words: str
) -> None:
    result = simulate(MANIFESTS, f"steps:\n  - setNodeCondition: {step}\n", *GATE)
    assert result.exit_code == 2
    assert words in result.stderr
