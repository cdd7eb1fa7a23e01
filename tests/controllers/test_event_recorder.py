"""The Event recorder: what it writes for repeated, similar and many events, as a user reading
``kubectl get events`` sees them, and that what it remembers follows recent events."""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.core import Event, Node, Pod
from nodewright.api.meta import ObjectMeta
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.controllers.events import WARNING, EventRecorder


def _setup() -> tuple[SimulatedClock, MemoryCluster, EventRecorder]:
    clock = SimulatedClock()
    cluster = MemoryCluster(clock)
    return clock, cluster, EventRecorder(cluster, clock)


def _pod(cluster: MemoryCluster, name: str) -> Pod:
    return cluster.create(Pod(metadata=ObjectMeta(name=name, namespace="default")))


def test_a_repeat_within_the_window_is_not_written_and_after_it_counts_into_one_event() -> None:
    clock, cluster, recorder = _setup()
    node = cluster.create(Node(metadata=ObjectMeta(name="n1")))
    first = recorder.publish(node, "DisruptionBlocked", "Node is not empty", WARNING)
    again = recorder.publish(node, "DisruptionBlocked", "Node is not empty", WARNING)
    assert first == again == clock.now() + timedelta(minutes=5)
    clock.advance(timedelta(minutes=6))
    recorder.publish(node, "DisruptionBlocked", "Node is not empty", WARNING)
    [event] = cluster.list(Event)
    assert (event.count, event.message, event.type) == (2, "Node is not empty", "Warning")
    assert event.last_timestamp == clock.now()


def test_nominated_events_share_karpenters_rate_limit() -> None:
    """Karpenter's PodNominationRateLimiter: a burst of 10, then 5 a second."""
    clock, cluster, recorder = _setup()
    pods = [_pod(cluster, f"p{i}") for i in range(40)]
    for pod in pods[:20]:
        recorder.publish(pod, "Nominated", "Pod should schedule on: nodeclaim/a")
    assert len(cluster.list(Event)) == 10
    clock.advance(timedelta(seconds=1))
    for pod in pods[20:]:
        recorder.publish(pod, "Nominated", "Pod should schedule on: nodeclaim/a")
    assert len(cluster.list(Event)) == 15
    # other reasons are not held back by it
    recorder.publish(pods[39], "FailedScheduling", "Failed to schedule pod, no room", WARNING)
    assert len(cluster.list(Event)) == 16


def test_one_object_gets_at_most_25_events_at_once_then_one_every_5_minutes() -> None:
    clock, cluster, recorder = _setup()
    node = cluster.create(Node(metadata=ObjectMeta(name="n1")))
    for i in range(30):
        recorder.publish(node, f"Reason{i}", "a message")
    assert len(cluster.list(Event)) == 25
    clock.advance(timedelta(minutes=5))
    recorder.publish(node, "Later", "a message")
    recorder.publish(node, "EvenLater", "a message")
    assert {e.reason for e in cluster.list(Event)} >= {"Later"}
    assert len(cluster.list(Event)) == 26
    assert recorder.suppressed == 6


def test_many_different_messages_of_one_reason_are_combined_into_one_counted_event() -> None:
    _, cluster, recorder = _setup()
    pod = _pod(cluster, "p1")
    for i in range(12):
        recorder.publish(pod, "FailedScheduling", f"Failed to schedule pod, reason {i}", WARNING)
    events = cluster.list(Event)
    combined = [e for e in events if e.message.startswith("(combined from similar events): ")]
    assert len(events) == 10
    [one] = combined
    assert one.count == 3
    assert one.message.endswith("reason 11")
    assert one.involved_object.name == "p1"


def test_what_the_recorder_remembers_follows_recent_events() -> None:
    clock, cluster, recorder = _setup()
    pods = [_pod(cluster, f"p{i}") for i in range(300)]
    for pod in pods:
        recorder.publish(pod, "FailedScheduling", "Failed to schedule pod, no room", WARNING)
    assert recorder.remembered() >= 300
    clock.advance(timedelta(minutes=30))
    recorder.publish(pods[0], "FailedScheduling", "Failed to schedule pod, no room", WARNING)
    assert recorder.remembered() <= 4  # that one event, once in each of its memories
