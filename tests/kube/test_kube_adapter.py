"""KubeCluster against the loopback fake API server: caches, retries, conflicts, timeouts."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import pytest

from nodewright.api.apps import PodDisruptionBudget, PodDisruptionBudgetSpec
from nodewright.api.core import LabelSelector, Node, Pod, PodStatus
from nodewright.api.karpenter import NodePool
from nodewright.api.meta import ObjectMeta
from nodewright.cluster import ClusterError, ConflictError, EvictionBlockedError
from nodewright.cluster.kube import (
    KubeCluster,
    ServerUnavailableError,
    TokenBucket,
    TooManyRequestsError,
    collection_path,
    object_path,
    plural_of,
)
from nodewright.cluster.objects import mutable
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import TOKEN, FakeApiServer, Fault
from tests.kube.polling import eventually


def _other(apiserver: FakeApiServer, **changes: Any) -> KubeCluster:
    return KubeCluster.connect(
        str(apiserver.kubeconfig), settings=dataclasses.replace(FAST, **changes)
    )


def test_routes_follow_api_version_kind_and_scope() -> None:
    assert plural_of("NodeClass") == "nodeclasses"
    assert plural_of("KWOKNodeClass") == "kwoknodeclasses"
    assert plural_of("PodDisruptionBudget") == "poddisruptionbudgets"
    assert plural_of("Policy") == "policies"
    assert collection_path(NodePool, None) == "/apis/karpenter.sh/v1/nodepools"
    assert collection_path(Pod, "kube-system") == "/api/v1/namespaces/kube-system/pods"
    assert object_path(Pod, "p", "") == "/api/v1/namespaces/default/pods/p"
    assert object_path(Node, "n", "ignored") == "/api/v1/nodes/n"


def test_cache_follows_changes_made_by_others(kube: KubeCluster, apiserver: FakeApiServer) -> None:
    assert kube.list(Node) == []
    other = _other(apiserver)
    try:
        other.create(Node(metadata=ObjectMeta(name="n1")))
        eventually(lambda: kube.get(Node, "n1") is not None)
        node = mutable(other.get(Node, "n1"))  # type: ignore[type-var]
        assert node is not None
        node.metadata.labels["zone"] = "a"
        other.update(node)
        eventually(lambda: (kube.get(Node, "n1") or node).metadata.labels.get("zone") == "a")
        other.delete(Node, "n1")
        eventually(lambda: kube.get(Node, "n1") is None)
    finally:
        other.close()
    lists, _ = kube.informer_stats(Node)
    assert lists == 1  # all of it came through the watch
    assert apiserver.count("GET", "/api/v1/nodes/n1") == 0  # reads never left the cache


def test_watch_relists_after_410_gone(kube: KubeCluster, apiserver: FakeApiServer) -> None:
    kube.create(Node(metadata=ObjectMeta(name="before")))
    assert [n.name for n in kube.list(Node)] == ["before"]
    apiserver.pause_watches()
    other = _other(apiserver)
    try:
        other.create(Node(metadata=ObjectMeta(name="during")))
        apiserver.compact()  # the cache's resourceVersion is now too old to watch from
        apiserver.resume_watches()
        eventually(lambda: kube.get(Node, "during") is not None)
    finally:
        other.close()
    lists, gone = kube.informer_stats(Node)
    assert gone >= 1
    assert lists >= 2
    assert [n.name for n in kube.list(Node)] == ["before", "during"]


def test_a_watch_that_breaks_resumes_where_it_was_without_listing_again(
    kube: KubeCluster, apiserver: FakeApiServer
) -> None:
    kube.create(Node(metadata=ObjectMeta(name="before")))
    assert [n.name for n in kube.list(Node)] == ["before"]
    apiserver.pause_watches()  # every open watch ends, as when a connection drops
    other = _other(apiserver)
    try:
        other.create(Node(metadata=ObjectMeta(name="during")))
        apiserver.resume_watches()
        eventually(lambda: kube.get(Node, "during") is not None)
    finally:
        other.close()
    assert kube.informer_stats(Node) == (1, 0)  # one list; the watch caught up by itself


def test_429_is_retried_after_retry_after(kube: KubeCluster, apiserver: FakeApiServer) -> None:
    apiserver.inject(Fault("POST", "/api/v1/nodes", status=429, times=2, retry_after=0.05))
    started = time.monotonic()
    created = kube.create(Node(metadata=ObjectMeta(name="n1")))
    assert created.metadata.uid
    assert time.monotonic() - started >= 0.1  # waited Retry-After twice
    assert [code for m, p, code in apiserver.requests if m == "POST"] == [429, 429, 201]
    assert kube.api_retries == 2


def test_429_that_never_ends_gives_up(kube: KubeCluster, apiserver: FakeApiServer) -> None:
    apiserver.inject(Fault("GET", "/api/v1/nodes/n1", status=429, times=100, retry_after=0.01))
    with pytest.raises(TooManyRequestsError, match="429 after 4 attempts"):
        kube.read(Node, "n1")


def test_5xx_is_retried_on_reads_but_not_on_writes(
    kube: KubeCluster, apiserver: FakeApiServer
) -> None:
    kube.create(Node(metadata=ObjectMeta(name="n1")))
    apiserver.inject(Fault("GET", "/api/v1/nodes/n1", status=503, times=2))
    assert kube.read(Node, "n1") is not None
    apiserver.inject(Fault("POST", "/api/v1/nodes", status=500, times=1))
    with pytest.raises(ClusterError, match="HTTP 500"):
        kube.create(Node(metadata=ObjectMeta(name="n2")))
    assert apiserver.count("POST", "/api/v1/nodes") == 2  # n1, and n2 once


def test_concurrent_writers_conflict(kube: KubeCluster, apiserver: FakeApiServer) -> None:
    kube.create(Node(metadata=ObjectMeta(name="n1")))
    other = _other(apiserver)
    try:
        mine = mutable(kube.get(Node, "n1"))  # type: ignore[type-var]
        theirs = mutable(other.get(Node, "n1"))  # type: ignore[type-var]
        assert mine is not None
        assert theirs is not None
        theirs.metadata.labels["by"] = "them"
        other.update(theirs)
        mine.metadata.labels["by"] = "me"
        with pytest.raises(ConflictError, match="has been modified"):
            kube.update(mine)
        # the caller's retry: read again (the cache catches up) and write
        eventually(lambda: (kube.get(Node, "n1") or mine).metadata.labels.get("by") == "them")
        fresh = mutable(kube.get(Node, "n1"))  # type: ignore[type-var]
        assert fresh is not None
        fresh.metadata.labels["by"] = "me"
        assert kube.update(fresh).metadata.labels["by"] == "me"
    finally:
        other.close()


def test_every_call_has_a_timeout(apiserver: FakeApiServer) -> None:
    slow = _other(apiserver, request_timeout=0.3, max_attempts=2)
    try:
        apiserver.inject(Fault("GET", "/api/v1/nodes/n1", delay=1.5, times=2))
        started = time.monotonic()
        with pytest.raises(ServerUnavailableError, match="nodes/n1"):
            slow.read(Node, "n1")
        assert time.monotonic() - started < 1.5
    finally:
        slow.close()


def test_eviction_blocked_by_a_budget_is_not_retried(
    kube: KubeCluster, apiserver: FakeApiServer
) -> None:
    pod = kube.create(Pod(metadata=ObjectMeta(name="w", namespace="default", labels={"a": "w"})))
    pod.status = PodStatus(phase="Running")
    kube.update_status(pod)
    kube.create(
        PodDisruptionBudget(
            metadata=ObjectMeta(name="w", namespace="default"),
            spec=PodDisruptionBudgetSpec(
                min_available=1, selector=LabelSelector(match_labels={"a": "w"})
            ),
        )
    )
    with pytest.raises(EvictionBlockedError, match="disruption budget"):
        kube.evict("w", "default")
    assert apiserver.count("POST", "/eviction") == 1


def test_token_is_sent_but_never_logged(
    kube: KubeCluster, apiserver: FakeApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    apiserver.inject(Fault("POST", "/api/v1/nodes", status=500, times=1))
    with pytest.raises(ClusterError) as error:
        kube.create(Node(metadata=ObjectMeta(name="n1")))
    assert apiserver.seen_headers[-1]["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in caplog.text
    assert TOKEN not in str(error.value)


def test_objects_that_do_not_parse_are_skipped(
    kube: KubeCluster, apiserver: FakeApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    other = _other(apiserver)
    try:
        # A field NodePool does not know (StrictModel): written raw through the server.
        apiserver.objects[(("karpenter.sh", "v1", "nodepools"), "", "bad")] = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "bad", "resourceVersion": "1"},
            "spec": {"surprise": True},
        }
        other.create(NodePool(metadata=ObjectMeta(name="good")))
        assert [p.name for p in kube.list(NodePool)] == ["good"]
        assert "ignoring NodePool bad: field spec.surprise" in caplog.text
    finally:
        other.close()


def test_rate_limit_spaces_out_calls() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    bucket = TokenBucket(qps=10, burst=3, now=lambda: now[0], sleep=sleep)
    for _ in range(5):
        bucket.acquire()
    assert slept == pytest.approx([0.1, 0.1])  # three from the burst, then one per 100ms


def test_rate_limit_applies_to_real_calls(apiserver: FakeApiServer) -> None:
    limited = _other(apiserver, qps=20, burst=1)
    try:
        started = time.monotonic()
        for _ in range(6):
            limited.read(Node, "missing")
        assert time.monotonic() - started >= 0.2
    finally:
        limited.close()


def test_caches_relist_every_resync_period(apiserver: FakeApiServer) -> None:
    quick = _other(apiserver, resync_period=0.3)
    try:
        quick.list(Node)
        eventually(lambda: quick.informer_stats(Node)[0] >= 3)
    finally:
        quick.close()
