"""Karpenter's node metrics: ``karpenter_nodes_allocatable``, ``..._total_pod_requests`` and
the rest, ``karpenter_nodes_current_lifetime_seconds``, ``karpenter_cluster_utilization_percent``
and ``karpenter_cluster_state_node_count``.

Their label names depend on the providers loaded (every well-known label of the core and of
the providers becomes one, as in Karpenter), so they are not prometheus_client gauges fixed at
import: one collector holds each node's series, which the node metrics controller sets node by
node as nodes and their pods change, and exports them when scraped.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from nodewright.clock import Clock
from nodewright.metrics.text import PREFORMATTED, escape, header, label_text, sample_line

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


LIFETIME_HELP = "Node age in seconds"
UTILIZATION = "karpenter_cluster_utilization_percent"
UTILIZATION_HELP = "Utilization of allocatable resources by pod requests"
NODE_COUNT = "karpenter_cluster_state_node_count"
NODE_COUNT_HELP = "Current count of nodes in cluster state"


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
        #: node -> its sample, its label text and its resource lines (formatted when set)
        self._nodes: dict[str, _Formatted] = {}
        PREFORMATTED.register(self)

    def reset(self, label_names: Sequence[str], clock: Clock) -> None:
        """Start over with these label names (a new operator: its providers may differ)."""
        with self._lock:
            self._label_names = tuple(label_names)
            self._clock = clock
            self._nodes.clear()

    def set(self, node: str, sample: NodeSample) -> None:
        with self._lock:
            names = self._label_names
            known = self._nodes.get(node)
        if known is not None and known.sample.labels == sample.labels:
            labels = known.labels  # a node's labels change far less often than its values
        else:
            labels = _NodeLabels.of(zip(names, sample.labels, strict=True))
        lines = {
            gauge: "".join(
                sample_line(f"karpenter_nodes_{gauge}", labels.with_resource(resource), value)
                for resource, value in sorted(sample.values.get(gauge, {}).items())
            )
            for gauge in RESOURCE_GAUGES
        }
        with self._lock:
            self._nodes[node] = _Formatted(sample, labels, lines)

    def remove(self, node: str) -> None:
        with self._lock:
            self._nodes.pop(node, None)

    def text(self) -> str:
        """The families as the Prometheus text format writes them (what :meth:`collect`
        yields), from lines formatted when each node was set."""
        with self._lock:
            clock, nodes = self._clock, list(self._nodes.values())
        out = []
        for gauge, documentation in RESOURCE_GAUGES.items():
            out.append(header(f"karpenter_nodes_{gauge}", documentation))
            out.extend(node.lines[gauge] for node in nodes)
        name = "karpenter_nodes_current_lifetime_seconds"
        out.append(header(name, LIFETIME_HELP))
        if clock is not None:
            now = clock.now()
            for node in nodes:
                if node.sample.created is not None:
                    seconds = (now - node.sample.created).total_seconds()
                    out.append(sample_line(name, node.labels.text, seconds))
        out.append(header(UTILIZATION, UTILIZATION_HELP))
        for resource, percent in _utilization([node.sample for node in nodes]):
            out.append(sample_line(UTILIZATION, label_text([("resource_type", resource)]), percent))
        out.append(header(NODE_COUNT, NODE_COUNT_HELP))
        out.append(sample_line(NODE_COUNT, "", float(len(nodes))))
        return "".join(out)

    def samples(self) -> dict[str, NodeSample]:
        """Each node's series as set now, by node name."""
        with self._lock:
            return {name: node.sample for name, node in self._nodes.items()}

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            names, clock = self._label_names, self._clock
            nodes = [node.sample for node in self._nodes.values()]
        with_resource = [*names, "resource_type"]
        for gauge, documentation in RESOURCE_GAUGES.items():
            family = GaugeMetricFamily(
                f"karpenter_nodes_{gauge}", documentation, labels=with_resource
            )
            for sample in nodes:
                for resource, value in sorted(sample.values.get(gauge, {}).items()):
                    family.add_metric([*sample.labels, resource], value)
            yield family
        lifetime = GaugeMetricFamily(
            "karpenter_nodes_current_lifetime_seconds", LIFETIME_HELP, labels=names
        )
        if clock is not None:
            now = clock.now()
            for sample in nodes:
                if sample.created is not None:
                    lifetime.add_metric(sample.labels, (now - sample.created).total_seconds())
        yield lifetime
        utilization = GaugeMetricFamily(UTILIZATION, UTILIZATION_HELP, labels=["resource_type"])
        for resource, percent in _utilization(nodes):
            utilization.add_metric([resource], percent)
        yield utilization
        count = GaugeMetricFamily(NODE_COUNT, NODE_COUNT_HELP)
        count.add_metric([], float(len(nodes)))
        yield count


@dataclass(frozen=True)
class _NodeLabels:
    """A node's label text, alone and with a ``resource_type`` label in its sorted place."""

    text: str
    before: str
    after: str

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> _NodeLabels:
        ordered = sorted(pairs)
        cut = bisect.bisect_left([name for name, _ in ordered], "resource_type")
        head, tail = label_text(ordered[:cut])[1:-1], label_text(ordered[cut:])[1:-1]
        return cls(
            text=label_text(ordered),
            before=f"{{{head}," if head else "{",
            after=f",{tail}}}" if tail else "}",
        )

    def with_resource(self, resource: str) -> str:
        return f'{self.before}resource_type="{escape(resource)}"{self.after}'


@dataclass(frozen=True)
class _Formatted:
    """A node's sample with its text: the label text and, per gauge, its resource lines."""

    sample: NodeSample
    labels: _NodeLabels
    lines: Mapping[str, str]


def _utilization(nodes: Sequence[NodeSample]) -> list[tuple[str, float]]:
    """Per resource, the percentage of allocatable that pod requests take, over all nodes."""
    allocatable: dict[str, float] = {}
    requested: dict[str, float] = {}
    for sample in nodes:
        for resource, value in sample.values.get("allocatable", {}).items():
            allocatable[resource] = allocatable.get(resource, 0.0) + value
        for resource, value in sample.values.get("total_pod_requests", {}).items():
            requested[resource] = requested.get(resource, 0.0) + value
    return [
        (resource, 100 * requested.get(resource, 0.0) / total)
        for resource, total in sorted(allocatable.items())
        if total
    ]
