"""Controllers that work off change feeds look at every object now and then (a resync); it
must never find work the feeds missed."""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.karpenter import NodeClaim
from nodewright.clock import SimulatedClock
from nodewright.controllers.workqueue import Resync
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, pod_disruption_budget
from tests.controllers.kwok_world import KWOKWorld, four_cpu_pool


def _resync_writes(world: KWOKWorld) -> int:
    """Writes (Events included) one pass makes when every controller looks at everything."""
    before = world.cluster.state.version
    world.sim.operator.resync()
    world.sim.operator.run_once()
    return world.cluster.state.version - before


def test_a_resync_after_scaling_up_and_down_finds_nothing_new() -> None:
    world = KWOKWorld()
    pool = four_cpu_pool(
        "expireAfter: 30m",
        disruption="{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 10s}",
    )
    world.apply(
        KWOK_NODE_CLASS,
        pool,
        deployment("web", 12),
        deployment("db", 3),
        pod_disruption_budget("db", 1),
    )
    world.settle()
    assert world.nodes()
    assert _resync_writes(world) == 0
    world.apply(deployment("web", 2))
    world.advance(timedelta(minutes=5))
    assert _resync_writes(world) == 0
    world.advance(timedelta(minutes=30))  # the first nodes expire and are replaced
    assert _resync_writes(world) == 0


def test_a_resync_finds_what_a_lost_change_left_undone() -> None:
    """The resync is a real safety net: with the lifecycle's feed cut, a NodeClaim created
    meanwhile is only launched by the resync."""
    world = KWOKWorld()
    world.apply(KWOK_NODE_CLASS, four_cpu_pool())
    world.settle()
    lifecycle = next(c for c in world.sim.operator.controllers if c.name == "nodeclaim.lifecycle")
    world.cluster.state.close(lifecycle._changes)  # type: ignore[attr-defined]
    world.apply(deployment("web", 2))
    world.sim.advance(timedelta(seconds=5))
    waiting = [c for c in world.claims() if not c.status.provider_id]
    assert waiting, "the lost change left the NodeClaim unlaunched"
    assert _resync_writes(world) > 0
    launched = world.cluster.get(NodeClaim, waiting[0].name)
    assert launched is not None
    assert launched.status.provider_id


def test_a_resync_falls_due_first_then_every_period_and_after_a_reset() -> None:
    clock = SimulatedClock()
    resync = Resync(timedelta(minutes=10))
    assert resync.due(clock.now()), "the first pass looks at everything"
    clock.advance(timedelta(minutes=9, seconds=59))
    assert not resync.due(clock.now())
    assert resync.at == clock.now() + timedelta(seconds=1)
    clock.advance(timedelta(seconds=1))
    assert resync.due(clock.now())
    assert not resync.due(clock.now()), "once per period"
    resync.reset()
    assert resync.due(clock.now()), "a reset makes the next pass look at everything"
    assert resync.at == clock.now() + timedelta(minutes=10)
