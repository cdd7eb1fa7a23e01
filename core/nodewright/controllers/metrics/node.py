"""Node metrics: ``karpenter_nodes_allocatable``, ``..._total_pod_requests``,
``..._total_pod_limits``, ``..._total_daemon_requests``, ``..._total_daemon_limits``,
``..._system_overhead`` and ``..._current_lifetime_seconds``, as Karpenter's node metrics
controller exports them: one series per node and resource, labelled with the node's name,
phase, whether nodewright manages it, and each well-known label of the core and the providers
(``nodepool``, ``zone``, ``instance_type``, ``capacity_type``, ``arch`` ...).

Karpenter rebuilds every series from every node every five seconds. This follows a change feed
of pods, nodes and NodeClaims instead: each pod's requests and limits are added to its node's
sums when it is bound and taken off when it finishes, moves or goes, and a node's series are
set again only when the node, its NodeClaim or its pods changed. A pass costs what changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import cast

from nodewright import metrics
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.clock import Clock
from nodewright.cluster import Cluster
from nodewright.cluster.state import Key, is_terminal
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.pods import pod_limits, pod_requests
from nodewright.scheduling.resources import ResourceList, parse_resources

#: Usage sums of a node, by gauge.
GAUGES = ("total_pod_requests", "total_pod_limits", "total_daemon_requests", "total_daemon_limits")


@dataclass(frozen=True, slots=True)
class _PodUsage:
    """What one pod adds to its node's sums (kept to take off exactly that later)."""

    node: str
    requests: ResourceList
    limits: ResourceList
    daemon: bool


@dataclass(slots=True)
class _NodeUsage:
    sums: dict[str, ResourceList] = field(default_factory=lambda: {g: {} for g in GAUGES})

    def add(self, usage: _PodUsage, sign: int) -> None:
        parts = [("total_pod_requests", usage.requests), ("total_pod_limits", usage.limits)]
        if usage.daemon:
            parts += [
                ("total_daemon_requests", usage.requests),
                ("total_daemon_limits", usage.limits),
            ]
        for gauge, values in parts:
            total = self.sums[gauge]
            for resource, value in values.items():
                left = total.get(resource, 0) + sign * value
                if left:
                    total[resource] = left
                else:
                    total.pop(resource, None)


def label_name(key: str) -> str | None:
    """``node.kubernetes.io/instance-type`` -> ``instance_type``, as Karpenter names them;
    None for a key without exactly one ``/`` (Karpenter leaves those out)."""
    parts = key.split("/")
    return parts[1].lower().replace("-", "_") if len(parts) == 2 else None


class NodeMetrics:
    name = "metrics.node"

    def __init__(self, cluster: Cluster, host: PluginHost, clock: Clock) -> None:
        self._cluster = cluster
        self._changes = cluster.state.feed(Pod, Node, NodeClaim)
        #: label name -> the well-known label keys it is read from (several providers may
        #: name the same thing, e.g. ``instance_cpu``), in key order.
        self._labels: dict[str, list[str]] = {}
        for key in sorted(host.well_known_labels()):
            name = label_name(key)
            if name is not None:
                self._labels.setdefault(name, []).append(key)
        self._pods: dict[Key, _PodUsage] = {}
        self._usage: dict[str, _NodeUsage] = {}
        #: Nodes whose series are set (to remove them when the node goes).
        self._published: set[str] = set()
        metrics.node_series.reset([*self._labels, "node_name", "phase", "managed"], clock)
        self._resync = True

    def resync(self) -> None:
        """Take every node and pod in again on the next pass."""
        self._resync = True

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        dirty: set[str] = set()
        if self._resync:
            self._resync = False
            self._changes.drain()
            dirty |= self._published | set(self._usage)
            self._pods.clear()
            self._usage.clear()
            for node_name, pods in state.nodes_with_pods().items():
                for key, pod in pods.items():
                    self._take(key, pod)
                dirty.add(node_name)
            dirty |= {key[1] for key in state.objects(Node)}
        else:
            for change in self._changes.drain():
                if change.kind is Pod:
                    dirty |= self._take(change.key, cast("Pod | None", change.new))
                elif change.kind is Node:
                    dirty.add(change.key[1])
                else:  # a NodeClaim: whether its node is managed
                    for claim in (change.old, change.new):
                        node = state.node_for(cast(NodeClaim, claim)) if claim else None
                        if node is not None:
                            dirty.add(node.name)
        for node_name in sorted(dirty):
            self._publish(node_name)
        return None

    def _take(self, key: Key, pod: Pod | None) -> set[str]:
        """Move a pod's usage to where it is now; the nodes whose sums changed."""
        touched = set()
        old = self._pods.pop(key, None)
        if old is not None:
            self._node(old.node).add(old, -1)
            touched.add(old.node)
        if pod is not None and pod.spec.node_name and not is_terminal(pod):
            usage = _PodUsage(
                pod.spec.node_name,
                pod_requests(pod),
                pod_limits(pod),
                any(r.controller and r.kind == "DaemonSet" for r in pod.metadata.owner_references),
            )
            self._pods[key] = usage
            self._node(usage.node).add(usage, 1)
            touched.add(usage.node)
        return touched

    def _node(self, name: str) -> _NodeUsage:
        usage = self._usage.get(name)
        if usage is None:
            usage = self._usage[name] = _NodeUsage()
        return usage

    def _publish(self, node_name: str) -> None:
        state = self._cluster.state
        node = state.get(Node, ("", node_name))
        if node is None:
            if node_name in self._published:
                metrics.node_series.remove(node_name)
                self._published.discard(node_name)
            usage = self._usage.get(node_name)
            if usage is not None and not any(usage.sums.values()):
                del self._usage[node_name]
            return
        labels = node.metadata.labels
        values = [
            next((labels[k] for k in keys if labels.get(k)), "") for keys in self._labels.values()
        ]
        managed = "true" if state.claim_for(node) is not None else "false"
        values += [node.name, node.status.phase or "", managed]
        allocatable = parse_resources(node.status.allocatable)
        capacity = parse_resources(node.status.capacity)
        overhead = {r: v - allocatable.get(r, 0) for r, v in capacity.items()}
        sums = self._usage[node_name].sums if node_name in self._usage else {}
        gauges: dict[str, ResourceList] = {
            "allocatable": allocatable,
            "system_overhead": overhead,
            **{gauge: dict(sums.get(gauge, {})) for gauge in GAUGES},
        }
        metrics.node_series.set(
            node_name,
            metrics.NodeSample(
                tuple(values),
                {
                    gauge: {
                        metrics.resource_type(r): metrics.resource_value(r, milli)
                        for r, milli in resources.items()
                    }
                    for gauge, resources in gauges.items()
                },
                node.metadata.creation_timestamp,
            ),
        )
        self._published.add(node_name)
