"""Karpenter dedupes its disruption events on the object alone, not on their message: a node
whose reason not to be disrupted changes gets no second event until the window has passed."""

from __future__ import annotations

from pathlib import Path

from nodewright.api.core import Node, Pod
from nodewright.cluster.objects import mutable
from tests.disruption.harness import Harness, fake_type


def _messages(harness: Harness, reason: str, node: str) -> list[str]:
    """The messages of the Node's events of ``reason``, sorted."""
    return sorted(m for who, m in harness.event_log(reason) if who == "node/" + node)


def _ladder() -> list[dict[str, object]]:
    return [
        fake_type(f"type-{i:02d}", 4, 4, spot_zones=["test-zone-1"], on_demand_zones=[])
        for i in range(3)
    ]


def test_a_new_unconsolidatable_message_waits_for_the_15_minute_window(tmp_path: Path) -> None:
    harness = Harness(tmp_path, types=_ladder())
    node = harness.node("type-02", capacity_type="spot")
    harness.bind_pods(node, 1)
    harness.run(60)
    spot = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
    assert _messages(harness, "Unconsolidatable", node) == [spot]
    stored = harness.cluster.get(Node, node)
    assert stored is not None
    live = mutable(stored)
    del live.metadata.labels["topology.kubernetes.io/zone"]
    harness.cluster.update(live)
    harness.run(10 * 60)
    assert _messages(harness, "Unconsolidatable", node) == [spot], "still within 15 minutes"
    harness.run(6 * 60)
    assert _messages(harness, "Unconsolidatable", node) == sorted(
        [spot, 'Node does not have label "topology.kubernetes.io/zone"']
    )
    assert ("nodeclaim/" + node, spot) in harness.event_log("Unconsolidatable")


def test_a_new_disruption_blocked_message_waits_for_the_2_minute_window(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    first, second = harness.launch_nodes(2, "small-instance-type")
    harness.bind_pods(first, 2)
    (held,) = harness.bind_pods(second, 1, annotations={"karpenter.sh/do-not-disrupt": "true"})
    harness.bind_pods(second, 1, owner="guarded", labels={"guard": "yes"})
    harness.pdb("guard", {"guard": "yes"}, max_unavailable=0)
    harness.run(20)
    annotated = f'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/{held})'
    assert _messages(harness, "DisruptionBlocked", second) == [annotated]
    stored = harness.cluster.get(Pod, held, "default")
    assert stored is not None
    pod = mutable(stored)
    del pod.metadata.annotations["karpenter.sh/do-not-disrupt"]
    harness.cluster.update(pod)
    harness.run(60)
    assert _messages(harness, "DisruptionBlocked", second) == [annotated], "within 2 minutes"
    harness.run(60)
    assert _messages(harness, "DisruptionBlocked", second) == sorted(
        [annotated, "Pdb prevents pod evictions (PodDisruptionBudget=[default/guard])"]
    )
