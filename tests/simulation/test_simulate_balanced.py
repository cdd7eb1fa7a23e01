"""Balanced consolidation offline: the example's big node, left with two pods, is replaced by a
small one because the saving is worth the disruption, and the run says so."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Simulate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "balanced"


def test_the_balanced_example_replaces_the_emptied_node_and_tells_the_score(
    simulate: Simulate,
) -> None:
    manifests = "\n---\n".join(
        (EXAMPLE / "manifests" / name).read_text() for name in ("nodepool.yaml", "web.yaml")
    )
    result = simulate(manifests, (EXAMPLE / "scenario.yaml").read_text())
    assert result.exit_code == 0, result.stderr
    (node,) = result.nodes()
    assert node["instanceType"] == "c-4x-amd64-linux"
    (removed,) = result.report["removedNodes"]
    assert removed["instanceType"] == "c-16x-amd64-linux"
    assert removed["disruption"] == "Consolidation/Replace"
    approved = [
        e for e in result.events("ConsolidationApproved") if e["object"].startswith("node/")
    ]
    assert [e["message"] for e in approved] == [
        "score 0.75 >= threshold 0.50 (k: 2, savings 75.0%, disruption 100.0%)"
    ]
    assert "ConsolidationApproved" in result.stdout
    assert result.events("ConsolidationCandidate")
