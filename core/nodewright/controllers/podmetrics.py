"""Pod metrics: ``karpenter_pods_state`` and ``karpenter_pods_startup_duration_seconds``.

As Karpenter's pod metrics controller: one ``pods_state`` series per pod, labelled with its
node's NodePool, zone, architecture, capacity type and instance type; the start-up duration
(creation to Running, on the injected clock) observed once per pod. The pass is skipped when
nothing in the cluster changed, so idle simulation passes cost nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from nodewright import metrics
from nodewright.api.core import Node, Pod
from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.clock import Clock
from nodewright.cluster import Cluster

PodLabels = tuple[str, str, str, str, str, str, str, str, str, str]


class PodMetrics:
    name = "metrics.pod"

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self._cluster = cluster
        self._clock = clock
        self._seen_version: int | None = None
        #: The labels of each pod's current ``pods_state`` series, by pod key.
        self._series: dict[str, PodLabels] = {}
        #: Pods whose start-up duration was observed (by uid or key).
        self._started: set[str] = set()
        # One operator per process serves the pods; series of an earlier one (a previous
        # simulation in the same process) would describe pods that no longer exist.
        metrics.pods_state.clear()

    def _read(self, kind: type[Any]) -> Iterable[Any]:
        peek = getattr(self._cluster, "peek", None)  # the embedded cluster: no copies
        return peek(kind) if peek is not None else self._cluster.list(kind)

    def reconcile(self) -> timedelta | None:
        version = self._cluster.resource_version()
        if version == self._seen_version:
            return None
        self._seen_version = version
        nodes = {node.name: node.metadata.labels for node in self._read(Node)}
        now = self._clock.now()
        current: dict[str, PodLabels] = {}
        for pod in self._read(Pod):
            labels = _pod_labels(pod, nodes)
            current[pod.key] = labels
            if self._series.get(pod.key) != labels:
                old = self._series.get(pod.key)
                if old is not None:
                    metrics.pods_state.remove(*old)
                metrics.pods_state.labels(*labels).set(1)
            identity = pod.metadata.uid or pod.key
            if (
                pod.status.phase == "Running"
                and identity not in self._started
                and pod.metadata.creation_timestamp is not None
            ):
                self._started.add(identity)
                started = pod.status.start_time or now
                running_at = max(started, pod.metadata.creation_timestamp)
                metrics.pods_startup_duration.observe(
                    (running_at - pod.metadata.creation_timestamp).total_seconds()
                )
        for key, old in self._series.items():
            if key not in current:
                metrics.pods_state.remove(*old)
        self._series = current
        return None


def _pod_labels(pod: Pod, nodes: dict[str, dict[str, str]]) -> PodLabels:
    node_name = pod.spec.node_name or ""
    node = nodes.get(node_name, {})
    owner = ""
    if pod.metadata.owner_references:
        ref = next((r for r in pod.metadata.owner_references if r.controller), None)
        ref = ref or pod.metadata.owner_references[0]
        owner = f"{ref.kind}/{ref.name}"
    return (
        pod.name,
        pod.namespace,
        owner,
        node_name,
        node.get(NODEPOOL_LABEL, ""),
        node.get(ZONE_LABEL, ""),
        node.get(ARCH_LABEL, ""),
        node.get(CAPACITY_TYPE_LABEL, ""),
        node.get(INSTANCE_TYPE_LABEL, ""),
        pod.status.phase or "",
    )
