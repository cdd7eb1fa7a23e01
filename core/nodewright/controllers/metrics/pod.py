"""Pod metrics: ``karpenter_pods_state`` and ``karpenter_pods_startup_duration_seconds``.

As Karpenter's pod metrics controller: one ``pods_state`` series per pod, labelled with its
node's NodePool, zone, architecture, capacity type and instance type; the start-up duration
(creation to Running, on the injected clock) observed once per pod. It follows a change feed
of pods and nodes, so a pass costs the pods that changed (and the pods of nodes whose labels
changed), not the cluster's size.
"""

from __future__ import annotations

from datetime import timedelta

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
from nodewright.cluster.state import Key

PodLabels = tuple[str, str, str, str, str, str, str, str, str, str]


class PodMetrics:
    name = "metrics.pod"

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self._cluster = cluster
        self._clock = clock
        self._changes = cluster.state.feed(Pod, Node)
        #: The labels of each pod's current ``pods_state`` series, by pod key.
        self._series: dict[Key, PodLabels] = {}
        #: node name -> the pods whose series name it (terminal pods included).
        self._on_node: dict[str, set[Key]] = {}
        #: pod key -> the identity (uid) of the pod there whose start-up was observed.
        self._started: dict[Key, str] = {}
        # One operator per process serves the pods; series of an earlier one (a previous
        # simulation in the same process) would describe pods that no longer exist.
        metrics.pods_state.clear()
        # Pods that existed before this controller: take them all in on the first pass.
        self._resync = True

    def resync(self) -> None:
        """Take every pod in again on the next pass."""
        self._resync = True

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        if self._resync:
            self._resync = False
            self._changes.drain()
            for key in [k for k in self._series if state.get(Pod, k) is None]:
                self._observe(key, None)
            for pod in state.sorted(Pod):
                self._observe(_key(pod), pod)
            return None
        changes = self._changes.drain()
        if not changes:
            return None
        pods: dict[Key, Pod | None] = {}
        for change in changes:
            if change.kind is Pod:
                pods[change.key] = change.new  # type: ignore[assignment]
            else:  # a Node: its labels are in its pods' series
                for key in self._on_node.get(change.key[1], ()):
                    pods.setdefault(key, state.get(Pod, key))
        for key in sorted(pods):
            self._observe(key, pods[key])
        return None

    def _observe(self, key: Key, pod: Pod | None) -> None:
        old = self._series.get(key)
        if pod is None:
            if old is not None:
                metrics.pods_state.remove(key)
                del self._series[key]
                self._unplace(key, old)
            self._started.pop(key, None)
            return
        node = self._cluster.state.get(Node, ("", pod.spec.node_name or ""))
        labels = _pod_labels(pod, node.metadata.labels if node is not None else {})
        if old != labels:
            if old is not None:
                self._unplace(key, old)
            metrics.pods_state.set(key, labels)
            self._series[key] = labels
            self._on_node.setdefault(labels[3], set()).add(key)
        identity = pod.metadata.uid or f"{key[0]}/{key[1]}"
        if (
            pod.status.phase == "Running"
            and self._started.get(key) != identity
            and pod.metadata.creation_timestamp is not None
        ):
            self._started[key] = identity
            started = pod.status.start_time or self._clock.now()
            running_at = max(started, pod.metadata.creation_timestamp)
            metrics.pods_startup_duration.observe(
                (running_at - pod.metadata.creation_timestamp).total_seconds()
            )

    def _unplace(self, key: Key, labels: PodLabels) -> None:
        keys = self._on_node.get(labels[3])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._on_node[labels[3]]


def _key(pod: Pod) -> Key:
    return (pod.metadata.namespace or "", pod.metadata.name)


def _pod_labels(pod: Pod, node: dict[str, str]) -> PodLabels:
    owner = ""
    if pod.metadata.owner_references:
        ref = next((r for r in pod.metadata.owner_references if r.controller), None)
        ref = ref or pod.metadata.owner_references[0]
        owner = f"{ref.kind}/{ref.name}"
    return (
        pod.name,
        pod.namespace,
        owner,
        pod.spec.node_name or "",
        node.get(NODEPOOL_LABEL, ""),
        node.get(ZONE_LABEL, ""),
        node.get(ARCH_LABEL, ""),
        node.get(CAPACITY_TYPE_LABEL, ""),
        node.get(INSTANCE_TYPE_LABEL, ""),
        pod.status.phase or "",
    )
