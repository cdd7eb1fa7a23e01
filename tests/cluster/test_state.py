"""The cluster state: indexes and change feeds follow every write to the store."""

from __future__ import annotations

import pytest

from nodewright.api.apps import PodDisruptionBudget, PodDisruptionBudgetSpec, ReplicaSet
from nodewright.api.core import Node, NodeSpec, Pod, PodStatus
from nodewright.api.karpenter import NodeClaim
from nodewright.api.meta import ObjectMeta
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import ClusterState
from tests.builders import controller_ref, pod


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(SimulatedClock())


def test_pods_are_indexed_by_node_until_they_finish(cluster: MemoryCluster) -> None:
    cluster.create(pod("a"))
    cluster.create(pod("b", node="n1"))
    state = cluster.state
    assert list(state.unbound_pods()) == [("default", "a")]
    assert list(state.pods_on("n1")) == [("default", "b")]
    cluster.bind("a", "default", "n1")
    assert not state.unbound_pods()
    assert sorted(state.pods_on("n1")) == [("default", "a"), ("default", "b")]
    done = mutable(state.pods_on("n1")[("default", "a")])
    done.status = PodStatus(phase="Succeeded")
    cluster.update_status(done)
    assert list(state.pods_on("n1")) == [("default", "b")]  # finished pods hold nothing
    cluster.delete(Pod, "b", "default")
    assert not state.pods_on("n1")
    assert "n1" not in state.nodes_with_pods()


def test_nodes_and_claims_join_by_provider_id(cluster: MemoryCluster) -> None:
    node = cluster.create(
        Node(metadata=ObjectMeta(name="n1"), spec=NodeSpec(provider_id="kwok://a"))
    )
    claim = NodeClaim(metadata=ObjectMeta(name="c1", labels={"karpenter.sh/nodepool": "default"}))
    claim = mutable(cluster.create(claim))
    state = cluster.state
    assert state.claim_for(node) is None
    claim.status.provider_id = "kwok://a"
    cluster.update_status(claim)
    stored_claim = state.claim_for(node)
    assert stored_claim is not None
    assert stored_claim.name == "c1"
    assert state.node_for(stored_claim) is state.get(Node, ("", "n1"))
    assert list(state.claims_of_pool("default")) == [("", "c1")]
    cluster.delete(Node, "n1")
    assert state.node_by_provider_id("kwok://a") is None


def test_objects_are_indexed_by_controller_and_pdbs_by_namespace(cluster: MemoryCluster) -> None:
    cluster.create(pod("a", owner=controller_ref("ReplicaSet", "rs", "rs-uid")))
    cluster.create(pod("b", owner=controller_ref("ReplicaSet", "rs", "other")))
    assert list(cluster.state.controlled_by(Pod, "rs-uid")) == [("default", "a")]
    assert not cluster.state.controlled_by(ReplicaSet, "rs-uid")
    cluster.create(
        PodDisruptionBudget(
            metadata=ObjectMeta(name="pdb", namespace="team"), spec=PodDisruptionBudgetSpec()
        )
    )
    assert list(cluster.state.in_namespace(PodDisruptionBudget, "team")) == [("team", "pdb")]
    assert not cluster.state.in_namespace(PodDisruptionBudget, "default")


def test_a_feed_gives_one_net_change_per_object(cluster: MemoryCluster) -> None:
    feed = cluster.state.feed(Pod)
    nodes = cluster.state.feed(Node)
    cluster.create(pod("a"))
    cluster.bind("a", "default", "n1")
    cluster.create(pod("gone"))
    cluster.delete(Pod, "gone", "default")
    changes = feed.drain()
    assert [(c.key, c.old, c.new is not None) for c in changes] == [
        (("default", "a"), None, True)
    ]  # created, then bound: one change; created and deleted: none
    new = changes[0].new
    assert isinstance(new, Pod)
    assert new.spec.node_name == "n1"
    assert not feed
    assert not nodes
    cluster.delete(Pod, "a", "default")
    (deleted,) = feed.drain()
    assert deleted.new is None
    assert isinstance(deleted.old, Pod)
    assert deleted.old.spec.node_name == "n1"  # what the reader last saw
    cluster.state.close(feed)
    cluster.create(pod("later"))
    assert not feed


def test_replace_turns_a_relist_into_changes() -> None:
    state = ClusterState()
    a, b, c = pod("a"), pod("b"), pod("c")
    state.apply(Pod, ("default", "a"), None, a)
    state.apply(Pod, ("default", "b"), None, b)
    feed = state.feed(Pod)
    b2 = pod("b", node="n1")
    state.replace(Pod, {("default", "b"): b2, ("default", "c"): c})
    changes = {change.key: (change.old, change.new) for change in feed.drain()}
    assert changes == {
        ("default", "a"): (a, None),
        ("default", "b"): (b, b2),
        ("default", "c"): (None, c),
    }
    assert [p.name for p in state.sorted(Pod)] == ["b", "c"]
    assert list(state.pods_on("n1")) == [("default", "b")]
    state.replace(Pod, {("default", "b"): b2, ("default", "c"): c})
    assert not feed  # the same objects again: nothing changed


def test_version_counts_changes_per_kind(cluster: MemoryCluster) -> None:
    before = cluster.state.version
    cluster.create(pod("a"))
    cluster.create(Node(metadata=ObjectMeta(name="n1")))
    assert cluster.state.version == before + 2
    assert cluster.state.kind_version(Pod) == 1
    assert cluster.state.kind_version(Node) == 1
