"""Cached pods hold their equal parts once (``nodewright.cluster.kube.shared``): they read as
parsed, a changed copy of one changes no other, and parts go once nothing holds them."""

from __future__ import annotations

import copy
import gc
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from nodewright.api.core import Pod
from nodewright.api.meta import compact
from nodewright.cluster.kube import MERGE_PATCH, KubeCluster
from nodewright.cluster.kube.shared import SharedParts
from nodewright.cluster.kube.slim import slimmed
from tests.kube.fake_apiserver import FakeApiServer


def _pod(name: str, node: str = "n1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-11-27T00:43:25Z",
            "labels": {"app": "inflate", "pod-template-hash": "7599d8454d"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "inflate-7599d8454d",
                 "uid": "rs-1", "controller": True}
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "app", "image": "pause", "resources": {"requests": {"cpu": "1"}}}
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300}
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True",
                 "lastTransitionTime": "2026-11-27T00:43:34Z"}
            ],
        },
    }  # fmt: skip


def _create(kube: KubeCluster, body: dict[str, Any]) -> None:
    """Create ``body``, then its status (which a create leaves out), as a client would."""
    path = "/api/v1/namespaces/default/pods"
    answer = kube._api.call("POST", path, body=body)
    assert answer.status == 201, answer.body
    status = {"status": body["status"]}
    answer = kube._api.call(
        "PATCH", f"{path}/{body['metadata']['name']}/status", body=status, content_type=MERGE_PATCH
    )
    assert answer.status == 200, answer.body


def _parsed(data: dict[str, Any]) -> Pod:
    pod = Pod.model_validate(slimmed(Pod, copy.deepcopy(data)))
    compact(pod)
    return pod


def test_cached_pods_read_as_parsed_and_share_their_equal_parts(
    apiserver: FakeApiServer, kube: KubeCluster
) -> None:
    served = {name: _pod(name, node=f"n{i}") for i, name in enumerate(("a", "b"), 1)}
    for body in served.values():
        _create(kube, body)
    a, b = kube.get(Pod, "a", "default"), kube.get(Pod, "b", "default")
    assert a is not None
    assert b is not None
    # what controllers read is what a plain parse of the server's object gives
    for pod in (a, b):
        stored = apiserver.stored("pods", pod.name, "default")
        assert stored is not None
        assert pod.to_dict() == _parsed(stored).to_dict()
        assert pod == _parsed(stored)
    assert (a.spec.node_name, b.spec.node_name) == ("n1", "n2")
    # and the equal parts are held once
    assert a.spec.containers is b.spec.containers
    assert a.metadata.labels is b.metadata.labels
    assert a.status.conditions is b.status.conditions
    assert a.status.conditions[0].type == "Ready"
    assert a.metadata is not b.metadata


def test_a_changed_copy_of_a_cached_pod_changes_no_other(
    apiserver: FakeApiServer, kube: KubeCluster
) -> None:
    for name in ("a", "b"):
        _create(kube, _pod(name))
    a, b = kube.get(Pod, "a", "default"), kube.get(Pod, "b", "default")
    assert a is not None
    assert b is not None
    before = b.to_dict()
    changed = a.clone()
    changed.metadata.labels["app"] = "other"
    changed.spec.containers[0].image = "busybox"
    changed.status.conditions[0].status = "False"
    assert b.to_dict() == before
    assert a.metadata.labels["app"] == "inflate"


def test_equal_values_of_different_types_or_offsets_are_not_merged() -> None:
    parts = SharedParts()
    held = [
        parts.share(Pod.model_validate({"metadata": {"name": "p", "labels": labels}}))
        for labels in ({"x": "1"}, {"x": "1"}, {"y": "1"})
    ]
    assert held[0].metadata.labels is held[1].metadata.labels
    assert held[0].metadata.labels is not held[2].metadata.labels
    # 1, True and 1.0 are equal in Python but not on the wire
    typed = [
        parts.share(Pod.model_validate({"spec": {"containers": [{"name": "c", "x": value}]}}))
        for value in (1, True, 1.0, 1)
    ]
    assert [pod.to_dict()["spec"]["containers"][0]["x"] for pod in typed] == [1, True, 1.0, 1]
    assert [type(pod.to_dict()["spec"]["containers"][0]["x"]) for pod in typed] == [
        int,
        bool,
        float,
        int,
    ]
    assert typed[0].spec.containers is typed[3].spec.containers
    utc = datetime(2026, 11, 27, 1, 0, tzinfo=UTC)
    plus_one = datetime(2026, 11, 27, 2, 0, tzinfo=timezone(timedelta(hours=1)))
    assert utc == plus_one
    times = [
        parts.share(
            Pod.model_validate(
                {"status": {"conditions": [{"type": "Ready", "status": "True",
                                            "lastTransitionTime": moment}]}}
            )
        )
        for moment in (utc, plus_one)
    ]  # fmt: skip
    moments = [pod.status.conditions[0].last_transition_time for pod in times]
    assert [m.utcoffset() if m else None for m in moments] == [timedelta(0), timedelta(hours=1)]
    lists = [
        parts.share(Pod.model_validate({"metadata": {"finalizers": finalizers}}))
        for finalizers in (["a"], ["a"], ["a", "b"])
    ]
    assert lists[0].metadata.finalizers is lists[1].metadata.finalizers
    assert lists[2].metadata.finalizers == ["a", "b"]


def test_parts_are_forgotten_once_nothing_else_holds_them() -> None:
    parts = SharedParts()
    pods = [parts.share(_parsed(_pod(f"p{i}", node=f"n{i % 3}"))) for i in range(30)]
    assert len(parts) > 0
    half = pods[15:]
    del pods
    gc.collect()
    parts.sweep()
    remaining = len(parts)
    assert remaining > 0
    assert [p.name for p in half] == [f"p{i}" for i in range(15, 30)]
    del half
    gc.collect()
    assert parts.sweep() == remaining
    assert len(parts) == 0
