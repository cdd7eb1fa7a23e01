"""A PodDisruptionBudget's count kept from changes is the count of its pods made afresh, and
the eviction check that reads it follows a changed budget, scale or pod."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.api.apps import (
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    ReplicaSet,
    StatefulSet,
)
from nodewright.api.core import LabelSelector, LabelSelectorRequirement, Pod, PodStatus
from nodewright.api.meta import ObjectMeta
from nodewright.clock import SimulatedClock
from nodewright.cluster import EvictionBlockedError
from nodewright.cluster.budgetcounts import BudgetCounts, controller_scale
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.cluster.selectors import label_selector_matches
from nodewright.cluster.state import ClusterState, is_terminal
from tests.builders import controller_ref, pod

NAMESPACES = ("default", "other")
APPS = ("web", "db", "cache")
PHASES = ("Pending", "Running", "Running", "Succeeded", "Failed")


def _selector(rng: random.Random) -> LabelSelector | None:
    choice = rng.randrange(4)
    if choice == 0:
        return None
    if choice == 1:
        return LabelSelector()  # everything
    if choice == 2:
        return LabelSelector(match_labels={"app": rng.choice(APPS)})
    return LabelSelector(
        match_expressions=[
            LabelSelectorRequirement(key="app", operator="In", values=list(APPS[:2]))
        ]
    )


def _random_pod(rng: random.Random, name: str, namespace: str) -> Pod:
    owner = None
    if rng.random() < 0.7:
        kind = rng.choice(("ReplicaSet", "StatefulSet", "Job"))
        owner = controller_ref(kind, f"{kind.lower()}-{rng.randrange(3)}", uid=f"u{kind}")
    meta: dict[str, Any] = {}
    if rng.random() < 0.2:
        meta["deletionTimestamp"] = datetime(2026, 1, 1, tzinfo=UTC)
    made = pod(name, namespace=namespace, labels={"app": rng.choice(APPS)}, owner=owner, meta=meta)
    made.status = PodStatus(phase=rng.choice(PHASES))
    return made


def _fresh(state: ClusterState, budget: PodDisruptionBudget) -> tuple[int, int]:
    """The count made afresh, as kube-controller-manager makes it."""
    pods = [
        p
        for p in state.in_namespace(Pod, budget.namespace).values()
        if label_selector_matches(budget.spec.selector, p.metadata.labels) and not is_terminal(p)
    ]
    healthy = sum(1 for p in pods if p.status.phase == "Running" and not p.deleting)
    expected = 0
    scaled: set[tuple[str, str]] = set()
    for p in pods:
        owner = next((ref for ref in p.metadata.owner_references if ref.controller), None)
        scale = (
            None if owner is None else controller_scale(state, owner.kind, p.namespace, owner.name)
        )
        if owner is None or scale is None:
            expected += 0 if p.deleting else 1
        elif (owner.kind, owner.name) not in scaled:
            scaled.add((owner.kind, owner.name))
            expected += scale
    return healthy, expected


def _change_a_pod(rng: random.Random, state: ClusterState, namespace: str) -> None:
    """A pod comes, changes or goes."""
    name = f"p{rng.randrange(25)}"
    old = state.get(Pod, (namespace, name))
    gone = old is not None and rng.random() < 0.3
    state.apply(Pod, (namespace, name), old, None if gone else _random_pod(rng, name, namespace))


def _change_a_controller(rng: random.Random, state: ClusterState, namespace: str) -> None:
    """A ReplicaSet's or StatefulSet's scale changes, or it goes."""
    if rng.random() < 0.5:
        name = f"replicaset-{rng.randrange(3)}"
        replica_set = None
        if rng.random() < 0.8:
            replica_set = ReplicaSet(metadata=ObjectMeta(name=name, namespace=namespace))
            replica_set.spec.replicas = rng.randrange(6)
        old = state.get(ReplicaSet, (namespace, name))
        state.apply(ReplicaSet, (namespace, name), old, replica_set)
        return
    name = f"statefulset-{rng.randrange(3)}"
    stateful_set = None
    if rng.random() < 0.8:
        stateful_set = StatefulSet(metadata=ObjectMeta(name=name, namespace=namespace))
        stateful_set.spec.replicas = rng.randrange(6)
    state.apply(
        StatefulSet, (namespace, name), state.get(StatefulSet, (namespace, name)), stateful_set
    )


def _change_a_budget(rng: random.Random, state: ClusterState, namespace: str) -> None:
    """A budget comes, changes its selector or goes."""
    name = f"b{rng.randrange(3)}"
    old = state.get(PodDisruptionBudget, (namespace, name))
    budget = None
    if old is None or rng.random() < 0.8:
        budget = PodDisruptionBudget(
            metadata=ObjectMeta(name=name, namespace=namespace),
            spec=PodDisruptionBudgetSpec(min_available=1, selector=_selector(rng)),
        )
    state.apply(PodDisruptionBudget, (namespace, name), old, budget)


@pytest.mark.parametrize("seed", range(40))
def test_a_kept_count_equals_a_fresh_count_after_any_changes(seed: int) -> None:
    rng = random.Random(seed)
    state = ClusterState()
    counts = BudgetCounts(state)
    for step in range(120):
        namespace = rng.choice(NAMESPACES)
        action = rng.randrange(10)
        if action < 5:
            _change_a_pod(rng, state, namespace)
        elif action < 7:
            _change_a_controller(rng, state, namespace)
        else:
            _change_a_budget(rng, state, namespace)
        # Ask about some budgets only, so others are counted late, from many changes.
        for budget in state.objects(PodDisruptionBudget).values():
            if step % 3 == 0 or rng.random() < 0.5:
                kept = counts.count(budget)
                assert (kept.healthy, kept.expected) == _fresh(state, budget), (seed, step)
    counts.reset()
    for budget in state.objects(PodDisruptionBudget).values():
        kept = counts.count(budget)
        assert (kept.healthy, kept.expected) == _fresh(state, budget)


def _running(cluster: MemoryCluster, name: str, replica_set: str = "web-1") -> None:
    owner = controller_ref("ReplicaSet", replica_set, uid=replica_set)
    made = mutable(cluster.create(pod(name, labels={"app": "web"}, owner=owner)))
    made.status = PodStatus(phase="Running")
    cluster.update_status(made)


def _budget(cluster: MemoryCluster, selector: LabelSelector) -> PodDisruptionBudget:
    return cluster.create(
        PodDisruptionBudget(
            metadata=ObjectMeta(name="web", namespace="default"),
            spec=PodDisruptionBudgetSpec(max_unavailable=1, selector=selector),
        )
    )


def test_an_eviction_follows_the_scale_of_the_pods_replica_set() -> None:
    cluster = MemoryCluster(SimulatedClock())
    replica_set = cluster.create(ReplicaSet(metadata=ObjectMeta(name="web-1", namespace="default")))
    for name in ("w1", "w2", "w3"):
        _running(cluster, name)
    # Expected: the ReplicaSet's one replica; three healthy pods leave room for three.
    _budget(cluster, LabelSelector(match_labels={"app": "web"}))
    cluster.evict("w1", "default")
    scaled = mutable(replica_set)
    scaled.spec.replicas = 4  # four expected, one may be unavailable: two healthy are too few
    cluster.update(scaled)
    with pytest.raises(EvictionBlockedError):
        cluster.evict("w2", "default")
    current = cluster.state.get(ReplicaSet, ("default", "web-1"))
    assert current is not None
    scaled = mutable(current)
    scaled.spec.replicas = 2  # two expected, one may be unavailable: w2 may go
    cluster.update(scaled)
    cluster.evict("w2", "default")
    assert cluster.state.get(Pod, ("default", "w2")) is None


def test_an_eviction_follows_a_changed_selector() -> None:
    cluster = MemoryCluster(SimulatedClock())
    _running(cluster, "w1")
    budget = _budget(cluster, LabelSelector(match_labels={"app": "other"}))
    cluster.evict("w1", "default")  # the budget selects nothing of it
    _running(cluster, "w2")
    narrowed = mutable(budget)
    # Now it selects w2 (its ReplicaSet is gone: the pod itself is expected) and lets none go.
    narrowed.spec.selector = LabelSelector(match_labels={"app": "web"})
    narrowed.spec.max_unavailable = 0
    cluster.update(narrowed)
    with pytest.raises(EvictionBlockedError):
        cluster.evict("w2", "default")
    assert cluster.state.get(Pod, ("default", "w2")) is not None


def test_counts_hold_no_changes_once_caught_up() -> None:
    state = ClusterState()
    counts = BudgetCounts(state)
    rng = random.Random(5)
    for _ in range(10):
        _change_a_pod(rng, state, "default")
    assert state.held_changes() == 0  # no budget asked about: nothing followed
    budget = PodDisruptionBudget(
        metadata=ObjectMeta(name="web", namespace="default"),
        spec=PodDisruptionBudgetSpec(min_available=1, selector=LabelSelector()),
    )
    state.apply(PodDisruptionBudget, ("default", "web"), None, budget)
    counts.count(budget)
    for _ in range(10):
        _change_a_pod(rng, state, "default")
    assert state.held_changes() > 0
    counts.catch_up()
    assert state.held_changes() == 0
    kept = counts.count(budget)
    assert (kept.healthy, kept.expected) == _fresh(state, budget)
    state.apply(PodDisruptionBudget, ("default", "web"), budget, None)
    counts.catch_up()
    for _ in range(10):
        _change_a_pod(rng, state, "default")
    assert state.held_changes() == 0  # its last budget gone, it follows nothing
