"""Pods that wait pass after pass (behind a NodePool's limits, or for capacity that ran out):
a provisioning pass whose inputs have not changed answers from the last solve, and any change
that could change the answer must be acted on at the next pass: more room under a limit, a
new NodePool, a new or replaced pod, capacity coming back once its unavailability expires."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from nodewright.api.core import Pod
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.controllers.kwok_world import FOUR_CPU_ON_DEMAND, KWOKWorld

LIMIT_MESSAGE = 'all available instance types exceed limits for nodepool: "default"'


def _limited_pool(cpu: int, name: str = "default", taints: str = "[]") -> str:
    return node_pool(
        name,
        weight=None,
        requirements=FOUR_CPU_ON_DEMAND,
        taints=taints,
        limits=f"{{cpu: {cpu}}}" if cpu else "{}",
    )


def _waiting(world: KWOKWorld, app: str = "web") -> list[Pod]:
    return [p for p in world.pods(app) if not p.spec.node_name]


def _recalled(world: KWOKWorld) -> int:
    """Solves the provisioner answered from memory so far."""
    return int(world.operator.provisioner._solved.recalled)


def _stuck(world: KWOKWorld, *manifests: str) -> list[Pod]:
    """Apply ``manifests`` (pods behind the default pool's 8-CPU limit) and wait until the
    provisioner answers the waiting pods from memory; the pods still waiting."""
    world.apply(KWOK_NODE_CLASS, _limited_pool(8), deployment("web", 12), *manifests)
    world.settle()
    world.advance(timedelta(minutes=1))
    before = _recalled(world)
    world.advance(timedelta(seconds=30))
    assert _recalled(world) > before, "the waiting pods' passes answer from memory"
    waiting = _waiting(world)
    assert waiting
    return waiting


def _reasons(world: KWOKWorld, pod_name: str) -> list[str]:
    return [
        e.message
        for e in world.events("FailedScheduling", "Pod")
        if e.involved_object.name == pod_name
    ]


def test_pods_behind_a_limit_are_told_why_and_launch_nothing_more() -> None:
    world = KWOKWorld()
    waiting = _stuck(world)
    claims = {c.name for c in world.claims()}
    world.advance(timedelta(minutes=10))
    assert {c.name for c in world.claims()} == claims
    for each in waiting:
        assert any(LIMIT_MESSAGE in m for m in _reasons(world, each.name))


def test_raising_the_limit_launches_for_the_waiting_pods() -> None:
    world = KWOKWorld()
    waiting = _stuck(world)
    world.apply(_limited_pool(64))
    world.advance(timedelta(seconds=30))
    assert len(_waiting(world)) < len(waiting)


def test_a_new_nodepool_takes_the_waiting_pods() -> None:
    world = KWOKWorld()
    _stuck(world)
    world.apply(_limited_pool(0, name="spare"))
    world.advance(timedelta(seconds=30))
    assert not _waiting(world)


GPU_TAINT = "[{key: gpu, value: 'true', effect: NoSchedule}]"


def _trainer(*, tolerates: bool) -> Pod:
    spec: dict[str, object] = {
        "containers": [{"name": "app", "image": "pause", "resources": {"requests": {"cpu": "1"}}}]
    }
    if tolerates:
        spec["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    return Pod.model_validate(
        {"metadata": {"name": "trainer", "namespace": "default"}, "spec": spec}
    )


def _new_claim_pools(world: KWOKWorld, before: set[str]) -> list[str | None]:
    return [
        c.metadata.labels.get("karpenter.sh/nodepool")
        for c in world.claims()
        if c.name not in before
    ]


def test_a_new_pod_gets_an_answer_of_its_own() -> None:
    world = KWOKWorld()
    # A pool the web pods cannot use (they do not tolerate its taint).
    _stuck(world, _limited_pool(0, name="gpu", taints=GPU_TAINT))
    claims = {c.name for c in world.claims()}
    world.create(_trainer(tolerates=True))
    world.advance(timedelta(seconds=30))
    assert _new_claim_pools(world, claims) == ["gpu"]


def test_a_pod_made_again_under_the_same_name_is_taken_as_it_is_now() -> None:
    world = KWOKWorld()
    _stuck(world, _limited_pool(0, name="gpu", taints=GPU_TAINT))
    world.create(_trainer(tolerates=False))
    world.advance(timedelta(minutes=1))
    claims = {c.name for c in world.claims()}
    world.cluster.delete(Pod, "trainer", "default")
    world.create(_trainer(tolerates=True))
    world.advance(timedelta(seconds=30))
    assert _new_claim_pools(world, claims) == ["gpu"]


def test_a_replaced_pod_is_told_why_it_waits() -> None:
    world = KWOKWorld()
    waiting = _stuck(world)
    gone = waiting[0]
    world.cluster.delete(Pod, gone.name, "default")
    world.advance(timedelta(seconds=30))
    now_waiting = _waiting(world)
    assert gone.name not in {p.name for p in now_waiting}
    replacements = [p for p in now_waiting if p.name not in {w.name for w in waiting}]
    assert len(replacements) == 1, "the ReplicaSet replaced the deleted pod"
    assert any(LIMIT_MESSAGE in m for m in _reasons(world, replacements[0].name))


def test_capacity_coming_back_by_time_alone_is_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every launch runs out of capacity: the offerings are unavailable for a while, and the
    # pods wait with nothing in the cluster changing; once the unavailability expires a pass
    # must try them again (a new NodeClaim), though nothing else changed.
    world = KWOKWorld({"fault-insufficient-capacity": "*/*/*"})
    world.apply(KWOK_NODE_CLASS, _limited_pool(0), deployment("web", 2))
    caplog.set_level(logging.WARNING, logger="nodewright.nodeclaim.lifecycle")
    world.advance(timedelta(minutes=10))
    assert _waiting(world)
    launches = [r for r in caplog.records if "insufficient capacity" in r.getMessage()]
    # The first at once, then one each time the unavailable offerings expire (3 minutes).
    assert len(launches) == 4
