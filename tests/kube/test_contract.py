"""One contract, two adapters: what controllers can observe through the Cluster port is the
same on the in-memory store and on a (fake) API server through KubeCluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright.api.apps import PodDisruptionBudget, PodDisruptionBudgetSpec
from nodewright.api.core import LabelSelector, Node, NodeSpec, Pod, PodStatus
from nodewright.api.karpenter import NodeClaim, NodeClaimStatus, NodePool
from nodewright.api.meta import Condition, ObjectMeta
from nodewright.clock import SystemClock
from nodewright.cluster import (
    AlreadyExistsError,
    Cluster,
    ConflictError,
    EvictionBlockedError,
    InvalidError,
    NotFoundError,
)
from nodewright.cluster.kube import KubeCluster
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from tests import builders
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import FakeApiServer


@pytest.fixture(params=["memory", "kube"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    if request.param == "memory":
        yield MemoryCluster(SystemClock())
        return
    server = FakeApiServer(tmp_path).start()
    adapter = KubeCluster.connect(str(server.kubeconfig), settings=FAST)
    try:
        yield adapter
    finally:
        adapter.close()
        server.stop()


def test_create_fills_server_fields_and_generates_names(cluster: Cluster) -> None:
    node = cluster.create(Node(metadata=ObjectMeta(name="n1")))
    assert node.metadata.uid
    assert node.metadata.resource_version
    assert node.metadata.creation_timestamp is not None
    claim = cluster.create(NodeClaim(metadata=ObjectMeta(generate_name="default-")))
    assert claim.name.startswith("default-")
    assert len(claim.name) > len("default-")
    pod = cluster.create(builders.pod("p"))
    assert pod.status.phase == "Pending"
    assert pod.namespace == "default"
    with pytest.raises(AlreadyExistsError):
        cluster.create(Node(metadata=ObjectMeta(name="n1")))


def test_reads_see_writes_sorted_and_filtered(cluster: Cluster) -> None:
    cluster.create(builders.pod("b", labels={"app": "x"}))
    cluster.create(builders.pod("a", labels={"app": "x"}))
    cluster.create(builders.pod("c", labels={"app": "y"}, namespace="other"))
    assert [p.key for p in cluster.list(Pod)] == ["default/a", "default/b", "other/c"]
    assert [p.name for p in cluster.list(Pod, labels={"app": "x"})] == ["a", "b"]
    assert [p.name for p in cluster.list(Pod, namespace="other")] == ["c"]
    assert cluster.get(Pod, "a", "default") is not None
    assert cluster.get(Pod, "missing", "default") is None
    got = cluster.get(Pod, "a", "default")
    assert got is not None
    mutable(got).metadata.labels["changed"] = "locally"  # a private copy: nothing shared
    again = cluster.get(Pod, "a", "default")
    assert again is not None
    assert "changed" not in again.metadata.labels


def test_stale_update_is_a_conflict(cluster: Cluster) -> None:
    created = cluster.create(Node(metadata=ObjectMeta(name="n1")))
    first = created.model_copy(deep=True)
    first.metadata.labels["a"] = "1"
    updated = cluster.update(first)
    assert updated.metadata.resource_version != created.metadata.resource_version
    stale = created.model_copy(deep=True)
    stale.metadata.labels["b"] = "2"
    with pytest.raises(ConflictError):
        cluster.update(stale)
    current = cluster.get(Node, "n1")
    assert current is not None
    assert current.metadata.labels == {"a": "1"}


def test_update_ignores_status_and_bumps_generation_on_spec(cluster: Cluster) -> None:
    pool = mutable(cluster.create(NodePool(metadata=ObjectMeta(name="default"))))
    assert pool.metadata.generation == 1
    pool.spec.weight = 10
    pool.status.nodes = 5
    updated = mutable(cluster.update(pool))
    assert updated.metadata.generation == 2
    assert updated.status.nodes == 0
    updated.status.nodes = 3
    with_status = cluster.update_status(updated)
    assert with_status.status.nodes == 3
    assert with_status.metadata.generation == 2
    read = cluster.get(NodePool, "default")
    assert read is not None
    assert read.status.nodes == 3
    assert read.spec.weight == 10


def test_create_keeps_a_given_status(cluster: Cluster) -> None:
    claim = NodeClaim(
        metadata=ObjectMeta(name="c1"),
        status=NodeClaimStatus(
            provider_id="kwok://c1",
            conditions=[Condition(type="Launched", status="True", reason="Launched")],
        ),
    )
    created = cluster.create(claim)
    assert created.status.provider_id == "kwok://c1"
    read = cluster.get(NodeClaim, "c1")
    assert read is not None
    assert read.status.provider_id == "kwok://c1"


def test_no_op_update_keeps_the_resource_version(cluster: Cluster) -> None:
    node = cluster.create(Node(metadata=ObjectMeta(name="n1")))
    again = cluster.update(mutable(node))
    assert again.metadata.resource_version == node.metadata.resource_version


def test_finalizers_hold_deletion(cluster: Cluster) -> None:
    cluster.create(Node(metadata=ObjectMeta(name="n1", finalizers=["karpenter.sh/termination"])))
    cluster.delete(Node, "n1")
    stored = cluster.get(Node, "n1")
    assert stored is not None
    assert stored.deleting
    marked = mutable(stored)
    marked.metadata.finalizers.append("extra/finalizer")
    with pytest.raises(InvalidError):
        cluster.update(marked)
    stored = cluster.get(Node, "n1")
    assert stored is not None
    marked = mutable(stored)
    marked.metadata.finalizers = []
    cluster.update(marked)
    assert cluster.get(Node, "n1") is None
    assert [n.name for n in cluster.list(Node)] == []
    cluster.delete(Node, "n1")  # missing objects are ignored


def test_status_writes_need_a_current_version(cluster: Cluster) -> None:
    node = cluster.create(Node(metadata=ObjectMeta(name="n1"), spec=NodeSpec(unschedulable=True)))
    fresh = node.model_copy(deep=True)
    fresh.status.phase = "Running"
    cluster.update_status(fresh)
    node.status.phase = "Stale"
    with pytest.raises(ConflictError):
        cluster.update_status(node)
    with pytest.raises(NotFoundError):
        cluster.update(Node(metadata=ObjectMeta(name="missing")))


def test_bind_assigns_once(cluster: Cluster) -> None:
    cluster.create(builders.pod("p"))
    cluster.bind("p", "default", "n1")
    pod = cluster.get(Pod, "p", "default")
    assert pod is not None
    assert pod.spec.node_name == "n1"
    scheduled = pod.condition("PodScheduled")
    assert scheduled is not None
    assert scheduled.status == "True"
    with pytest.raises(ConflictError):
        cluster.bind("p", "default", "n2")
    with pytest.raises(NotFoundError):
        cluster.bind("missing", "default", "n1")


def _running(cluster: Cluster, name: str) -> None:
    pod = mutable(cluster.create(builders.pod(name, labels={"app": "web"})))
    pod.status = PodStatus(phase="Running")
    cluster.update_status(pod)


def test_eviction_respects_a_budget(cluster: Cluster) -> None:
    _running(cluster, "w1")
    _running(cluster, "w2")
    cluster.create(
        PodDisruptionBudget(
            metadata=ObjectMeta(name="web", namespace="default"),
            spec=PodDisruptionBudgetSpec(
                min_available=1, selector=LabelSelector(match_labels={"app": "web"})
            ),
        )
    )
    cluster.evict("w1", "default")
    assert cluster.get(Pod, "w1", "default") is None
    with pytest.raises(EvictionBlockedError):
        cluster.evict("w2", "default")
    assert cluster.get(Pod, "w2", "default") is not None
    with pytest.raises(NotFoundError):
        cluster.evict("missing", "default")


def test_a_refused_eviction_is_allowed_once_the_budget_or_its_pods_change(
    cluster: Cluster,
) -> None:
    _running(cluster, "w1")
    budget = cluster.create(
        PodDisruptionBudget(
            metadata=ObjectMeta(name="web", namespace="default"),
            spec=PodDisruptionBudgetSpec(
                min_available=1, selector=LabelSelector(match_labels={"app": "web"})
            ),
        )
    )
    with pytest.raises(EvictionBlockedError):
        cluster.evict("w1", "default")
    _running(cluster, "w2")  # a second healthy pod: one may go
    cluster.evict("w1", "default")
    with pytest.raises(EvictionBlockedError):
        cluster.evict("w2", "default")
    relaxed = mutable(budget)
    relaxed.spec.min_available = 0
    cluster.update(relaxed)
    cluster.evict("w2", "default")
    assert cluster.get(Pod, "w2", "default") is None


def test_resource_version_moves_on_writes(cluster: Cluster) -> None:
    before = cluster.resource_version()
    cluster.create(Node(metadata=ObjectMeta(name="n1")))
    assert cluster.resource_version() != before
