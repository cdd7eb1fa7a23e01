"""The report tells the whole run: nodes removed during it (how long they ran, why they went),
what disruption decided, a timeline of each step, and what the nodes cost in dollar-hours."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nodewright.commands import main
from tests.conftest import Simulate

ROOT = Path(__file__).resolve().parents[2]


def _example(name: str, scenario: str) -> tuple[str, str]:
    folder = ROOT / "examples" / name
    manifests = "\n---\n".join(
        path.read_text() for path in sorted((folder / "manifests").glob("*.yaml"))
    )
    return manifests, (folder / scenario).read_text()


def _section(stdout: str, header: str) -> list[str]:
    """The lines of the table whose header starts with ``header`` (header included)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_scale_down_ends_with_the_removed_node_why_it_went_and_what_it_cost(
    simulate: Simulate,
) -> None:
    result = simulate(*_example("inflate", "scale-down.yaml"))
    assert result.exit_code == 0, result.stderr
    assert "\n0 node(s), $0.0000/h, 0 pod(s) bound, 0 pending\n" in result.stdout
    (removed,) = result.report["removedNodes"]
    header, row = _section(result.stdout, "REMOVED NODE")
    assert header.split() == [
        "REMOVED", "NODE", "NODEPOOL", "INSTANCE", "TYPE", "CAPACITY", "$/H", "RAN", "WHY"
    ]  # fmt: skip
    assert row.split() == [
        removed["name"],
        "default",
        removed["instanceType"],
        "spot",
        f"{removed['pricePerHour']:.4f}",
        "2m15s",
        "Empty",
        "(Emptiness/Delete)",
    ]
    decisions = _section(result.stdout, "DISRUPTION")
    assert any(
        f"node/{removed['name']}" in line
        and "DisruptionTerminating" in line
        and "Disrupting Node: Emptiness/Delete" in line
        and line.startswith("00:03:16")
        for line in decisions
    ), decisions
    assert not any("Disrupting NodeClaim" in line for line in decisions)
    # The node ran from 00:01:01 until it was gone at 00:03:21: 140 s at its price.
    expected = removed["pricePerHour"] * 140 / 3600
    assert result.report["dollarHours"] == pytest.approx(expected, abs=1e-5)
    assert f"${expected:.4f} spent on nodes" in result.stdout


def test_consolidation_decisions_are_listed_in_karpenters_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = ROOT / "examples" / "consolidation"
    argv = ["simulate", str(folder / "manifests"), "--scenario", str(folder / "scenario.yaml")]
    try:
        assert main(argv) == 0
    finally:
        logging.getLogger("nodewright").handlers.clear()
    stdout = capsys.readouterr().out
    decisions = "\n".join(_section(stdout, "DISRUPTION"))
    assert "Unconsolidatable       Can't replace with a cheaper node" in decisions
    assert "Disrupting Node: Consolidation/Delete" in decisions
    _header, row = _section(stdout, "REMOVED NODE")
    assert row.endswith("Empty (Consolidation/Delete)")


def test_the_timeline_follows_each_step_and_ends_where_the_report_does(
    simulate: Simulate,
) -> None:
    manifests, _ = _example("inflate", "scale-down.yaml")
    scenario = (
        "- scale: {kind: Deployment, name: inflate, namespace: default, replicas: 10}\n"
        "- advance: 10m\n"
        "- scale: {kind: Deployment, name: inflate, namespace: default, replicas: 3}\n"
    )
    result = simulate(manifests, scenario)
    assert result.exit_code == 0, result.stderr
    timeline = result.report["timeline"]
    assert timeline[0]["seconds"] == 0.0
    assert [p["seconds"] for p in timeline] == sorted(p["seconds"] for p in timeline)
    pending = next(p for p in timeline if p["podsPending"] == 10)
    assert pending["nodes"] == []
    assert pending["pricePerHour"] == 0.0
    busy = next(p for p in timeline if p["podsBound"] == 10)
    (group,) = busy["nodes"]
    assert group["nodePool"] == "default"
    assert group["count"] == 1
    assert busy["pricePerHour"] > 0
    last = timeline[-1]
    assert last["pricePerHour"] == result.report["totalPricePerHour"]
    bound = [p for p in result.pods() if p["node"]]
    assert last["podsBound"] == len(bound) == 3
    assert last["podsPending"] == len(result.pending()) == 0
    groups = {
        (g["nodePool"], g["instanceType"], g["capacityType"]): g["count"] for g in last["nodes"]
    }
    assert sum(groups.values()) == len(result.nodes())
    # Dollar-hours: the hourly price integrated over the steps, never decreasing.
    spent = [p["dollarHours"] for p in timeline]
    assert spent == sorted(spent)
    assert result.report["dollarHours"] >= spent[-1]
    assert result.report["dollarHours"] > busy["pricePerHour"] * 10 / 60
