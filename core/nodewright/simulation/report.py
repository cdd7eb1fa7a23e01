"""What a simulation shows: nodes, where pods landed, what is still pending and why, cost,
and the events. The JSON form is documented in ``docs/simulate.md``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.core import Event, Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.clock import SIMULATION_EPOCH
from nodewright.controllers.state import is_terminal, owner_kind
from nodewright.plugin.errors import InstanceNotFoundError, PluginError, UnknownNodeClassError
from nodewright.simulation.runner import Simulation


@dataclass
class NodeRow:
    name: str
    node_pool: str | None
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    price_per_hour: float | None
    labels: dict[str, str]
    pods: list[str] = field(default_factory=list)


@dataclass
class PodRow:
    namespace: str
    name: str
    node: str | None
    reason: str | None


@dataclass
class Report:
    nodes: list[NodeRow]
    pods: list[PodRow]
    events: list[dict[str, str]]
    simulated_seconds: float

    @property
    def total_price_per_hour(self) -> float:
        return round(sum(n.price_per_hour or 0.0 for n in self.nodes), 6)

    @property
    def pending(self) -> list[PodRow]:
        return [p for p in self.pods if p.node is None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [
                {
                    "name": n.name,
                    "nodePool": n.node_pool,
                    "instanceType": n.instance_type,
                    "zone": n.zone,
                    "capacityType": n.capacity_type,
                    "pricePerHour": n.price_per_hour,
                    "labels": n.labels,
                    "pods": n.pods,
                }
                for n in self.nodes
            ],
            "pods": [
                {"namespace": p.namespace, "name": p.name, "node": p.node, "reason": p.reason}
                for p in self.pods
            ],
            "totalPricePerHour": self.total_price_per_hour,
            "simulatedSeconds": self.simulated_seconds,
            "events": self.events,
        }


def build_report(simulation: Simulation) -> Report:
    cluster = simulation.cluster
    claims = {c.status.provider_id: c for c in cluster.list(NodeClaim) if c.status.provider_id}
    pods = [p for p in cluster.list(Pod) if not is_terminal(p)]
    by_node: dict[str, list[str]] = defaultdict(list)
    for pod in pods:
        if pod.spec.node_name:
            by_node[pod.spec.node_name].append(pod.key)
    nodes = [
        NodeRow(
            name=node.name,
            node_pool=node.metadata.labels.get(NODEPOOL_LABEL),
            instance_type=node.metadata.labels.get(INSTANCE_TYPE_LABEL),
            zone=node.metadata.labels.get(ZONE_LABEL),
            capacity_type=node.metadata.labels.get(CAPACITY_TYPE_LABEL),
            price_per_hour=_price(simulation, node, claims.get(node.spec.provider_id or "")),
            labels=dict(sorted(node.metadata.labels.items())),
            pods=sorted(by_node.get(node.name, [])),
        )
        for node in cluster.list(Node)
    ]
    reasons = _failed_scheduling_messages(cluster.list(Event))
    pod_rows = [
        PodRow(
            pod.namespace,
            pod.name,
            pod.spec.node_name or None,
            None if pod.spec.node_name else _pending_reason(reasons, pod),
        )
        for pod in pods
        if owner_kind(pod) != "DaemonSet" or pod.spec.node_name
    ]
    events = [
        {
            "type": e.type,
            "reason": e.reason,
            "object": f"{(e.involved_object.kind or '').lower()}/{e.involved_object.name}",
            "message": e.message,
            "count": str(e.count),
        }
        for e in sorted(
            cluster.list(Event),
            key=lambda e: (e.first_timestamp or simulation.clock.now(), e.name),
        )
    ]
    elapsed = (simulation.clock.now() - SIMULATION_EPOCH).total_seconds()
    return Report(nodes, pod_rows, events, elapsed)


def _price(simulation: Simulation, node: Node, claim: NodeClaim | None) -> float | None:
    if claim is None or not claim.status.provider_id:
        return None
    try:
        provider = simulation.operator.catalog.provider_name(claim.spec.node_class_ref)
        return simulation.host.get(provider, claim.status.provider_id).price
    except (PluginError, InstanceNotFoundError, UnknownNodeClassError):
        return None


def _failed_scheduling_messages(events: list[Event]) -> dict[tuple[str, str], str]:
    """The latest FailedScheduling message nodewright gave each pod, by (namespace, name)."""
    latest: dict[tuple[str, str], Event] = {}
    for event in events:
        if event.reason != "FailedScheduling" or event.involved_object.kind != "Pod":
            continue
        key = (event.involved_object.namespace or "", event.involved_object.name or "")
        stamp = event.last_timestamp or event.first_timestamp
        best = latest.get(key)
        best_stamp = (best.last_timestamp or best.first_timestamp) if best else None
        if best is None or (stamp and best_stamp and stamp > best_stamp):
            latest[key] = event
    return {key: event.message for key, event in latest.items()}


def _pending_reason(reasons: dict[tuple[str, str], str], pod: Pod) -> str | None:
    """nodewright's latest FailedScheduling message for the pod, else kube-scheduler's."""
    if (pod.namespace, pod.name) in reasons:
        return reasons[(pod.namespace, pod.name)]
    condition = pod.condition("PodScheduled")
    return condition.message if condition is not None else None
