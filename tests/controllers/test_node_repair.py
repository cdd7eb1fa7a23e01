"""Node repair (feature gate ``NodeRepair``), as a user sees it: a KWOK node not Ready for
10 minutes is replaced at that moment on the simulated clock, whatever budgets and
``do-not-disrupt`` say; more than 20 % of a NodePool unhealthy blocks every repair with
``NodeRepairBlocked`` events; with the gate off nothing happens. The checklist is Karpenter's
``node/health`` suite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nodewright import metrics
from nodewright.api.core import Node, NodeCondition, NodeStatus
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import TERMINATION_TIMESTAMP_ANNOTATION
from nodewright.api.timestamps import format_timestamp
from nodewright.cluster.objects import mutable
from nodewright.controllers.metrics.disruption import snake_case
from nodewright.controllers.node.health import allowed_unhealthy, unhealthy_condition
from nodewright.controllers.options import Options
from nodewright.plugin.model import RepairPolicy
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment
from tests.controllers.kwok_world import KWOKWorld, four_cpu_pool

TOLERATION = timedelta(minutes=10)  # the KWOK provider's, for Ready False and Unknown
REPAIRED = {
    "reason": "unhealthy",
    "nodepool": "default",
    "capacity_type": "on-demand",
    "consolidation_policy": "",
    "termination_mode": "graceful",
}
BLOCKED_MESSAGE = "more than 20% nodes are unhealthy in the nodepool"


def _world(
    nodes: int, *, gate: bool = True, budget: str = "", annotations: str = "{}"
) -> KWOKWorld:
    """``nodes`` nodes of the default NodePool, one 3-CPU pod on each (4-CPU nodes)."""
    world = KWOKWorld(options=Options(node_repair=gate))
    pool = four_cpu_pool(disruption=f'{{budgets: [{{nodes: "{budget}"}}]}}' if budget else None)
    world.apply(pool, KWOK_NODE_CLASS, deployment("web", nodes, "3", annotations=annotations))
    world.settle()
    assert len(world.nodes()) == nodes
    return world


def _claim_of(world: KWOKWorld, node: Node) -> NodeClaim | None:
    for claim in world.claims():
        if claim.status.provider_id == node.spec.provider_id:
            return claim
    return None


def _break(world: KWOKWorld, node: Node, status: str = "False", kind: str = "Ready") -> datetime:
    world.sim.set_node_condition(node.name, kind, status, "KubeletNotReady", "simulated")
    return world.clock.now()


def _advance_to(world: KWOKWorld, moment: datetime) -> None:
    world.advance(moment - world.clock.now())


def _deleting(world: KWOKWorld, node: Node) -> bool:
    claim = _claim_of(world, node)
    return claim is None or claim.deleting


def test_allowed_unhealthy_is_twenty_percent_rounded_up() -> None:
    assert [allowed_unhealthy(n) for n in (0, 1, 3, 5, 6, 10, 11)] == [0, 1, 1, 1, 2, 2, 3]


def test_of_several_matching_conditions_the_one_due_first_decides() -> None:
    """Karpenter: 'should return the requeue interval for the condition closest to its
    terminationDuration'."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    node = Node(
        status=NodeStatus(
            conditions=[
                NodeCondition(type="BadNode", status="False", last_transition_time=start),
                NodeCondition(type="Slow", status="False", last_transition_time=start),
                NodeCondition(type="Ready", status="True", last_transition_time=start),
            ]
        )
    )
    policies = (
        RepairPolicy("BadNode", "False", timedelta(minutes=60)),
        RepairPolicy("Slow", "False", timedelta(minutes=30)),
        RepairPolicy("Ready", "False", timedelta(minutes=1)),
    )
    found = unhealthy_condition(node, policies)
    assert found is not None
    assert (found.condition.type, found.repair_at) == ("Slow", start + timedelta(minutes=30))
    assert unhealthy_condition(node, policies[2:]) is None


def test_condition_types_become_the_metrics_snake_case() -> None:
    assert snake_case("Ready") == "ready"
    assert snake_case("AcceleratedHardwareReady") == "accelerated_hardware_ready"


@pytest.mark.parametrize("status", ["False", "Unknown"])
def test_a_node_not_ready_for_its_toleration_is_replaced_then(status: str) -> None:
    """Karpenter: 'should delete nodes that are unhealthy by the cloud provider', 'should not
    delete node when health duration is not reached', 'should set annotation termination
    grace period when force termination is started', 'should consider round up when there is
    a low number of nodes for a nodepool' (one of three is 33 %, yet repaired)."""
    world = _world(3)
    broken, *healthy = sorted(world.nodes(), key=lambda n: n.name)
    before = metrics.sample("karpenter_nodeclaims_disrupted_total", REPAIRED)
    since = _break(world, broken, status)

    _advance_to(world, since + TOLERATION - timedelta(seconds=1))
    assert not _deleting(world, broken), "still within its toleration"

    _advance_to(world, since + TOLERATION + timedelta(seconds=1))
    claim = _claim_of(world, broken)
    assert claim is not None
    assert claim.deleting, "drained: its NodeClaim is being deleted"
    stamp = claim.metadata.annotations[TERMINATION_TIMESTAMP_ANNOTATION]
    assert stamp == format_timestamp(since + TOLERATION), "pods are not waited for"
    assert metrics.sample("karpenter_nodeclaims_disrupted_total", REPAIRED) == before + 1

    world.settle()
    names = {n.name for n in world.nodes()}
    assert broken.name not in names
    assert {n.name for n in healthy} < names
    assert len(names) == 3, "a replacement was launched"
    assert all(p.spec.node_name in names for p in world.pods("web"))
    record = world.sim.operator.disruption.history.records[claim.name]
    assert record.disruption_reason == "Unhealthy"
    assert record.removed_at is not None
    assert world.events("NodeRepairBlocked") == []


def test_more_than_twenty_percent_unhealthy_blocks_every_repair() -> None:
    """Karpenter: 'should ignore unhealthy nodes if more then 20% of the nodes are unhealthy
    in a nodepool' (2 of 5 > 1); repair resumes when the share falls back."""
    world = _world(5)
    first, second, *_ = sorted(world.nodes(), key=lambda n: n.name)
    since = _break(world, first)
    _break(world, second)

    _advance_to(world, since + TOLERATION + timedelta(minutes=30))
    assert not _deleting(world, first)
    assert not _deleting(world, second)
    assert len(world.nodes()) == 5
    involved = sorted(
        (e.involved_object.kind or "", e.involved_object.name, e.message, e.type)
        for e in world.events("NodeRepairBlocked")
    )
    claims = {_claim_of(world, n).name for n in (first, second)}  # type: ignore[union-attr]
    assert involved == sorted(
        [
            *(("Node", n.name, BLOCKED_MESSAGE, "Warning") for n in (first, second)),
            *(("NodeClaim", name, BLOCKED_MESSAGE, "Warning") for name in claims),
            ("NodePool", "default", BLOCKED_MESSAGE, "Warning"),
        ]
    )

    world.sim.set_node_condition(first.name, "Ready", "True", "KubeletReady", "recovered")
    recovered = world.clock.now()
    _advance_to(world, recovered + timedelta(minutes=5, seconds=1))
    assert _deleting(world, second), "one of five may be repaired again"
    assert not _deleting(world, first)


def test_repair_ignores_disruption_budgets_and_do_not_disrupt() -> None:
    """Karpenter: 'should ignore node disruption budgets', 'should ignore do-not-disrupt on
    a node'."""
    world = _world(
        3,
        budget="0",
        annotations='{"karpenter.sh/do-not-disrupt": "true"}',
    )
    broken = sorted(world.nodes(), key=lambda n: n.name)[0]
    since = _break(world, broken)
    _advance_to(world, since + TOLERATION + timedelta(seconds=1))
    assert _deleting(world, broken)
    world.settle()
    assert broken.name not in {n.name for n in world.nodes()}
    assert len(world.nodes()) == 3


@pytest.mark.parametrize(
    ("kind", "status"),
    [("BadNode", "False"), ("Ready", "True"), ("MemoryPressure", "True")],
)
def test_a_condition_no_policy_names_is_never_repaired(kind: str, status: str) -> None:
    """Karpenter: 'should not delete node when unhealthy type (health status) does not match
    cloud provider passed in value'."""
    world = _world(3)
    node = world.nodes()[0]
    since = _break(world, node, status, kind)
    _advance_to(world, since + timedelta(hours=1))
    assert not _deleting(world, node)
    assert len(world.nodes()) == 3


def test_with_the_gate_off_nothing_is_repaired() -> None:
    world = _world(3, gate=False)
    assert "node.health" not in {c.name for c in world.sim.operator.controllers}
    before = metrics.sample("karpenter_nodeclaims_disrupted_total", REPAIRED)
    names = {n.name for n in world.nodes()}
    broken = world.nodes()[0]
    since = _break(world, broken)
    _advance_to(world, since + timedelta(hours=1))
    assert {n.name for n in world.nodes()} == names
    assert not _deleting(world, broken)
    node = world.cluster.get(Node, broken.name)
    assert node is not None
    assert not node.ready, "the simulated kubelet kept the condition"
    assert world.events("NodeRepairBlocked") == []
    assert metrics.sample("karpenter_nodeclaims_disrupted_total", REPAIRED) == before


def _annotate(world: KWOKWorld, node: Node, stamp: str) -> None:
    claim = _claim_of(world, node)
    assert claim is not None
    claim = mutable(claim)
    claim.metadata.annotations[TERMINATION_TIMESTAMP_ANNOTATION] = stamp
    world.cluster.update(claim)


def test_a_later_termination_deadline_is_pulled_in_to_the_repair() -> None:
    """Karpenter: 'should not respect termination grace period if set on the nodepool'."""
    world = _world(3)
    broken = world.nodes()[0]
    since = _break(world, broken)
    _annotate(world, broken, format_timestamp(since + timedelta(hours=2)))
    _advance_to(world, since + TOLERATION + timedelta(seconds=1))
    claim = _claim_of(world, broken)
    assert claim is not None
    assert claim.deleting
    stamp = claim.metadata.annotations[TERMINATION_TIMESTAMP_ANNOTATION]
    assert stamp == format_timestamp(since + TOLERATION)


def test_an_earlier_termination_deadline_is_kept() -> None:
    """Karpenter: 'should not update termination grace period if set before the current
    time'."""
    world = _world(3)
    broken = world.nodes()[0]
    since = _break(world, broken)
    earlier = format_timestamp(since - timedelta(minutes=3))
    _annotate(world, broken, earlier)
    _advance_to(world, since + TOLERATION + timedelta(seconds=1))
    claim = _claim_of(world, broken)
    assert claim is not None
    assert claim.deleting
    assert claim.metadata.annotations[TERMINATION_TIMESTAMP_ANNOTATION] == earlier
