"""What the adapter relies on from an API server, checked on the loopback fake and, when
``NODEWRIGHT_TEST_KUBECONFIG`` names one, on a real control plane: the fake must answer as the
real one does, or it would hide the bugs these tests were written for.

* every JSON patch the server cannot apply is a bare 422 (no ``details``);
* timestamps left out of conditions and container states are stored as ``null``;
* a pod's status patch (what the KWOK emulation sends) applies as a patch, with no fall-back;
* a concurrent write to the value we change is a ConflictError, and a retry after re-reading
  succeeds; a concurrent write to another value survives ours;
* a PodDisruptionBudget with an empty selector covers every pod of its namespace, one without
  a selector covers none.
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nodewright.api.core import (
    Namespace,
    Node,
    NodeCondition,
    Pod,
    PodCondition,
    PodStatus,
)
from nodewright.api.meta import ObjectMeta
from nodewright.cluster import ConflictError, EvictionBlockedError, InvalidError
from nodewright.cluster.kube import KubeCluster
from nodewright.cluster.kube.patch import JSON_PATCH, precondition_failed
from nodewright_kwok import kubelet
from tests import builders
from tests.kube.apiserver.patches import NOT_APPLIED
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.polling import eventually

REAL_KUBECONFIG = os.environ.get("NODEWRIGHT_TEST_KUBECONFIG", "")

#: A scheduler nobody runs: kube-scheduler leaves these test pods alone.
NO_SCHEDULER = "nodewright-test-nobody"


@dataclasses.dataclass
class Server:
    """One API server under test, with two clients (this process, and someone else)."""

    name: str
    mine: KubeCluster
    other: KubeCluster
    namespace: str
    suffix: str


def _clients(kubeconfig: str) -> tuple[KubeCluster, KubeCluster]:
    settings = dataclasses.replace(FAST, request_timeout=10.0, sync_timeout=30.0)
    return (
        KubeCluster.connect(kubeconfig, settings=settings),
        KubeCluster.connect(kubeconfig, settings=settings),
    )


@pytest.fixture(
    params=[
        "fake",
        pytest.param(
            "real",
            marks=[
                pytest.mark.cluster,
                pytest.mark.skipif(
                    not REAL_KUBECONFIG, reason="NODEWRIGHT_TEST_KUBECONFIG is not set"
                ),
            ],
        ),
    ]
)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    suffix = uuid.uuid4().hex[:6]
    fake = None
    if request.param == "fake":
        fake = FakeApiServer(tmp_path).start()
        kubeconfig = str(fake.kubeconfig)
    else:
        kubeconfig = REAL_KUBECONFIG
    mine, other = _clients(kubeconfig)
    namespace = f"contract-{suffix}"
    mine.create(Namespace(metadata=ObjectMeta(name=namespace)))
    try:
        yield Server(request.param, mine, other, namespace, suffix)
    finally:
        for node in mine.list(Node):
            if node.name.endswith(suffix):
                mine.delete(Node, node.name)
        mine.delete(Namespace, namespace)
        mine.close()
        other.close()
        if fake is not None:
            fake.stop()


def _pod(server: Server, name: str) -> Pod:
    return server.mine.create(
        builders.pod(
            f"{name}-{server.suffix}",
            namespace=server.namespace,
            image="pause",
            container_name="c",
            schedulerName=NO_SCHEDULER,
        )
    )


def _node(server: Server, name: str) -> Node:
    labels = {"nodewright-test": server.suffix, "a": "1"}
    return server.mine.create(
        Node(metadata=ObjectMeta(name=f"{name}-{server.suffix}", labels=labels))
    )


def _cached(cluster: KubeCluster, kind: type[Any], name: str, namespace: str, version: str) -> Any:
    """A copy of ``kind``/``name`` from ``cluster``'s cache once it holds ``version`` or later
    (the version a write diffs against)."""

    def caught_up() -> bool:
        found = cluster.get(kind, name, namespace)
        return found is not None and int(found.metadata.resource_version or 0) >= int(version)

    eventually(caught_up, f"the cache holds {kind.KIND} {name} at {version}", timeout=10.0)
    found = cluster.get(kind, name, namespace)
    assert found is not None
    return found.clone()  # reads are shared: change a copy


def _write_status(cluster: KubeCluster, obj: Any, change: Callable[[Any], None]) -> Any:
    """Read ``obj`` live, ``change`` it and write its status, again while a controller of the
    control plane (the node lifecycle controller, say) keeps writing it too."""
    for _ in range(20):
        current = cluster.read(type(obj), obj.name, obj.namespace)
        assert current is not None
        change(current)
        try:
            return cluster.update_status(current)
        except ConflictError:
            time.sleep(0.1)
    raise AssertionError(f"could not write the status of {obj.kind} {obj.name}")


def _raw_patch(server: Server, path: str, ops: list[dict[str, Any]]) -> Any:
    return server.mine._api.call("PATCH", path, body=ops, content_type=JSON_PATCH)


# -- what the server answers -----------------------------------------------------------------


def test_every_patch_the_server_cannot_apply_is_a_bare_422(server: Server) -> None:
    node = _node(server, "n")
    path = f"/api/v1/nodes/{node.name}"
    failing = {
        "a test of another value": [{"op": "test", "path": "/metadata/labels/a", "value": "2"}],
        "a test of a missing member": [{"op": "test", "path": "/metadata/labels/b", "value": "x"}],
        "a test under a missing parent": [{"op": "test", "path": "/nope/x", "value": "x"}],
        "a removal of a missing member": [{"op": "remove", "path": "/metadata/labels/b"}],
        "an add under a missing parent": [{"op": "add", "path": "/nope/x", "value": "x"}],
        "a stale uid": [{"op": "test", "path": "/metadata/uid", "value": "not-the-uid"}],
    }
    for what, ops in failing.items():
        answer = _raw_patch(server, path, ops)
        assert (answer.status, answer.body.get("message")) == (422, NOT_APPLIED["message"]), what
        assert answer.body.get("reason") == "Invalid", what
        assert not answer.body.get("details"), what
        assert precondition_failed(answer), what
    # what does apply: a test of null on a missing member, a replace of a missing member
    applied = _raw_patch(
        server,
        path,
        [
            {"op": "test", "path": "/metadata/labels/b", "value": None},
            {"op": "replace", "path": "/metadata/labels/b", "value": "2"},
        ],
    )
    assert applied.status == 200
    assert applied.body["metadata"]["labels"]["a"] == "1"
    assert applied.body["metadata"]["labels"]["b"] == "2"


def test_an_invalid_object_is_a_422_with_causes_and_an_invalid_error(server: Server) -> None:
    node = _node(server, "n")
    answer = _raw_patch(
        server,
        f"/api/v1/nodes/{node.name}",
        [{"op": "add", "path": "/metadata/labels", "value": {"bad": "not a label value!"}}],
    )
    assert answer.status == 422
    assert answer.body["details"]["causes"]
    assert not precondition_failed(answer)
    mine = _cached(server.mine, Node, node.name, "", node.metadata.resource_version or "0")
    mine.metadata.labels["bad"] = "not a label value!"
    with pytest.raises(InvalidError):
        server.mine.update(mine)


def test_unset_timestamps_are_stored_as_null(server: Server) -> None:
    def start(pod: Pod) -> None:
        status = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "c", "image": "pause", "imageID": "", "ready": True, "restartCount": 0,
                 "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 0}}},
            ],
        }  # fmt: skip
        pod.status = PodStatus.model_validate(status)

    stored = _write_status(server.mine, _pod(server, "p"), start)
    raw = server.mine._api.call(
        "GET", f"/api/v1/namespaces/{server.namespace}/pods/{stored.name}"
    ).body["status"]
    assert raw["conditions"][0]["lastProbeTime"] is None
    assert raw["conditions"][0]["lastTransitionTime"] is None
    container = raw["containerStatuses"][0]
    assert container["state"]["running"] == {"startedAt": None}
    assert container["lastState"]["terminated"]["startedAt"] is None
    assert container["lastState"]["terminated"]["finishedAt"] is None

    def ready(node: Node) -> None:
        node.status.conditions = [NodeCondition(type="Ready", status="True", reason="Test")]

    node = _write_status(server.mine, _node(server, "n"), ready)
    raw = server.mine._api.call("GET", f"/api/v1/nodes/{node.name}").body["status"]
    [condition] = [c for c in raw["conditions"] if c["type"] == "Ready"]
    assert condition["lastHeartbeatTime"] is None
    assert condition["lastTransitionTime"] is None


# -- what the adapter makes of it --------------------------------------------------------------


def test_a_pod_status_patch_tests_conditions_as_stored(server: Server) -> None:
    """The KWOK emulation's write: a pod with a condition the scheduler wrote (no probe
    time, stored as null) is started with one JSON patch, not a fall-back replace."""
    pod = _pod(server, "p")
    theirs = server.other.read(Pod, pod.name, pod.namespace)
    assert theirs is not None
    theirs.status.conditions = [
        PodCondition(
            type="PodScheduled",
            status="True",
            last_transition_time=datetime(2026, 1, 1, tzinfo=UTC),
        )
    ]
    written = server.other.update_status(theirs)
    mine = _cached(
        server.mine, Pod, pod.name, pod.namespace, written.metadata.resource_version or "0"
    )
    kubelet.mark_pod_running(mine, datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
    fallbacks = server.mine.patch_fallbacks
    running = server.mine.update_status(mine)
    assert server.mine.patch_fallbacks == fallbacks
    assert running.status.phase == "Running"
    assert {c.type: c.status for c in running.status.conditions} == dict.fromkeys(
        kubelet.POD_READY_CONDITIONS, "True"
    )


def test_a_concurrent_write_to_the_same_value_is_a_conflict_and_a_retry_succeeds(
    server: Server,
) -> None:
    node = _node(server, "n")
    version = node.metadata.resource_version or "0"
    mine = _cached(server.mine, Node, node.name, "", version)
    theirs = server.other.read(Node, node.name)
    assert theirs is not None
    theirs.metadata.labels["nodewright-test"] = "theirs"
    theirs.metadata.annotations["seen-by"] = "them"
    server.other.update(theirs)
    mine.metadata.labels["nodewright-test"] = "mine"
    fallbacks = server.mine.patch_fallbacks
    with pytest.raises(ConflictError):
        server.mine.update(mine)
    assert server.mine.patch_fallbacks == fallbacks + 1  # the patch's test failed first
    # the retry a controller makes on its next pass: read again, change again
    fresh = server.mine.read(Node, node.name)
    assert fresh is not None
    fresh.metadata.labels["nodewright-test"] = "mine"
    server.mine.update(fresh)
    stored = server.other.read(Node, node.name)
    assert stored is not None
    assert stored.metadata.labels["nodewright-test"] == "mine"
    assert stored.metadata.annotations["seen-by"] == "them"


def test_a_concurrent_write_to_another_value_survives_ours(server: Server) -> None:
    node = _node(server, "n")
    mine = _cached(server.mine, Node, node.name, "", node.metadata.resource_version or "0")
    theirs = server.other.read(Node, node.name)
    assert theirs is not None
    theirs.metadata.annotations["seen-by"] = "them"
    server.other.update(theirs)
    mine.metadata.labels["mine"] = "yes"
    fallbacks = server.mine.patch_fallbacks
    server.mine.update(mine)
    assert server.mine.patch_fallbacks == fallbacks
    stored = server.other.read(Node, node.name)
    assert stored is not None
    assert stored.metadata.labels["mine"] == "yes"
    assert stored.metadata.annotations["seen-by"] == "them"


def test_a_concurrent_condition_change_on_a_pod_is_a_conflict(server: Server) -> None:
    pod = _pod(server, "p")
    mine = _cached(server.mine, Pod, pod.name, pod.namespace, pod.metadata.resource_version or "0")
    theirs = server.other.read(Pod, pod.name, pod.namespace)
    assert theirs is not None
    theirs.status.conditions = [PodCondition(type="PodScheduled", status="False")]
    server.other.update_status(theirs)
    mine.status.conditions = [PodCondition(type="PodScheduled", status="True")]
    with pytest.raises(ConflictError):
        server.mine.update_status(mine)


@pytest.mark.parametrize(
    ("selector", "blocked"),
    [({"selector": {}}, True), ({}, False)],
    ids=["empty-selector-covers-every-pod", "no-selector-covers-none"],
)
def test_which_pods_a_budget_without_labels_covers(
    server: Server, selector: dict[str, Any], blocked: bool
) -> None:
    pod = _pod(server, "guarded")

    def run(current: Pod) -> None:
        kubelet.mark_pod_running(current, datetime(2026, 1, 1, tzinfo=UTC))

    _write_status(server.mine, pod, run)
    budgets = f"/apis/policy/v1/namespaces/{server.namespace}/poddisruptionbudgets"
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "no-labels"},
        "spec": {"maxUnavailable": 0, **selector},
    }
    assert server.mine._api.call("POST", budgets, body=budget).status == 201
    if server.name == "real":  # the disruption controller must have counted the pod first

        def counted() -> bool:
            status = server.mine._api.call("GET", f"{budgets}/no-labels").body.get("status", {})
            healthy = 1 if blocked else 0
            return bool(
                status.get("observedGeneration") == 1 and status.get("currentHealthy") == healthy
            )

        eventually(counted, "the disruption controller observes the budget", timeout=30.0)
    if blocked:
        with pytest.raises(EvictionBlockedError):
            server.mine.evict(pod.name, pod.namespace)
    else:
        server.mine.evict(pod.name, pod.namespace)

        def evicted() -> bool:
            left = server.mine.read(Pod, pod.name, pod.namespace)
            return left is None or left.deleting

        eventually(evicted, "the evicted pod is deleted", timeout=30.0)


def test_a_list_comes_in_pages_of_one_snapshot(server: Server) -> None:
    names = sorted(_pod(server, f"page{index}").name for index in range(3))
    path = f"/api/v1/namespaces/{server.namespace}/pods"
    first = server.mine._api.call("GET", path, {"limit": "2"})
    assert first.status == 200
    assert [i["metadata"]["name"] for i in first.body["items"]] == names[:2]
    token = first.body["metadata"]["continue"]
    assert first.body["metadata"]["remainingItemCount"] == 1
    _pod(server, "later")  # not in the list: its snapshot was taken with the first page
    rest = server.mine._api.call("GET", path, {"limit": "2", "continue": token})
    assert rest.status == 200
    assert [i["metadata"]["name"] for i in rest.body["items"]] == names[2:]
    assert rest.body["metadata"]["resourceVersion"] == first.body["metadata"]["resourceVersion"]
    assert not rest.body["metadata"].get("continue")
    assert "remainingItemCount" not in rest.body["metadata"]
