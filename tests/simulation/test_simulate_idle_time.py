"""While nothing changes, a simulation jumps over the controllers' polls, yet what falls due
by time alone inside a long ``advance`` happens at its time, not at the end of the step: a
node expires ``expireAfter`` after its launch, an empty node goes ``consolidateAfter`` after
its last pod, as the report's timestamps show."""

from __future__ import annotations

from datetime import datetime, timedelta

from nodewright.clock import SIMULATION_EPOCH
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

ON_DEMAND = "[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]"


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_nodes_expire_at_their_time_within_one_long_advance(simulate: Simulate) -> None:
    pool = node_pool(requirements=ON_DEMAND, template_spec="expireAfter: 5h")
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 2), "- advance: 12h\n")
    assert result.exit_code == 0, result.stderr
    removed = result.report["removedNodes"]
    assert [n["disruptionReason"] for n in removed] == ["Expired", "Expired"]
    for node in removed:
        ran = at(node["removedAt"]) - at(node["launchedAt"])
        assert timedelta(hours=5) <= ran <= timedelta(hours=5, seconds=30), node
    # the second node launched as the first expired, and expired in turn
    assert at(removed[1]["launchedAt"]) - at(removed[0]["removedAt"]) <= timedelta(seconds=30)
    assert result.report["simulatedSeconds"] >= 12 * 3600


def test_an_emptied_node_is_consolidated_at_its_time_within_one_long_advance(
    simulate: Simulate,
) -> None:
    pool = node_pool(requirements=ON_DEMAND, disruption="{consolidateAfter: 2h}")
    scenario = "- advance: 1m\n- scale: {kind: Deployment, name: web, replicas: 0}\n- advance: 9h\n"
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 2), scenario)
    assert result.exit_code == 0, result.stderr
    timeline = result.report["timeline"]
    ran = next(i for i, point in enumerate(timeline) if point["podsBound"] == 2)
    emptied = next(at(p["at"]) for p in timeline[ran:] if p["podsBound"] == 0)
    (node,) = result.report["removedNodes"]
    assert node["disruptionReason"] == "Empty", node
    waited = at(node["removedAt"]) - emptied
    assert timedelta(hours=2) <= waited <= timedelta(hours=2, minutes=1), (emptied, node)
    assert result.nodes() == []
    assert result.report["simulatedSeconds"] >= 9 * 3600


def test_a_node_left_alone_is_reported_unconsolidatable_every_15_minutes(
    simulate: Simulate,
) -> None:
    """The repeats of an event are what a long idle stretch with pods costs: the run skips
    every pass that cannot change anything, yet the event is recorded as Karpenter's
    recorder records it, once per 15-minute dedupe window, on the node and its NodeClaim."""
    pool = node_pool(requirements=ON_DEMAND, disruption="{consolidationPolicy: WhenEmpty}")
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 2), "- advance: 24h\n")
    assert result.exit_code == 0, result.stderr
    events = result.events("Unconsolidatable")
    assert sorted(e["object"].split("/")[0] for e in events) == ["node", "nodeclaim"]
    for event in events:
        assert event["message"] == (
            'NodePool "default" has consolidation policy WhenEmpty, but node is not empty'
        )
        first = at(event["time"])
        end = SIMULATION_EPOCH + timedelta(seconds=result.report["simulatedSeconds"])
        assert int(event["count"]) == (end - first) // timedelta(minutes=15) + 1, (event, end)
