"""The endings of seeds 001 and 002, through ``nodewright simulate`` as a user runs them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from tests.conftest import Simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _manifests(folder: Path) -> str:
    return "\n---\n".join(p.read_text() for p in sorted(folder.glob("*.yaml")))


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _logged_at(stdout: str, text: str) -> datetime:
    line = next(line for line in stdout.splitlines() if text in line)
    return _at(line.split("\t", 1)[0])


def test_seed_001_the_node_left_empty_is_removed_after_consolidate_after(
    simulate: Simulate,
) -> None:
    example = EXAMPLES / "inflate"
    result = simulate(_manifests(example / "manifests"), (example / "scale-down.yaml").read_text())
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == [], "the empty node is gone"
    (removed,) = result.report["removedNodes"]
    assert removed["disruptionReason"] == "Empty"
    assert removed["disruption"] == "Emptiness/Delete"
    assert removed["pricePerHour"] > 0
    node = removed["name"]
    messages = {(e["object"], e["message"]) for e in result.events("DisruptionTerminating")}
    assert (f"node/{node}", "Disrupting Node: Emptiness/Delete") in messages
    assert (f"nodeclaim/{node}", "Disrupting NodeClaim: Emptiness/Delete") in messages
    # The pods go when the deployment is deleted; the node goes consolidateAfter (30 s)
    # plus the 15 s validation later, within one 10 s polling period.
    deleted = _logged_at(result.stdout, "Deleted deployment inflate")
    waited = (_at(removed["removedAt"]) - deleted).total_seconds()
    assert 45 <= waited <= 55, waited
    assert _at(removed["launchedAt"]) < deleted
    assert f"deleted node\tNode={node}\n" in result.stdout


def test_seed_002_cheapest_node_cannot_be_replaced_and_goes_once_its_pod_is_deleted(
    simulate: Simulate,
) -> None:
    example = EXAMPLES / "consolidation"
    # The scenario applies pod.yaml relative to itself; the fixture copies it elsewhere.
    scenario = (example / "scenario.yaml").read_text()
    scenario = scenario.replace("apply: pod.yaml", f"apply: {example / 'pod.yaml'}")
    result = simulate(_manifests(example / "manifests"), scenario)
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    (removed,) = result.report["removedNodes"]
    node = removed["name"]
    unconsolidatable = {(e["object"], e["message"]) for e in result.events("Unconsolidatable")}
    assert unconsolidatable == {
        (f"node/{node}", "Can't replace with a cheaper node"),
        (f"nodeclaim/{node}", "Can't replace with a cheaper node"),
    }
    terminating = {(e["object"], e["message"]) for e in result.events("DisruptionTerminating")}
    assert terminating == {
        (f"node/{node}", "Disrupting Node: Consolidation/Delete"),
        (f"nodeclaim/{node}", "Disrupting NodeClaim: Consolidation/Delete"),
    }
    assert removed["disruption"] == "Consolidation/Delete"
    assert removed["capacityType"] == "on-demand"
    waited = (
        _at(removed["removedAt"]) - _logged_at(result.stdout, "Deleted pod test")
    ).total_seconds()
    assert 15 <= waited <= 25, waited
