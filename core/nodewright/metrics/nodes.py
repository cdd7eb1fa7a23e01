"""Karpenter's node metrics: ``karpenter_nodes_allocatable``, ``..._total_pod_requests`` and
the rest, ``karpenter_nodes_current_lifetime_seconds``, ``karpenter_cluster_utilization_percent``
and ``karpenter_cluster_state_node_count``.

Their label names depend on the providers loaded (every well-known label of the core and of
the providers becomes one, as in Karpenter), so they are not prometheus_client gauges fixed at
import: one collector holds each node's series, which the node metrics controller sets node by
node as nodes and their pods change, and exports them when scraped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector

from nodewright.clock import Clock

#: The gauges with a ``resource_type`` label, by name after ``karpenter_nodes_``.
RESOURCE_GAUGES: dict[str, str] = {
    "allocatable": "Node allocatable are the resources allocatable by nodes.",
    "total_pod_requests": "Node total pod requests are the resources requested by pods bound "
    "to nodes, including the DaemonSet pods.",
    "total_pod_limits": "Node total pod limits are the resources specified by pod limits, "
    "including the DaemonSet pods.",
    "total_daemon_requests": "Node total daemon requests are the resource requested by "
    "DaemonSet pods bound to nodes.",
    "total_daemon_limits": "Node total daemon limits are the resources specified by DaemonSet "
    "pod limits.",
    "system_overhead": "Node system daemon overhead are the resources reserved for system "
    "overhead, the difference between the node's capacity and allocatable values.",
}


@dataclass(frozen=True)
class NodeSample:
    """One node's series: its label values, and per gauge the value of each resource."""

    labels: tuple[str, ...]
    values: Mapping[str, Mapping[str, float]]
    created: datetime | None


class NodeSeries(Collector):
    """Every node's series, set per node, exported on scrape."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._label_names: tuple[str, ...] = ()
        self._clock: Clock | None = None
        self._nodes: dict[str, NodeSample] = {}
        REGISTRY.register(self)

    def reset(self, label_names: Sequence[str], clock: Clock) -> None:
        """Start over with these label names (a new operator: its providers may differ)."""
        with self._lock:
            self._label_names = tuple(label_names)
            self._clock = clock
            self._nodes.clear()

    def set(self, node: str, sample: NodeSample) -> None:
        with self._lock:
            self._nodes[node] = sample

    def remove(self, node: str) -> None:
        with self._lock:
            self._nodes.pop(node, None)

    def samples(self) -> dict[str, NodeSample]:
        """Each node's series as set now, by node name."""
        with self._lock:
            return dict(self._nodes)

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            names, clock, nodes = self._label_names, self._clock, list(self._nodes.values())
        with_resource = [*names, "resource_type"]
        totals: dict[str, dict[str, float]] = {"allocatable": {}, "total_pod_requests": {}}
        for gauge, documentation in RESOURCE_GAUGES.items():
            family = GaugeMetricFamily(
                f"karpenter_nodes_{gauge}", documentation, labels=with_resource
            )
            for sample in nodes:
                for resource, value in sorted(sample.values.get(gauge, {}).items()):
                    family.add_metric([*sample.labels, resource], value)
                    if gauge in totals:
                        totals[gauge][resource] = totals[gauge].get(resource, 0.0) + value
            yield family
        lifetime = GaugeMetricFamily(
            "karpenter_nodes_current_lifetime_seconds", "Node age in seconds", labels=names
        )
        if clock is not None:
            now = clock.now()
            for sample in nodes:
                if sample.created is not None:
                    lifetime.add_metric(sample.labels, (now - sample.created).total_seconds())
        yield lifetime
        utilization = GaugeMetricFamily(
            "karpenter_cluster_utilization_percent",
            "Utilization of allocatable resources by pod requests",
            labels=["resource_type"],
        )
        for resource, allocatable in sorted(totals["allocatable"].items()):
            if allocatable:
                used = totals["total_pod_requests"].get(resource, 0.0)
                utilization.add_metric([resource], 100 * used / allocatable)
        yield utilization
        count = GaugeMetricFamily(
            "karpenter_cluster_state_node_count", "Current count of nodes in cluster state"
        )
        count.add_metric([], float(len(nodes)))
        yield count
