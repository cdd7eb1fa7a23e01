"""Objects for tests of the embedded binder: static nodes, workloads, and reading outcomes."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nodewright.api.apps import DaemonSet, Deployment
from nodewright.api.core import Node, Pod
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.simulation.kubernetes import EmbeddedKubernetes
from tests import builders
from tests.builders import NAMESPACE, pod_template

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def settle(kube: EmbeddedKubernetes, limit: int = 20) -> int:
    """Reconcile until nothing changes; returns the number of passes that wrote."""
    for passes in range(limit):
        if not kube.reconcile():
            return passes
    raise AssertionError(f"the embedded controllers did not settle in {limit} passes")


def node(
    name: str,
    zone: str | None = None,
    cpu: str = "4",
    taints: list[dict[str, str]] | None = None,
    *,
    memory: str = "16Gi",
    labels: dict[str, str] | None = None,
    ready: bool = True,
    kwok: bool = False,
    unschedulable: bool = False,
) -> Node:
    """A static node (a KWOK one with ``kwok``); ``zone`` None leaves the zone label off."""
    all_labels = {HOSTNAME: name, **(labels or {})}
    if zone is not None:
        all_labels[ZONE] = zone
    return Node.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": all_labels,
                "annotations": {"kwok.x-k8s.io/node": "fake"} if kwok else {},
            },
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
    )


def pod(
    name: str, app: str | None = None, cpu: str = "1", namespace: str = NAMESPACE, **spec: Any
) -> Pod:
    """A workload pod of app ``app`` (its own name by default) asking for ``cpu``."""
    return builders.pod(
        name, namespace=namespace, labels={"app": app or name}, requests={"cpu": cpu}, **spec
    )


def spread(
    key: str, max_skew: int, app: str, when: str = "DoNotSchedule", **extra: Any
) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": app}},
        **extra,
    }


def term(key: str, app: str, **extra: Any) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}, **extra}


def pods_of(cluster: MemoryCluster, app: str) -> list[Pod]:
    return cluster.list(Pod, labels={"app": app})


def scale(cluster: MemoryCluster, name: str, replicas: int) -> None:
    current = cluster.get(Deployment, name, NAMESPACE)
    assert current is not None
    scaled = mutable(current)
    scaled.spec.replicas = replicas
    cluster.update(scaled)


def placement(cluster: MemoryCluster, app: str) -> Counter[str | None]:
    """How many of the app's pods each node runs (None: pending)."""
    return Counter(p.spec.node_name for p in pods_of(cluster, app))


def per_zone(cluster: MemoryCluster, app: str) -> Counter[str | None]:
    """How many of the app's pods each zone runs (None: pending)."""
    zones = {n.name: n.metadata.labels.get(ZONE) for n in cluster.list(Node)}
    return Counter(zones.get(p.spec.node_name or "") for p in pods_of(cluster, app))


def pending_messages(cluster: MemoryCluster, app: str) -> set[str]:
    """kube-scheduler's FailedScheduling messages on the app's pending pods."""
    messages: set[str] = set()
    for p in pods_of(cluster, app):
        if p.spec.node_name:
            continue
        condition = p.condition("PodScheduled")
        assert condition is not None, f"{p.name} has no PodScheduled condition"
        assert (condition.status, condition.reason) == ("False", "Unschedulable")
        messages.add(condition.message or "")
    return messages


def unavailable(count: int, *reasons: str) -> str:
    """kube-scheduler's whole message for a pod no node takes."""
    return (
        f"0/{count} nodes are available: {', '.join(reasons)}. preemption: 0/{count} nodes are "
        f"available: {count} Preemption is not helpful for scheduling."
    )


def scheduled_message(pod: Pod) -> str | None:
    condition = pod.condition("PodScheduled")
    assert condition is not None
    assert condition.status == "False"
    assert condition.reason == "Unschedulable"
    return condition.message


def daemon_set(name: str, **spec: Any) -> DaemonSet:
    return DaemonSet.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": pod_template(name, "100m", **spec),
            },
        }
    )
