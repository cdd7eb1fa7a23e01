"""Writes as JSON patches: a concurrent writer's unrelated change survives ours, a change to
the same value is still a ConflictError, and what goes over the wire is a patch."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.api.core import Node, NodeSpec, Taint
from nodewright.api.karpenter import NodeClaim, NodeClaimStatus, NodePool
from nodewright.api.meta import Condition, ObjectMeta
from nodewright.cluster import ConflictError
from nodewright.cluster.kube import KubeCluster, json_patch
from nodewright.cluster.objects import mutable
from tests.kube.apiserver.patches import apply_json_patch, apply_merge_patch
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import FakeApiServer

TERMINATION = "karpenter.sh/termination"
OTHER_FINALIZER = "example.com/cleanup"


@pytest.fixture
def other(apiserver: FakeApiServer) -> Iterator[KubeCluster]:
    """A second process writing to the same server."""
    cluster = KubeCluster.connect(str(apiserver.kubeconfig), settings=dataclasses.replace(FAST))
    yield cluster
    cluster.close()


def _claim(kube: KubeCluster) -> NodeClaim:
    kube.create(
        NodeClaim(
            metadata=ObjectMeta(
                name="c1",
                labels={"karpenter.sh/nodepool": "default"},
                finalizers=[TERMINATION, OTHER_FINALIZER],
            ),
            status=NodeClaimStatus(
                provider_id="kwok://c1",
                conditions=[
                    Condition(
                        type="Launched",
                        status="Unknown",
                        reason="Launching",
                        last_transition_time=datetime(2025, 1, 1, tzinfo=UTC),
                    )
                ],
            ),
        )
    )
    mine = kube.get(NodeClaim, "c1")  # through the cache: the version we diff against
    assert mine is not None
    return mutable(mine)


def _label_by_someone_else(other: KubeCluster, name: str = "c1") -> None:
    theirs = other.read(NodeClaim, name)
    assert theirs is not None
    theirs.metadata.labels["team"] = "payments"
    other.update(theirs)


def _put_count(apiserver: FakeApiServer) -> int:
    return apiserver.count("PUT", "/nodeclaims/c1")


def test_finalizer_removal_keeps_a_concurrent_label(
    kube: KubeCluster, other: KubeCluster, apiserver: FakeApiServer
) -> None:
    mine = _claim(kube)
    _label_by_someone_else(other)
    mine.metadata.finalizers.remove(TERMINATION)
    puts = _put_count(apiserver)
    written = kube.update(mine)
    stored = apiserver.stored("nodeclaims", "c1")
    assert stored is not None
    assert stored["metadata"]["finalizers"] == [OTHER_FINALIZER]
    assert stored["metadata"]["labels"]["team"] == "payments"  # their change survived
    assert written.metadata.labels["team"] == "payments"
    assert _put_count(apiserver) == puts
    content_type, plural, sub, ops = apiserver.patches[-1]
    assert (content_type, plural, sub) == ("application/json-patch+json", "nodeclaims", None)
    # the finalizer list is tested before it is replaced
    assert {
        "op": "test",
        "path": "/metadata/finalizers",
        "value": [TERMINATION, OTHER_FINALIZER],
    } in ops
    assert not any(op["path"].startswith("/metadata/labels") for op in ops)


def test_status_write_keeps_a_concurrent_label(
    kube: KubeCluster, other: KubeCluster, apiserver: FakeApiServer
) -> None:
    mine = _claim(kube)
    _label_by_someone_else(other)
    mine.status.conditions[0].status = "True"
    mine.status.conditions[0].reason = "Launched"
    mine.status.node_name = "node-c1"
    puts = _put_count(apiserver)
    written = kube.update_status(mine)
    stored = apiserver.stored("nodeclaims", "c1")
    assert stored is not None
    assert stored["metadata"]["labels"]["team"] == "payments"
    assert stored["status"]["nodeName"] == "node-c1"
    assert stored["status"]["conditions"][0]["status"] == "True"
    assert written.status.node_name == "node-c1"
    assert apiserver.patches[-1][2] == "status"
    assert _put_count(apiserver) == puts


def test_a_concurrent_finalizer_change_is_a_conflict(
    kube: KubeCluster, other: KubeCluster, apiserver: FakeApiServer
) -> None:
    mine = _claim(kube)
    theirs = other.read(NodeClaim, "c1")
    assert theirs is not None
    theirs.metadata.finalizers.remove(OTHER_FINALIZER)
    other.update(theirs)
    mine.metadata.finalizers.remove(TERMINATION)
    with pytest.raises(ConflictError):
        kube.update(mine)
    stored = apiserver.stored("nodeclaims", "c1")
    assert stored is not None
    assert stored["metadata"]["finalizers"] == [TERMINATION]  # theirs, not a merge of both


def test_the_same_label_changed_twice_is_a_conflict(
    kube: KubeCluster, other: KubeCluster, apiserver: FakeApiServer
) -> None:
    mine = _claim(kube)
    theirs = other.read(NodeClaim, "c1")
    assert theirs is not None
    theirs.metadata.labels["karpenter.sh/nodepool"] = "theirs"
    other.update(theirs)
    mine.metadata.labels["karpenter.sh/nodepool"] = "mine"
    with pytest.raises(ConflictError):
        kube.update(mine)
    stored = apiserver.stored("nodeclaims", "c1")
    assert stored is not None
    assert stored["metadata"]["labels"]["karpenter.sh/nodepool"] == "theirs"


def test_a_concurrent_condition_change_is_a_conflict(
    kube: KubeCluster, other: KubeCluster, apiserver: FakeApiServer
) -> None:
    mine = _claim(kube)
    theirs = other.read(NodeClaim, "c1")
    assert theirs is not None
    theirs.status.conditions[0].reason = "TheirReason"
    other.update_status(theirs)
    mine.status.conditions[0].reason = "MyReason"
    with pytest.raises(ConflictError):
        kube.update_status(mine)
    stored = apiserver.stored("nodeclaims", "c1")
    assert stored is not None
    assert stored["status"]["conditions"][0]["reason"] == "TheirReason"


def test_taints_are_patched_and_tested(
    kube: KubeCluster, other: KubeCluster, apiserver: FakeApiServer
) -> None:
    kube.create(
        Node(
            metadata=ObjectMeta(name="n1", labels={"a": "1"}),
            spec=NodeSpec(taints=[Taint(key="x", effect="NoSchedule")]),
        )
    )
    mine = mutable(kube.get(Node, "n1"))  # type: ignore[type-var]
    assert mine is not None
    theirs = other.read(Node, "n1")
    assert theirs is not None
    theirs.metadata.annotations["seen-by"] = "them"
    other.update(theirs)
    mine.spec.taints.append(Taint(key="karpenter.sh/disrupted", effect="NoSchedule"))
    puts = apiserver.count("PUT", "/api/v1/nodes/n1")
    kube.update(mine)
    stored = apiserver.stored("nodes", "n1")
    assert stored is not None
    assert [t["key"] for t in stored["spec"]["taints"]] == ["x", "karpenter.sh/disrupted"]
    assert stored["metadata"]["annotations"] == {"seen-by": "them"}
    assert apiserver.count("PUT", "/api/v1/nodes/n1") == puts


def test_a_version_the_cache_forgot_falls_back_to_a_checked_replace(
    kube: KubeCluster, other: KubeCluster, apiserver: FakeApiServer
) -> None:
    mine = _claim(kube)
    for i in range(6):  # more versions than the cache remembers
        theirs = other.read(NodeClaim, "c1")
        assert theirs is not None
        theirs.metadata.annotations[f"n{i}"] = "x"
        other.update(theirs)
    deadline = time.monotonic() + 5
    while (kube.get(NodeClaim, "c1") or mine).metadata.annotations.get("n5") is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    mine.metadata.labels["mine"] = "1"
    puts = _put_count(apiserver)
    with pytest.raises(ConflictError):
        kube.update(mine)  # no base to diff: a replace with the stale resourceVersion
    assert _put_count(apiserver) == puts + 1


def test_json_patch_of_two_dicts_round_trips() -> None:
    old: dict[str, Any] = {
        "metadata": {"labels": {"a": "1", "gone": "x"}, "finalizers": ["f"], "annotations": {}},
        "spec": {"taints": [], "n": 3},
    }
    new: dict[str, Any] = {
        "metadata": {
            "labels": {"a": "2", "b/c~d": "3"},
            "finalizers": [],
            "annotations": {"z": "1"},
        },
        "spec": {"taints": [{"key": "k"}], "n": 4},
    }
    ops, untestable = json_patch(old, new)
    assert untestable  # annotations and taints were empty: no value to test
    assert apply_json_patch(old, ops) == new
    assert {"op": "add", "path": "/metadata/labels/b~1c~0d", "value": "3"} in ops
    assert {"op": "test", "path": "/metadata/labels/gone", "value": "x"} in ops
    assert json_patch(old, old) == ([], False)


def test_the_fake_server_serves_merge_patches(kube: KubeCluster, apiserver: FakeApiServer) -> None:
    assert apply_merge_patch(
        {"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None, "d": 3}, "l": [2]}
    ) == {
        "a": {"c": 2, "d": 3},
        "l": [2],
    }


def test_first_writes_to_empty_parts_are_single_patches(
    kube: KubeCluster, apiserver: FakeApiServer
) -> None:
    """A new custom object has no status on the server and a new Node no labels: the patch
    adds the whole part (guarded by the resourceVersion) instead of failing on a missing
    path and falling back to a replace."""
    kube.create(NodePool(metadata=ObjectMeta(name="default")))
    kube.create(Node(metadata=ObjectMeta(name="n1")))
    pool = mutable(kube.get(NodePool, "default"))  # type: ignore[type-var]
    node = mutable(kube.get(Node, "n1"))  # type: ignore[type-var]
    assert pool is not None
    assert node is not None
    pool.status.conditions = [
        Condition(
            type="Ready", status="True", last_transition_time=datetime(2025, 1, 1, tzinfo=UTC)
        )
    ]
    kube.update_status(pool)
    node.metadata.labels["a"] = "1"
    kube.update(node)
    assert kube.patch_fallbacks == 0
    stored_pool = apiserver.stored("nodepools", "default")
    stored_node = apiserver.stored("nodes", "n1")
    assert stored_pool is not None
    assert stored_node is not None
    assert stored_pool["status"]["conditions"][0]["type"] == "Ready"
    assert stored_pool["metadata"]["name"] == "default"
    assert stored_node["metadata"]["labels"] == {"a": "1"}
    assert stored_node["metadata"]["name"] == "n1"
    assert stored_node["metadata"]["uid"] == node.metadata.uid
