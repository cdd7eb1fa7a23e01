"""A consolidation pass reuses the last pass's simulations only while everything they read is
the same (``controllers/disruption/trialmemo.py``): a change to a node's labels or to a
NodePool's instance types makes the next search find what it could not before, and a change
they do not read leaves the answer as it was."""

from __future__ import annotations

from pathlib import Path

from nodewright.api.core import Node
from nodewright.api.karpenter import NodePool
from nodewright.cluster.objects import mutable
from tests.builders import pool_manifest
from tests.disruption.harness import Harness, fake_type

TYPES = [
    fake_type("small-instance-type", 2, 2, price=1.0),
    fake_type("large-instance-type", 4, 4, price=2.0),
]
GOLD = {"tier": "gold"}


def _label_node(harness: Harness, name: str, labels: dict[str, str]) -> None:
    current = harness.cluster.get(Node, name)
    assert current is not None
    node = mutable(current)
    node.metadata.labels.update(labels)
    harness.cluster.update(node)


def _annotate_node(harness: Harness, name: str) -> None:
    current = harness.cluster.get(Node, name)
    assert current is not None
    node = mutable(current)
    node.metadata.annotations["example.com/touched"] = "yes"
    harness.cluster.update(node)


def _two_nodes(tmp_path: Path) -> tuple[Harness, str, str]:
    """A large node with room for 1 CPU, and a small node whose 1-CPU pod asks for a
    ``tier: gold`` node, which no node has and no NodePool makes: the search runs and finds
    nothing. Returns the harness, the large node and the small node."""
    harness = Harness(tmp_path, types=TYPES)
    large = harness.node("large-instance-type")
    small = harness.node("small-instance-type")
    harness.bind_pods(large, 1, owner="big", cpu="2")
    harness.bind_pods(small, 1, owner="mover", cpu="1", spec={"nodeSelector": GOLD})
    harness.run(30)
    assert harness.live_claim_names() == {large, small}
    messages = [m for o, m in harness.event_log("Unconsolidatable") if o == "node/" + small]
    assert messages, "the search ran"
    assert messages[0].startswith("Not all pods would schedule"), messages
    return harness, large, small


def test_a_label_that_lets_a_pod_move_is_seen_by_the_next_search(tmp_path: Path) -> None:
    harness, large, small = _two_nodes(tmp_path)
    _label_node(harness, large, GOLD)
    harness.run(30)
    assert harness.live_claim_names() == {large}, "the small node's pod moves to the large one"
    assert ("node/" + small, "Disrupting Node: Consolidation/Delete") in harness.event_log(
        "DisruptionTerminating"
    )


def _set_allocatable_cpu(harness: Harness, name: str, cpu: str) -> None:
    current = harness.cluster.get(Node, name)
    assert current is not None
    node = mutable(current)
    node.status.allocatable["cpu"] = cpu
    harness.cluster.update_status(node)


def test_room_freed_on_a_node_is_seen_by_the_next_search(tmp_path: Path) -> None:
    """Only the large node's allocatable CPU changes (its pods, labels and taints do not)."""
    harness = Harness(tmp_path, types=TYPES)
    large = harness.node("large-instance-type")
    small = harness.node("small-instance-type")
    harness.bind_pods(large, 1, owner="big", cpu="2")
    harness.bind_pods(small, 1, owner="mover", cpu="1")
    _set_allocatable_cpu(harness, large, "2500m")
    harness.run(30)
    assert harness.live_claim_names() == {large, small}
    assert ("node/" + small, "Can't replace with a cheaper node") in harness.event_log(
        "Unconsolidatable"
    )
    _set_allocatable_cpu(harness, large, "3500m")
    harness.run(30)
    assert harness.live_claim_names() == {large}, "the small node's pod moves to the large one"


def test_a_change_the_search_does_not_read_keeps_its_answer(tmp_path: Path) -> None:
    harness, large, small = _two_nodes(tmp_path)
    _annotate_node(harness, large)
    harness.run(30)
    assert harness.live_claim_names() == {large, small}
    _label_node(harness, large, GOLD)
    harness.run(30)
    assert harness.live_claim_names() == {large}, "an answer kept is dropped on a label change"


def test_a_nodepool_allowing_a_cheaper_type_is_seen_by_the_next_search(tmp_path: Path) -> None:
    only_large = [
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["large-instance-type"],
        }
    ]
    harness = Harness(tmp_path, types=TYPES, pools=[pool_manifest(requirements=only_large)])
    large = harness.node("large-instance-type")
    harness.bind_pods(large, 1, cpu="500m")
    harness.run(30)
    assert harness.live_claim_names() == {large}
    assert ("node/" + large, "Can't replace with a cheaper node") in harness.event_log(
        "Unconsolidatable"
    )
    current = harness.cluster.get(NodePool, "default")
    assert current is not None
    pool = mutable(current)
    pool.spec.template.spec.requirements[0].values.append("small-instance-type")
    harness.cluster.update(pool)
    harness.run(60)
    assert ("node/" + large, "Disrupting Node: Consolidation/Replace") in harness.event_log(
        "DisruptionTerminating"
    )
    (claim,) = harness.claims()
    assert harness.instance_type(claim) == "small-instance-type"
