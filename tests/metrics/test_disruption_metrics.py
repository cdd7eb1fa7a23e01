"""What /metrics counts when NodeClaims are disrupted: ``karpenter_nodeclaims_disrupted_total``
and ``karpenter_pods_disruption_initiated_total`` with Karpenter's ``consolidation_policy`` and
``termination_mode`` labels, for every way a NodeClaim is deleted; and the disruption budget
gauges ``karpenter_nodepools_allowed_disruptions`` and ``_nodes_consuming_budgets``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client import REGISTRY

from nodewright.api.core import Node
from nodewright.metrics import sample
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment
from nodewright_kwok.ledger import TERMINATED
from tests.controllers.kwok_world import KWOKWorld, four_cpu_pool

DISRUPTED = "karpenter_nodeclaims_disrupted_total"
PODS = "karpenter_pods_disruption_initiated_total"


def total(name: str, **labels: str) -> float:
    """The sum of a counter's series whose labels include ``labels``."""
    return sum(
        s.value
        for family in REGISTRY.collect()
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    )


def labelled(name: str, **labels: str) -> list[dict[str, str]]:
    """The label sets of a metric's series that include ``labels``."""
    return [
        dict(s.labels)
        for family in REGISTRY.collect()
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    ]


@pytest.mark.parametrize(
    ("grace", "mode"),
    [(None, "graceful"), ("1h", "eventual"), ("0s", "forceful")],
)
def test_expiration_counts_the_nodeclaim_and_its_pods_by_termination_mode(
    grace: str | None, mode: str
) -> None:
    spec = "expireAfter: 10m" + (f"\nterminationGracePeriod: {grace}" if grace else "")
    world = KWOKWorld()
    world.apply(four_cpu_pool(template_spec=spec), KWOK_NODE_CLASS, deployment("web", 3))
    world.settle()
    assert len(world.nodes()) == 1
    labels = {
        "reason": "expired",
        "nodepool": "default",
        "capacity_type": "on-demand",
        "consolidation_policy": "",
        "termination_mode": mode,
    }
    claims, pods = sample(DISRUPTED, labels), sample(PODS, labels)
    world.advance(timedelta(minutes=10))
    assert sample(DISRUPTED, labels) == claims + 1
    assert sample(PODS, labels) == pods + 3


def test_consolidation_names_the_pools_policy() -> None:
    world = KWOKWorld()
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, deployment("web", 3))
    world.settle()
    before = total(DISRUPTED, reason="empty", consolidation_policy="when_empty_or_underutilized")
    world.apply(deployment("web", 0))
    world.settle()
    assert world.nodes() == []
    after = total(DISRUPTED, reason="empty", consolidation_policy="when_empty_or_underutilized")
    assert after == before + 1
    # The pods had left: the empty node moves none.
    assert labelled(PODS, reason="empty", consolidation_policy="when_empty_or_underutilized")


def test_a_launch_timeout_is_counted_without_pods() -> None:
    world = KWOKWorld()
    world.provider.faults.rates["launch"] = 1.0
    before = total(DISRUPTED, reason="launch_timeout", termination_mode="graceful")
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, deployment("web", 1))
    world.advance(timedelta(minutes=5, seconds=10))
    assert total(DISRUPTED, reason="launch_timeout", termination_mode="graceful") == before + 1
    assert labelled(PODS, reason="launch_timeout") == []


def test_insufficient_capacity_is_counted() -> None:
    world = KWOKWorld({"fault-insufficient-capacity": "*/*/*"})
    before = total(DISRUPTED, reason="insufficient_capacity", nodepool="default")
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, deployment("web", 1))
    world.advance(timedelta(seconds=5))
    assert total(DISRUPTED, reason="insufficient_capacity", nodepool="default") > before


def test_garbage_collection_counts_the_pods_its_node_held() -> None:
    world = KWOKWorld()
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, deployment("web", 2))
    world.settle()
    (entry,) = world.ledger.entries()
    (node,) = world.nodes()
    before = total(PODS, reason="garbage_collected")
    entry.set_state(TERMINATED)  # behind nodewright's back; its kubelet stops reporting
    world.sim.set_node_condition(node.name, "Ready", "Unknown", "NodeStatusUnknown", "gone")
    world.advance(timedelta(minutes=3))
    assert total(PODS, reason="garbage_collected") == before + 2


def test_budget_gauges_count_allowed_and_unavailable_nodes() -> None:
    world = KWOKWorld()
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, deployment("web", 3, "3"))
    world.settle()
    nodes = world.nodes()
    assert len(nodes) == 3
    world.sim.set_node_condition(nodes[0].name, "Ready", "False", "KubeletNotReady", "simulated")
    world.apply(deployment("web", 0, "3"))
    world.advance(timedelta(seconds=30))
    labels = {"nodepool": "default", "reason": "Empty"}
    # 10 % of three nodes, rounded up; the NotReady node uses it up.
    assert sample("karpenter_nodepools_allowed_disruptions", labels) == 1
    assert sample("karpenter_nodepools_nodes_consuming_budgets", labels) == 1
    assert len(world.cluster.list(Node)) == 3
