"""Events: written through events.k8s.io/v1 when the server serves it (a series counts the
repeats), through core/v1 when it does not; what lands is what ``kubectl events`` shows."""

from __future__ import annotations

import ast
import re
import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from nodewright import metrics
from nodewright.api.core import Event, Node
from nodewright.api.meta import ObjectMeta
from nodewright.clock import SimulatedClock
from nodewright.cluster.kube import EVENT_ACTIONS, KubeCluster
from nodewright.controllers.events import WARNING, EventRecorder
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import FakeApiServer, Fault

CONTROLLERS = Path(__file__).resolve().parents[2] / "core" / "nodewright" / "controllers"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def _connect(server: FakeApiServer) -> KubeCluster:
    return KubeCluster.connect(str(server.kubeconfig), settings=FAST)


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[FakeApiServer, KubeCluster]]:
    server = FakeApiServer(tmp_path).start()
    cluster = _connect(server)
    cluster.reporting_instance = "nodewright-7d9f-abc12"
    yield server, cluster
    cluster.close()
    server.stop()


def _stored(server: FakeApiServer, group: str) -> list[dict[str, Any]]:
    with server.lock:
        return [
            o
            for (gvr, _, _), o in server.objects.items()
            if gvr[:1] == (group,) and gvr[2] == "events"
        ]


def _publish_three_times(cluster: KubeCluster) -> Node:
    clock = SimulatedClock()
    node = cluster.create(Node(metadata=ObjectMeta(name="n1")))
    recorder = EventRecorder(cluster, clock)
    recorder.publish(node, "DisruptionBlocked", "Node is not empty", kind=WARNING)
    recorder.publish(node, "DisruptionBlocked", "Node is not empty", kind=WARNING)  # deduped
    clock.advance(timedelta(minutes=6))
    recorder.publish(node, "DisruptionBlocked", "Node is not empty", kind=WARNING)
    assert cluster.flush_events(10.0)
    return node


def test_events_go_through_events_k8s_io_with_a_series(
    recorded: tuple[FakeApiServer, KubeCluster],
) -> None:
    server, cluster = recorded
    node = _publish_three_times(cluster)
    assert cluster.events_api() == "events.k8s.io/v1"
    assert _stored(server, "") == []
    [event] = _stored(server, "events.k8s.io")
    assert event["reportingController"] == "karpenter"
    assert event["reportingInstance"] == "nodewright-7d9f-abc12"
    assert event["action"] == "Disrupt"
    assert event["reason"] == "DisruptionBlocked"
    assert event["note"] == "Node is not empty"
    assert event["type"] == "Warning"
    assert event["regarding"]["kind"] == "Node"
    assert event["regarding"]["name"] == "n1"
    assert event["regarding"]["uid"] == node.metadata.uid
    assert MICRO_TIME.match(event["eventTime"])
    assert event["series"]["count"] == 2
    assert MICRO_TIME.match(event["series"]["lastObservedTime"])
    assert event["series"]["lastObservedTime"] > event["eventTime"]
    assert server.count("POST", "/apis/events.k8s.io/v1/namespaces/default/events") == 1
    [patch] = [p for p in server.patches if p[1] == "events"]
    assert patch[0] == "application/merge-patch+json"
    assert server.count("GET", "/apis/events.k8s.io/v1") >= 1
    # what the recorder reads back is the same event, as a core/v1 Event
    [read] = cluster.list(Event, namespace="default")
    assert (read.reason, read.type, read.count, read.involved_object.name) == (
        "DisruptionBlocked",
        "Warning",
        2,
        "n1",
    )


def test_events_fall_back_to_core_v1_when_events_k8s_io_is_not_served(
    recorded: tuple[FakeApiServer, KubeCluster],
) -> None:
    server, cluster = recorded
    server.unserved_groups.add("events.k8s.io")
    _publish_three_times(cluster)
    assert cluster.events_api() == "v1"
    assert _stored(server, "events.k8s.io") == []
    [event] = _stored(server, "")
    assert event["reason"] == "DisruptionBlocked"
    assert event["count"] == 2
    assert event["source"]["component"] == "karpenter"
    assert event["involvedObject"]["name"] == "n1"
    assert server.count("POST", "/api/v1/namespaces/default/events") == 1
    assert server.count("PUT", "/events/") == 0  # the repeat is a patch (RBAC grants patch)
    assert [(p[0], p[1]) for p in server.patches] == [("application/merge-patch+json", "events")]
    assert server.count("GET", "/apis/events.k8s.io/v1") == 1  # asked once


def test_a_long_note_is_cut_to_the_api_limit(recorded: tuple[FakeApiServer, KubeCluster]) -> None:
    server, cluster = recorded
    node = cluster.create(Node(metadata=ObjectMeta(name="n1")))
    EventRecorder(cluster, SimulatedClock()).publish(node, "FailedScheduling", "é" * 2000)
    assert cluster.flush_events(10.0)
    [event] = _stored(server, "events.k8s.io")
    assert len(event["note"].encode()) <= 1024
    assert event["note"].endswith("...")
    assert event["action"] == "Schedule"


def _published_reasons() -> set[str]:
    """Every reason the controllers publish as a literal (``publish(obj, "Reason", ...)``)."""
    reasons = set()
    for path in CONTROLLERS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "publish"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                reasons.add(node.args[1].value)
    return reasons


#: Reasons published through a variable: the NodePool's node class problem
#: (controllers/nodepool/status.py) and the core's own launch failure
#: (controllers/nodeclaim/lifecycle/launch.py).
PUBLISHED_THROUGH_A_VARIABLE = {"NodeClassNotFound", "NodeClassNotReady", "LaunchFailed"}


def test_every_reason_the_controllers_publish_has_a_short_action() -> None:
    literal = _published_reasons()
    assert {"Nominated", "DisruptionBlocked", "FailedScheduling", "Evicted"} <= literal
    missing = sorted((literal | PUBLISHED_THROUGH_A_VARIABLE) - set(EVENT_ACTIONS))
    assert missing == [], f"no events.k8s.io action for {missing}"
    assert all(0 < len(action) <= 128 for action in EVENT_ACTIONS.values())
    assert EVENT_ACTIONS["NodeClassNotFound"] == "Validate"


def test_the_reporting_instance_is_the_pod_name_else_the_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two replicas on one node must not write Events as the same instance: the chart hands
    each its pod's name (POD_NAME, from the downward API)."""
    server = FakeApiServer(tmp_path).start()
    try:
        monkeypatch.setenv("POD_NAME", "nodewright-5c8d-x2k9q")
        named = _connect(server)
        monkeypatch.delenv("POD_NAME")
        unnamed = _connect(server)
        node = named.create(Node(metadata=ObjectMeta(name="n1")))
        EventRecorder(named, SimulatedClock()).publish(node, "Evicted", "evicted")
        assert named.flush_events(10.0)
        [event] = _stored(server, "events.k8s.io")
        assert event["reportingInstance"] == "nodewright-5c8d-x2k9q"
        assert unnamed.reporting_instance == socket.gethostname()
        named.close()
        unnamed.close()
    finally:
        server.stop()


def _event(name: str, count: int = 1) -> Event:
    return Event(
        metadata=ObjectMeta(name=name, namespace="default"),
        involved_object=Node(metadata=ObjectMeta(name="n1")).reference(),
        reason="Evicted",
        message=f"event {name}",
        count=count,
    )


def test_events_are_written_by_a_background_writer_that_reads_nothing_first(
    recorded: tuple[FakeApiServer, KubeCluster],
) -> None:
    server, cluster = recorded
    node = cluster.create(Node(metadata=ObjectMeta(name="n1")))
    recorder = EventRecorder(cluster, SimulatedClock())
    for reason in ("DisruptionBlocked", "Unconsolidatable", "Evicted"):
        recorder.publish(node, reason, "a message")
    assert cluster.flush_events(10.0)
    assert len(_stored(server, "events.k8s.io")) == 3
    assert server.count("POST", "/apis/events.k8s.io/v1/namespaces/default/events") == 3
    assert server.count("GET", "/apis/events.k8s.io/v1/namespaces/") == 0


def test_a_full_queue_drops_the_oldest_events_and_counts_them_never_waiting(
    recorded: tuple[FakeApiServer, KubeCluster],
) -> None:
    server, cluster = recorded
    cluster.events_api()  # discovery first, so the slow answer below is an Event's
    server.faults.append(Fault("POST", "/events", delay=3.0))
    before = metrics.sample("nodewright_events_dropped_total", {"reason": "queue_full"})
    names = [f"e{i:04d}" for i in range(1100)]
    for name in names:
        cluster.record_event(_event(name))
    # every Event was handed over while the server still held the first write
    assert server.count("POST", "/events") == 0
    assert cluster.flush_events(30.0)
    dropped = metrics.sample("nodewright_events_dropped_total", {"reason": "queue_full"}) - before
    written = {e["metadata"]["name"] for e in _stored(server, "events.k8s.io")}
    assert len(written) + dropped == len(names)
    assert dropped >= len(names) - 1001
    assert names[-1] in written  # the newest survive
    assert names[1] not in written  # the oldest waiting ones went


def test_a_repeat_whose_event_is_gone_is_created_again(
    recorded: tuple[FakeApiServer, KubeCluster],
) -> None:
    server, cluster = recorded
    cluster.record_event(_event("gone", count=3))
    assert cluster.flush_events(10.0)
    [event] = _stored(server, "events.k8s.io")
    assert event["series"]["count"] == 3
    assert server.count("PATCH", "/events/gone") == 1  # tried as a repeat first (404)


def test_a_first_event_already_written_by_an_earlier_process_counts_on(
    recorded: tuple[FakeApiServer, KubeCluster],
) -> None:
    server, cluster = recorded
    cluster.record_event(_event("again"))
    assert cluster.flush_events(10.0)
    cluster.record_event(_event("again"))  # a restarted recorder starts again at 1
    assert cluster.flush_events(10.0)
    [event] = _stored(server, "events.k8s.io")
    assert event["series"]["count"] == 2
