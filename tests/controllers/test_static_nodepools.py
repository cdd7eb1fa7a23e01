"""Static NodePools (``spec.replicas``, feature gate StaticCapacity), as Karpenter's static
provisioning, deprovisioning and static drift suites describe them: the pool keeps exactly
``replicas`` nodes whatever its pods, follows ``replicas`` up and down, stays within
``limits.nodes``, replaces drifted nodes, and is never consolidated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.cluster.objects import mutable
from nodewright.controllers.options import Options
from nodewright_kwok import plugin as kwok
from tests.builders import pool_manifest
from tests.disruption.harness import Harness

GATE_ON = Options(static_capacity=True)


def static_pool(
    name: str = "static", replicas: int = 3, *, limits: dict[str, str] | None = None, **more: Any
) -> dict[str, Any]:
    manifest = pool_manifest(name, limits=limits, **more)
    manifest["spec"]["replicas"] = replicas
    return manifest


def scale(harness: Harness, replicas: int, name: str = "static") -> None:
    stored = harness.cluster.get(NodePool, name)
    assert stored is not None
    pool = mutable(stored)
    pool.spec.replicas = replicas
    harness.cluster.update(pool)


def live_nodes(harness: Harness, pool: str = "static") -> set[str]:
    return {
        c.name
        for c in harness.claims()
        if not c.deleting and c.metadata.labels.get("karpenter.sh/nodepool") == pool
    }


def status_nodes(harness: Harness, name: str = "static") -> int | None:
    pool = harness.cluster.get(NodePool, name)
    assert pool is not None
    return pool.status.nodes


def test_a_static_pool_launches_exactly_its_replicas_and_counts_them(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=GATE_ON, pools=[static_pool(replicas=3)])
    harness.run(60)
    claims = [c for c in harness.claims() if not c.deleting]
    assert len(claims) == 3
    assert len(harness.node_names()) == 3
    assert status_nodes(harness) == 3
    # Nothing was sized for pods: the provider launched the cheapest type the pool allows.
    assert {harness.instance_type(c) for c in claims} == {"small-instance-type"}
    harness.run(600)
    assert len(live_nodes(harness)) == 3, "a static pool is never consolidated or emptied"


def test_replicas_going_up_and_down_adds_and_removes_nodes(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=GATE_ON, pools=[static_pool(replicas=2)])
    harness.run(30)
    first = live_nodes(harness)
    assert len(first) == 2
    scale(harness, 5)
    harness.run(30)
    assert len(live_nodes(harness)) == 5
    assert first <= live_nodes(harness), "scaling up keeps the nodes there are"
    scale(harness, 1)
    harness.run(60)
    assert len(live_nodes(harness)) == 1
    assert len(harness.node_names()) == 1
    assert status_nodes(harness) == 1
    scale(harness, 0)
    harness.run(60)
    assert harness.claims() == []


def test_scaling_down_removes_empty_nodes_then_the_cheapest_to_disrupt(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=GATE_ON, pools=[static_pool(replicas=4)])
    harness.run(30)
    # Named so that removing in name order would pick the wrong ones.
    protected, three_pods, one_pod, _empty = sorted(live_nodes(harness))
    harness.bind_pods(one_pod, 1, owner="one")
    harness.bind_pods(three_pods, 3, owner="three")
    harness.bind_pods(
        protected, 1, owner="guarded", annotations={"karpenter.sh/do-not-disrupt": "true"}
    )
    harness.run(5)
    scale(harness, 2)
    harness.run(60)
    assert live_nodes(harness) == {three_pods, protected}
    scale(harness, 1)
    harness.run(60)
    assert live_nodes(harness) == {protected}, "a node with a do-not-disrupt pod goes last"


def test_scaling_down_removes_node_claims_that_never_launched_before_empty_nodes(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path, options=GATE_ON, pools=[static_pool(replicas=2)])
    harness.run(30)
    launched = live_nodes(harness)
    assert launched == harness.node_names()
    # The cloud refuses every launch from now on: two more claims wait, never launched.
    kwok.faults.fail_next("launch", 10_000)
    try:
        scale(harness, 4)
        harness.run(30)
        waiting = live_nodes(harness) - launched
        assert len(waiting) == 2
        assert all(not c.status.provider_id for c in harness.claims() if c.name in waiting)
        scale(harness, 3)
        harness.run(30)
        assert launched < live_nodes(harness), "an empty launched node outranks a waiting claim"
        scale(harness, 2)
        harness.run(30)
        assert live_nodes(harness) == launched
    finally:
        kwok.faults.reset()


def test_limits_nodes_caps_a_static_pool(tmp_path: Path) -> None:
    harness = Harness(
        tmp_path, options=GATE_ON, pools=[static_pool(replicas=4, limits={"nodes": "2"})]
    )
    harness.run(120)
    assert len(live_nodes(harness)) == 2
    assert status_nodes(harness) == 2


def test_pending_pods_never_grow_a_static_pool(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=GATE_ON, pools=[static_pool(replicas=1)])
    harness.run(30)
    harness.bind_pods(None, 1, cpu="64")  # fits no node of any type
    harness.run(60)
    assert len(live_nodes(harness)) == 1
    assert any(
        "Failed to schedule pod" in message for _, message in harness.event_log("FailedScheduling")
    )


def test_a_dynamic_pool_still_places_pods_beside_a_static_one(tmp_path: Path) -> None:
    pools = [static_pool(replicas=1), pool_manifest("dynamic")]
    harness = Harness(tmp_path, options=GATE_ON, pools=pools)
    harness.run(30)
    harness.bind_pods(None, 1, cpu="3")  # more than the static node's small type holds
    harness.run(60)
    assert len(live_nodes(harness)) == 1
    assert len(live_nodes(harness, "dynamic")) == 1


def test_without_the_gate_a_static_pool_launches_nothing_and_takes_no_pods(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path, pools=[static_pool(replicas=3)])
    harness.bind_pods(None, 1)
    harness.run(60)
    assert harness.claims() == []
    assert status_nodes(harness) == 0
    assert harness.event_log("FailedScheduling")


def test_drifted_static_nodes_are_replaced_and_the_count_holds(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=GATE_ON, pools=[static_pool(replicas=3)])
    harness.run(30)
    before = live_nodes(harness)
    assert len(before) == 3
    harness.apply(NodePool.model_validate(static_pool(replicas=3, labels={"team": "blue"})))
    harness.run(120)
    after = [c for c in harness.claims() if not c.deleting]
    assert len(after) == 3
    assert not before & {c.name for c in after}, "every drifted node was replaced"
    assert {c.metadata.labels.get("team") for c in after} == {"blue"}
    terminating = harness.event_log("DisruptionTerminating")
    assert {("node/" + name, "Disrupting Node: Drift/Replace") for name in before} <= set(
        terminating
    )


def test_static_drift_needs_room_under_limits_nodes(tmp_path: Path) -> None:
    pool = static_pool(replicas=2, limits={"nodes": "2"})
    harness = Harness(tmp_path, options=GATE_ON, pools=[pool])
    harness.run(30)
    before = live_nodes(harness)
    harness.apply(
        NodePool.model_validate(static_pool(replicas=2, limits={"nodes": "2"}, labels={"v": "2"}))
    )
    harness.run(120)
    assert live_nodes(harness) == before, "no replacement fits, so nothing is disrupted"
    drifted = [
        c
        for c in harness.claims()
        if any(x.type == "Drifted" and x.status == "True" for x in c.status.conditions)
    ]
    assert len(drifted) == 2


def test_static_drift_follows_the_drifted_budget(tmp_path: Path) -> None:
    pool = static_pool(replicas=2, budgets=[{"nodes": "0", "reasons": ["Drifted"]}])
    harness = Harness(tmp_path, options=GATE_ON, pools=[pool])
    harness.run(30)
    before = live_nodes(harness)
    changed = static_pool(
        replicas=2, budgets=[{"nodes": "0", "reasons": ["Drifted"]}], labels={"v": "2"}
    )
    harness.apply(NodePool.model_validate(changed))
    harness.run(120)
    assert live_nodes(harness) == before


def test_an_expired_static_node_is_replaced(tmp_path: Path) -> None:
    harness = Harness(
        tmp_path, options=GATE_ON, pools=[static_pool(replicas=2, expire_after="10m")]
    )
    harness.run(30)
    before = live_nodes(harness)
    harness.run(15 * 60)
    after = live_nodes(harness)
    assert len(after) == 2
    assert not before & after


def test_node_claims_of_a_static_pool_carry_its_template(tmp_path: Path) -> None:
    pool = static_pool(
        replicas=1,
        labels={"team": "red"},
        requirements=[
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": ["default-instance-type"],
            }
        ],
    )
    harness = Harness(tmp_path, options=GATE_ON, pools=[pool])
    harness.run(30)
    (claim,) = harness.claims()
    assert isinstance(claim, NodeClaim)
    assert claim.metadata.labels["team"] == "red"
    assert harness.instance_type(claim) == "default-instance-type"
    assert claim.spec.resources.requests == {}
