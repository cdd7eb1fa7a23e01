"""Instance choice end to end: the operator with the KWOK provider on an embedded cluster."""

from __future__ import annotations

from nodewright.api.core import Node
from tests.controllers.kwok_world import NODE_CLASS, KWOKWorld, deployment, node_pool

FAMILY = "karpenter.kwok.sh/instance-family"


def test_a_pod_may_select_a_provider_label_its_node_pool_does_not_name() -> None:
    world = KWOKWorld()
    world.apply(
        NODE_CLASS,
        node_pool(),
        deployment("memory-heavy", 1, extra_spec=f"nodeSelector: {{{FAMILY}: m}}"),
    )
    world.settle()
    (node,) = world.cluster.list(Node)
    assert node.metadata.labels[FAMILY] == "m"
    assert all(p.spec.node_name == node.name for p in world.pods("memory-heavy"))
