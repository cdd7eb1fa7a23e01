"""The embedded Kubernetes works from changes: what it must still notice.

Each controller looks only at what changed since its last pass. These tests change the
cluster between passes in the ways that are easy to miss (an object a controller just made
disappears before it looks again, a node frees room, someone else rewrites a pending pod's
status), and check the outcome is what a controller listing everything every pass reaches.
The last test drives random changes and checks, whenever the cluster has settled, that a new
EmbeddedKubernetes (whose first pass looks at every object) finds nothing left to do.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest

from nodewright.api.apps import DaemonSet, Deployment, Job, StatefulSet, StorageClass
from nodewright.api.core import Node, PersistentVolumeClaim, Pod
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.simulation.kubernetes import EmbeddedKubernetes
from nodewright.simulation.kubernetes.scheduler import KubeScheduler
from tests.builders import NAMESPACE, deployment, pod_template
from tests.simulation.kube_builders import (
    HOSTNAME,
    ZONE,
    node,
    pending_messages,
    pod,
    pods_of,
    settle,
    term,
    unavailable,
)

CLUSTER_SEED = 3


def daemon_set(name: str) -> DaemonSet:
    return DaemonSet.model_validate(
        {
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": pod_template(name, "100m"),
            },
        }
    )


def stateful_set(name: str, replicas: int) -> StatefulSet:
    return StatefulSet.model_validate(
        {
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": pod_template(name),
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "storageClassName": "gp3",
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        }
    )


def storage_class() -> StorageClass:
    return StorageClass.model_validate(
        {
            "metadata": {"name": "gp3"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )


def replace_twice(cluster: MemoryCluster, kube: EmbeddedKubernetes, app: str) -> None:
    """Delete one of the app's pods, let its controller replace it in one pass (its counts end
    where they were, so the owner itself does not change), then delete the replacement too.

    The controller must replace it again in the very next pass, as one that lists every pod
    each pass does (a pass later would give the pods other generated names)."""
    before = {p.name for p in pods_of(cluster, app)}
    victim = sorted(before)[0]
    cluster.delete(Pod, victim, NAMESPACE)
    kube.reconcile()
    (replacement,) = {p.name for p in pods_of(cluster, app)} - before
    cluster.delete(Pod, replacement, NAMESPACE)


def test_a_replica_deleted_right_after_it_was_made_is_replaced(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(deployment("web", 3))
    settle(kube)
    replace_twice(cluster, kube, "web")
    kube.reconcile()
    assert len(pods_of(cluster, "web")) == 3


def test_a_daemon_pod_deleted_right_after_it_was_made_comes_back(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1"))
    cluster.create(daemon_set("agent"))
    settle(kube)
    replace_twice(cluster, kube, "agent")
    kube.reconcile()
    assert [p.spec.node_name for p in pods_of(cluster, "agent")] == ["n1"]


def test_a_job_pod_deleted_right_after_it_was_made_is_replaced(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(
        Job.model_validate(
            {
                "metadata": {"name": "batch", "namespace": NAMESPACE},
                "spec": {"parallelism": 2, "template": pod_template("batch")},
            }
        )
    )
    settle(kube)
    replace_twice(cluster, kube, "batch")
    kube.reconcile()
    assert len(pods_of(cluster, "batch")) == 2


def test_a_stateful_pod_and_its_claim_deleted_right_after_they_were_made_come_back(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class())
    cluster.create(stateful_set("db", 1))
    settle(kube)
    cluster.delete(Pod, "db-0", NAMESPACE)
    cluster.delete(PersistentVolumeClaim, "data-db-0", NAMESPACE)
    kube.reconcile()
    assert [p.name for p in pods_of(cluster, "db")] == ["db-0"]
    cluster.delete(Pod, "db-0", NAMESPACE)
    cluster.delete(PersistentVolumeClaim, "data-db-0", NAMESPACE)
    kube.reconcile()
    assert [p.name for p in pods_of(cluster, "db")] == ["db-0"]
    assert cluster.get(PersistentVolumeClaim, "data-db-0", NAMESPACE) is not None


def test_room_freed_by_a_pod_deleted_after_it_was_bound_goes_to_the_next_pod(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1", cpu="1"))
    cluster.create(pod("first"))
    kube.reconcile()
    placed = cluster.get(Pod, "first", NAMESPACE)
    assert placed is not None
    assert placed.spec.node_name == "n1"
    cluster.delete(Pod, "first", NAMESPACE)
    cluster.create(pod("second"))
    settle(kube)
    second = cluster.get(Pod, "second", NAMESPACE)
    assert second is not None
    assert second.spec.node_name == "n1"


def test_a_waiting_pod_gets_the_room_of_a_pod_deleted_after_it_was_bound(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1", cpu="1"))
    cluster.create(pod("a-first"))
    cluster.create(pod("b-second"))
    kube.reconcile()
    assert pending_messages(cluster, "b-second") == {unavailable(1, "1 Insufficient cpu")}
    cluster.delete(Pod, "a-first", NAMESPACE)
    settle(kube)
    second = cluster.get(Pod, "b-second", NAMESPACE)
    assert second is not None
    assert second.spec.node_name == "n1"


def test_a_pending_pods_message_follows_the_nodes(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1", cpu="1"))
    cluster.create(pod("big", cpu="2"))
    settle(kube)
    assert pending_messages(cluster, "big") == {unavailable(1, "1 Insufficient cpu")}
    cluster.create(node("n2", cpu="1"))
    settle(kube)
    assert pending_messages(cluster, "big") == {unavailable(2, "2 Insufficient cpu")}
    found = cluster.get(Node, "n2")
    assert found is not None
    cordoned = mutable(found)
    cordoned.spec.unschedulable = True
    cluster.update(cordoned)
    settle(kube)
    assert pending_messages(cluster, "big") == {
        unavailable(2, "1 Insufficient cpu", "1 node(s) were unschedulable")
    }


def test_a_pending_pods_condition_rewritten_by_someone_else_is_restored(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1", cpu="1"))
    cluster.create(pod("big", cpu="2"))
    settle(kube)
    found = cluster.get(Pod, "big", NAMESPACE)
    assert found is not None
    big = mutable(found)
    big.status.conditions = []
    cluster.update_status(big)
    settle(kube)
    assert pending_messages(cluster, "big") == {unavailable(1, "1 Insufficient cpu")}


def test_a_pod_with_anti_affinity_bound_in_a_pass_repels_pods_later_in_that_pass(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1"))
    cluster.create(node("n2"))
    guard = {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "web"}}}
    cluster.create(
        pod(
            "a-guard",
            app="guard",
            affinity={
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [guard]}
            },
        )
    )
    cluster.create(pod("b-web", app="web"))
    kube.reconcile()
    guard_pod = cluster.get(Pod, "a-guard", NAMESPACE)
    web_pod = cluster.get(Pod, "b-web", NAMESPACE)
    assert guard_pod is not None
    assert web_pod is not None
    assert guard_pod.spec.node_name is not None
    assert web_pod.spec.node_name not in (None, guard_pod.spec.node_name)


def test_a_new_embedded_kubernetes_picks_up_what_is_already_there(
    cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    cluster.create(node("n1"))
    cluster.create(deployment("web", 2))
    settle(EmbeddedKubernetes(cluster, clock))
    assert all(p.spec.node_name == "n1" for p in pods_of(cluster, "web"))


# --- random changes -----------------------------------------------------------------------------


def _end_a_pod(cluster: MemoryCluster, rng: random.Random, pods: list[Pod]) -> None:
    """One of ``pods`` is deleted, or finishes (Succeeded) on its node."""
    victim = rng.choice(pods)
    if rng.random() < 0.5:
        cluster.delete(Pod, victim.name, victim.namespace)
    else:
        finished = mutable(victim)
        finished.status.phase = "Succeeded"
        cluster.update_status(finished)


def _random_change(cluster: MemoryCluster, clock: SimulatedClock, rng: random.Random) -> None:
    """One change a user, a node or a kubelet could make."""
    pods = list(cluster.state.sorted(Pod))
    nodes = list(cluster.state.sorted(Node))
    deployments = list(cluster.state.sorted(Deployment))
    roll = rng.random()
    if roll < 0.15:
        name = f"n{rng.randrange(10**6)}"
        cluster.create(node(name, zone=rng.choice("abc"), cpu=rng.choice(["2", "4"])))
    elif roll < 0.22 and nodes:
        cluster.delete(Node, rng.choice(nodes).name)
    elif roll < 0.3 and nodes:
        cordoned = mutable(rng.choice(nodes))
        cordoned.spec.unschedulable = not cordoned.spec.unschedulable
        cluster.update(cordoned)
    elif roll < 0.5:
        spec: dict[str, Any] = {}
        if rng.random() < 0.3:
            key = rng.choice([ZONE, HOSTNAME])
            spread = {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule"}
            spec["topologySpreadConstraints"] = [spread]
        name = f"d{rng.randrange(10**6)}"
        if "topologySpreadConstraints" in spec:
            spec["topologySpreadConstraints"][0]["labelSelector"] = {"matchLabels": {"app": name}}
        cluster.create(
            deployment(name, rng.randint(0, 12), cpu=rng.choice(["250m", "500m", "1"]), **spec)
        )
    elif roll < 0.65 and deployments:
        scaled = mutable(rng.choice(deployments))
        scaled.spec.replicas = rng.randint(0, 15)
        cluster.update(scaled)
    elif roll < 0.8 and pods:
        _end_a_pod(cluster, rng, pods)
    elif roll < 0.85:
        cluster.create(daemon_set(f"ds{rng.randrange(10**6)}"))
    else:
        clock.advance(timedelta(seconds=rng.randint(1, 30)))


@pytest.mark.parametrize("seed", range(12))
def test_when_settled_a_pass_over_everything_finds_nothing_left_to_do(seed: int) -> None:
    clock = SimulatedClock()
    cluster = MemoryCluster(clock, seed=seed)
    rng = random.Random(seed)
    kube = EmbeddedKubernetes(cluster, clock)
    for _ in range(25):
        for _ in range(rng.randint(1, 3)):
            _random_change(cluster, clock, rng)
        if rng.random() < 0.5:
            kube.reconcile()  # changes land between passes, not only on a settled cluster
            continue
        settle(kube)
        assert not EmbeddedKubernetes(cluster, clock).reconcile()


# --- the scheduler kept from pass to pass, against one made for each pass ---------------------


def _constrained_deployment(name: str, kind: str, replicas: int) -> Deployment:
    """A Deployment whose pods spread, attract or repel each other by ``kind``."""
    own = {"labelSelector": {"matchLabels": {"app": name}}}
    spec: dict[str, Any] = {}
    if kind in ("zone-spread", "host-spread"):
        key = ZONE if kind == "zone-spread" else HOSTNAME
        constraint = {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule"}
        spec["topologySpreadConstraints"] = [{**constraint, **own}]
    elif kind == "zone-affinity":
        rule = {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ZONE, **own}]}
        spec["affinity"] = {"podAffinity": rule}
    elif kind == "host-anti-affinity":
        rule = {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": HOSTNAME, **own}]
        }
        spec["affinity"] = {"podAntiAffinity": rule}
    return deployment(name, replicas, cpu="500m", **spec)


def _topology_change(cluster: MemoryCluster, clock: SimulatedClock, rng: random.Random) -> None:
    """One change that moves what the topology checks count: pods bound, deleted or finished,
    nodes that come, go or change zone, and a pod that keeps another app off its zone."""
    pods = [p for p in cluster.state.sorted(Pod) if p.spec.node_name]
    nodes = list(cluster.state.sorted(Node))
    deployments = list(cluster.state.sorted(Deployment))
    roll = rng.random()
    if roll < 0.15:
        cluster.create(node(f"n{rng.randrange(10**6)}", zone=rng.choice("abc"), cpu="2"))
    elif roll < 0.22 and nodes:
        cluster.delete(Node, rng.choice(nodes).name)
    elif roll < 0.3 and nodes:
        moved = mutable(rng.choice(nodes))
        moved.metadata.labels[ZONE] = rng.choice("abc")
        cluster.update(moved)
    elif roll < 0.5:
        kind = rng.choice(
            ["plain", "zone-spread", "host-spread", "zone-affinity", "host-anti-affinity"]
        )
        name = f"d{rng.randrange(10**6)}"
        cluster.create(_constrained_deployment(name, kind, rng.randint(1, 8)))
    elif roll < 0.6 and deployments:
        scaled = mutable(rng.choice(deployments))
        scaled.spec.replicas = rng.randint(0, 10)
        cluster.update(scaled)
    elif roll < 0.8 and pods:
        _end_a_pod(cluster, rng, pods)
    elif roll < 0.88 and deployments:
        target = rng.choice(deployments).name
        rule = {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, target)]}
        name = f"guard{rng.randrange(10**6)}"
        cluster.create(pod(name, cpu="100m", affinity={"podAntiAffinity": rule}))
    else:
        clock.advance(timedelta(seconds=rng.randint(1, 30)))


def _outcome(cluster: MemoryCluster) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    """Each pod's node, or kube-scheduler's message on it."""
    outcome: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    for p in cluster.state.sorted(Pod):
        condition = p.condition("PodScheduled")
        outcome[(p.namespace, p.name)] = (
            p.spec.node_name,
            condition.message if condition else None,
        )
    return outcome


@pytest.mark.parametrize("seed", range(10))
def test_a_scheduler_kept_from_pass_to_pass_places_pods_as_a_new_one_would(seed: int) -> None:
    # Two clusters take the same changes; one keeps its scheduler, the other gets a new one
    # (which reads every pod) before each pass. Spread, affinity and anti-affinity pods must
    # land on the same nodes, or get the same message, in both.
    clocks = [SimulatedClock(), SimulatedClock()]
    clusters = [MemoryCluster(clock, seed=seed) for clock in clocks]
    kubes = [EmbeddedKubernetes(c, clock) for c, clock in zip(clusters, clocks, strict=True)]
    rngs = [random.Random(seed), random.Random(seed)]
    passes = random.Random(-seed)
    fresh = kubes[1]
    for step in range(40):
        for cluster, clock, rng in zip(clusters, clocks, rngs, strict=True):
            for _ in range(rng.randint(1, 3)):
                _topology_change(cluster, clock, rng)
        for _ in range(passes.randint(1, 3)):
            fresh.scheduler = KubeScheduler(clusters[1], clocks[1], fresh.volumes)
            for kube in kubes:
                kube.reconcile()
        assert _outcome(clusters[0]) == _outcome(clusters[1]), f"step {step}"
