"""Crash consistency: stop nodewright at every step of launch and of termination, start a
fresh operator on the same cluster and the same cloud, and check nothing leaked or doubled.

Each case arms one fault point (in the KWOK provider or in the embedded cluster's API
store), runs the scenario until the point fires, throws the operator away and starts a new
one (new plugin host, new provider object, same MemoryCluster, same KWOK ledger), runs to a
stable state and checks: every cloud instance has a NodeClaim, no NodeClaim was launched
twice, every pod is bound, and the PodDisruptionBudget was never broken.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import (
    CONDITION_DRAINED,
    CONDITION_INITIALIZED,
    CONDITION_INSTANCE_TERMINATING,
    CONDITION_LAUNCHED,
    CONDITION_REGISTERED,
    NodeClaim,
)
from nodewright.api.labels import (
    DISRUPTED_TAINT_KEY,
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    TERMINATION_FINALIZER,
    TERMINATION_TIMESTAMP_ANNOTATION,
)
from nodewright.api.meta import KubeObject, is_true
from nodewright.cluster.faults import Crash as ClusterCrash
from nodewright.cluster.faults import FaultPoint, WriteVerb
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, pod_disruption_budget
from nodewright_kwok.faults import Crash as CloudCrash
from tests.controllers.kwok_world import Availability, KWOKWorld, four_cpu_pool

REPLICAS = 6
MAX_UNAVAILABLE = 1
#: Long enough for garbage collection's period and grace to pass after a restart.
AFTER_RESTART = timedelta(minutes=5)

Match = Callable[[KubeObject | None, KubeObject | None], bool]


def _condition_set(kind: str) -> Match:
    def match(old: KubeObject | None, new: KubeObject | None) -> bool:
        assert isinstance(old, NodeClaim)
        assert isinstance(new, NodeClaim)
        return is_true(new.status.conditions, kind) and not is_true(old.status.conditions, kind)

    return match


def _finalizer(added: bool) -> Match:
    def match(old: KubeObject | None, new: KubeObject | None) -> bool:
        assert old is not None
        assert new is not None
        had = TERMINATION_FINALIZER in old.metadata.finalizers
        has = TERMINATION_FINALIZER in new.metadata.finalizers
        return (has and not had) if added else (had and not has)

    return match


def _label_added(key: str) -> Match:
    def match(old: KubeObject | None, new: KubeObject | None) -> bool:
        assert old is not None
        assert new is not None
        return key in new.metadata.labels and key not in old.metadata.labels

    return match


def _annotation_added(key: str) -> Match:
    def match(old: KubeObject | None, new: KubeObject | None) -> bool:
        assert old is not None
        assert new is not None
        return key in new.metadata.annotations and key not in old.metadata.annotations

    return match


def _tainted(old: KubeObject | None, new: KubeObject | None) -> bool:
    assert isinstance(old, Node)
    assert isinstance(new, Node)
    return any(t.key == DISRUPTED_TAINT_KEY for t in new.spec.taints) and not any(
        t.key == DISRUPTED_TAINT_KEY for t in old.spec.taints
    )


def _conditions_initialized(old: KubeObject | None, new: KubeObject | None) -> bool:
    assert isinstance(old, NodeClaim)
    return not old.status.conditions


@dataclass(frozen=True)
class Point:
    """Where to crash: in the ``launch`` phase (pods appear, nodes launch) or in the
    ``terminate`` phase (a NodeClaim deleted by hand is drained and its instance deleted)."""

    phase: str
    name: str
    cloud: str = ""
    verb: WriteVerb = "update"
    kind: type[KubeObject] = NodeClaim
    before: bool = True
    match: Match | None = None

    def arm(self, world: KWOKWorld) -> None:
        if self.cloud:
            world.provider.faults.crash_at(self.cloud)
        else:
            world.cluster.crash_at(
                FaultPoint(self.name, self.verb, self.kind, self.before, self.match)
            )


def _both(phase: str, name: str, verb: WriteVerb, kind: type[KubeObject], match: Match | None):  # type: ignore[no-untyped-def]
    return [
        Point(phase, f"before {name}", verb=verb, kind=kind, before=True, match=match),
        Point(phase, f"after {name}", verb=verb, kind=kind, before=False, match=match),
    ]


POINTS = [
    # -- launch ---------------------------------------------------------------------------------
    *_both("launch", "NodeClaim create", "create", NodeClaim, None),
    Point(
        "launch",
        "after the finalizer is added",
        kind=NodeClaim,
        before=False,
        match=_finalizer(added=True),
    ),
    Point(
        "launch",
        "after conditions start Unknown",
        verb="update_status",
        before=False,
        match=_conditions_initialized,
    ),
    Point("launch", "before provider launch", cloud="launch.before"),
    Point("launch", "after provider launch", cloud="launch.after"),
    *_both("launch", "launch labels write", "update", NodeClaim, _label_added(INSTANCE_TYPE_LABEL)),
    *_both(
        "launch",
        "Launched status write",
        "update_status",
        NodeClaim,
        _condition_set(CONDITION_LAUNCHED),
    ),
    Point("launch", "before node registers", cloud="register.before"),
    Point("launch", "after node registers", cloud="register.after"),
    *_both("launch", "node sync (finalizer)", "update", Node, _finalizer(added=True)),
    *_both(
        "launch",
        "Registered status write",
        "update_status",
        NodeClaim,
        _condition_set(CONDITION_REGISTERED),
    ),
    *_both("launch", "initialized label", "update", Node, _label_added(INITIALIZED_LABEL)),
    *_both(
        "launch",
        "Initialized status write",
        "update_status",
        NodeClaim,
        _condition_set(CONDITION_INITIALIZED),
    ),
    *_both("launch", "pod bind", "bind", Pod, None),
    # -- termination ----------------------------------------------------------------------------
    *_both(
        "terminate",
        "deadline annotation",
        "update",
        NodeClaim,
        _annotation_added(TERMINATION_TIMESTAMP_ANNOTATION),
    ),
    *_both("terminate", "node delete", "delete", Node, None),
    *_both("terminate", "disrupted taint", "update", Node, _tainted),
    *_both("terminate", "pod eviction", "evict", Pod, None),
    *_both(
        "terminate",
        "Drained status write",
        "update_status",
        NodeClaim,
        _condition_set(CONDITION_DRAINED),
    ),
    Point("terminate", "before provider delete", cloud="delete.before"),
    Point("terminate", "after provider delete", cloud="delete.after"),
    *_both(
        "terminate",
        "InstanceTerminating status write",
        "update_status",
        NodeClaim,
        _condition_set(CONDITION_INSTANCE_TERMINATING),
    ),
    *_both("terminate", "node finalizer removal", "update", Node, _finalizer(added=False)),
    *_both(
        "terminate", "nodeclaim finalizer removal", "update", NodeClaim, _finalizer(added=False)
    ),
]


@pytest.mark.parametrize("point", POINTS, ids=[f"{p.phase}: {p.name}" for p in POINTS])
def test_a_crash_at_any_step_leaks_nothing_and_launches_nothing_twice(point: Point) -> None:
    world = KWOKWorld()
    world.apply(four_cpu_pool("terminationGracePeriod: 1h"), KWOK_NODE_CLASS)
    if point.phase == "launch":
        point.arm(world)
    world.apply(deployment("web", REPLICAS), pod_disruption_budget("web", MAX_UNAVAILABLE))
    if point.phase == "launch":
        _crash_and_restart(world)
    world.settle()
    assert all(p.status.phase == "Running" for p in world.pods("web"))

    availability = Availability(world, "web")
    victim = world.claims()[0]
    world.cluster.delete(NodeClaim, victim.name)
    if point.phase == "terminate":
        point.arm(world)
        _crash_and_restart(world)
    world.settle()
    world.advance(AFTER_RESTART)
    world.settle()

    claims = world.claims()
    assert victim.name not in {c.name for c in claims}, "the NodeClaim deleted by hand is gone"
    assert not [c.name for c in claims if c.deleting], "no NodeClaim is stuck deleting"
    assert not [n.name for n in world.nodes() if n.deleting], "no Node is stuck deleting"
    owned = {c.status.provider_id for c in claims}
    assert set(world.live_instances()) == owned, "every instance has a NodeClaim and vice versa"
    launches = Counter(e.idempotency_key for e in world.ledger.entries(include_terminated=True))
    assert [key for key, count in launches.items() if count > 1] == [], (
        "no NodeClaim launched twice"
    )
    nodes = {n.name for n in world.nodes()}
    pods = world.pods("web")
    assert len(pods) == REPLICAS
    assert all(p.spec.node_name in nodes for p in pods), "every pod ends bound to a live node"
    assert availability.fewest() >= REPLICAS - MAX_UNAVAILABLE, "the PDB was never broken"


def _crash_and_restart(world: KWOKWorld) -> None:
    with pytest.raises((ClusterCrash, CloudCrash)):
        world.settle()
    world.cluster.disarm()
    world.restart()
