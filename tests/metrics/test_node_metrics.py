"""Karpenter's per-node gauges, kept by following changes: after any sequence of pod, node and
NodeClaim changes, each node's series equal what a rebuild from the whole cluster gives, and
a pass costs only what changed."""

from __future__ import annotations

import random

import pytest

from nodewright import metrics
from nodewright.api.core import (
    Node,
    NodeSpec,
    NodeStatus,
    Pod,
    PodStatus,
)
from nodewright.api.karpenter import NodeClaim
from nodewright.api.meta import ObjectMeta
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.commands.host import load_host
from nodewright.controllers.metrics.node import NodeMetrics
from tests import builders


def _node(name: str, *, pool: str = "default", zone: str = "test-zone-a") -> Node:
    labels = {
        "karpenter.sh/nodepool": pool,
        "topology.kubernetes.io/zone": zone,
        "node.kubernetes.io/instance-type": "c-4x-amd64-linux",
        "kubernetes.io/arch": "amd64",
        "karpenter.sh/capacity-type": "spot",
    }
    return Node(
        metadata=ObjectMeta(name=name, labels=labels),
        spec=NodeSpec(provider_id=f"kwok://{name}"),
        status=NodeStatus(
            capacity={"cpu": "4", "memory": "16Gi", "pods": "110"},
            allocatable={"cpu": "3800m", "memory": "15Gi", "pods": "110"},
        ),
    )


def _pod(
    name: str,
    node: str | None,
    *,
    cpu: str = "500m",
    limit: str | None = None,
    daemon: bool = False,
) -> Pod:
    kind = "DaemonSet" if daemon else "ReplicaSet"
    return builders.pod(
        name,
        node=node,
        owner=builders.controller_ref(kind, kind.lower(), kind),
        requests={"cpu": cpu, "memory": "256Mi"},
        limits={"cpu": limit} if limit else {},
        container_name="c",
    )


def _stored(cluster: MemoryCluster, name: str) -> Pod:
    found = cluster.get(Pod, name, "default")
    assert found is not None
    return found


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(SimulatedClock())


def _series(node: str) -> metrics.NodeSample:
    return metrics.node_series.samples()[node]


def test_a_nodes_gauges_and_labels(cluster: MemoryCluster) -> None:
    controller = NodeMetrics(cluster, load_host(), SimulatedClock())
    cluster.create(_node("n1"))
    cluster.create(_pod("web-1", "n1", cpu="1", limit="2"))
    cluster.create(_pod("web-2", "n1", cpu="500m"))
    cluster.create(_pod("agent", "n1", cpu="100m", limit="200m", daemon=True))
    cluster.create(_pod("pending", None, cpu="8"))
    controller.reconcile()
    sample = _series("n1")
    labels = dict(zip(metrics.node_series._label_names, sample.labels, strict=True))
    assert labels["node_name"] == "n1"
    assert labels["nodepool"] == "default"
    assert labels["zone"] == "test-zone-a"
    assert labels["instance_type"] == "c-4x-amd64-linux"
    assert labels["capacity_type"] == "spot"
    assert labels["arch"] == "amd64"
    assert labels["managed"] == "false"
    values = sample.values
    assert values["allocatable"] == {"cpu": 3.8, "memory": 15 * 2**30, "pods": 110}
    assert values["system_overhead"] == {"cpu": 0.2, "memory": 2**30, "pods": 0}
    assert values["total_pod_requests"] == {"cpu": 1.6, "memory": 3 * 256 * 2**20, "pods": 3}
    assert values["total_pod_limits"] == {"cpu": 2.2, "pods": 3}
    assert values["total_daemon_requests"] == {"cpu": 0.1, "memory": 256 * 2**20, "pods": 1}
    assert values["total_daemon_limits"] == {"cpu": 0.2, "pods": 1}

    # A NodeClaim for the node makes it managed; a finished pod gives its share back.
    claim = NodeClaim(metadata=ObjectMeta(name="n1", labels={"karpenter.sh/nodepool": "default"}))
    claim = cluster.create(claim)
    with_status = mutable(claim)
    with_status.status.provider_id = "kwok://n1"
    cluster.update_status(with_status)
    done = mutable(_stored(cluster, "web-1"))
    done.status = PodStatus(phase="Succeeded")
    cluster.update_status(done)
    controller.reconcile()
    sample = _series("n1")
    assert sample.labels[-1] == "true"
    assert sample.values["total_pod_requests"]["cpu"] == 0.6
    assert sample.values["total_pod_limits"] == {"cpu": 0.2, "pods": 2}

    cluster.delete(Node, "n1")
    controller.reconcile()
    assert "n1" not in metrics.node_series.samples()


def test_following_changes_gives_what_a_rebuild_gives(cluster: MemoryCluster) -> None:
    """Random binds, moves, finishes, deletions and node churn; after each pass the
    incrementally kept series equal a rebuild from the whole cluster."""
    rng = random.Random(7)
    controller = NodeMetrics(cluster, load_host(), SimulatedClock())
    nodes = [f"n{i}" for i in range(5)]
    for name in nodes[:3]:
        cluster.create(_node(name, zone=rng.choice(["a", "b"])))
    for step in range(300):
        pods = list(cluster.state.objects(Pod))
        action = rng.random()
        if action < 0.35 or not pods:
            cluster.create(
                _pod(
                    f"p{step}",
                    rng.choice([None, *nodes]),
                    cpu=f"{rng.randint(1, 9)}00m",
                    limit=rng.choice([None, "1"]),
                    daemon=rng.random() < 0.2,
                )
            )
        elif action < 0.55:
            cluster.delete(Pod, rng.choice(pods)[1], "default")
        elif action < 0.7:
            finished = mutable(_stored(cluster, rng.choice(pods)[1]))
            finished.status = PodStatus(phase=rng.choice(["Succeeded", "Failed", "Running"]))
            cluster.update_status(finished)
        elif action < 0.8:
            key = rng.choice(pods)
            pod = cluster.state.get(Pod, key)
            assert pod is not None
            cluster.delete(Pod, key[1], "default")
            moved = mutable(pod)
            moved.metadata.resource_version = None
            moved.spec.node_name = rng.choice(nodes)
            cluster.create(moved)
        elif action < 0.9:
            name = rng.choice(nodes)
            if cluster.state.get(Node, ("", name)) is None:
                cluster.create(_node(name))
            else:
                cluster.delete(Node, name)
        else:
            name = rng.choice(nodes)
            node = cluster.state.get(Node, ("", name))
            if node is not None:
                changed = mutable(node)
                changed.metadata.labels["topology.kubernetes.io/zone"] = rng.choice(["a", "c"])
                cluster.update(changed)
        controller.reconcile()
        if step % 25 == 0 or step == 299:
            followed = metrics.node_series.samples()
            controller.resync()
            controller.reconcile()
            assert metrics.node_series.samples() == followed, f"step {step}"


def test_a_pass_costs_what_changed(cluster: MemoryCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    controller = NodeMetrics(cluster, load_host(), SimulatedClock())
    for i in range(50):
        cluster.create(_node(f"n{i}"))
        for j in range(20):
            cluster.create(_pod(f"p{i}-{j}", f"n{i}"))
    controller.reconcile()
    published: list[str] = []
    real = metrics.node_series.set

    def publish(node: str, sample: metrics.NodeSample) -> None:
        published.append(node)
        real(node, sample)

    monkeypatch.setattr(metrics.node_series, "set", publish)
    cluster.create(_pod("new", "n7"))
    controller.reconcile()
    assert published == ["n7"]
    controller.reconcile()
    assert published == ["n7"]
