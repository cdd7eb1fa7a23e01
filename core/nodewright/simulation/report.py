"""What a simulation shows: nodes, where pods landed, what is still pending and why, cost,
the nodes removed during the run (when and why), and the events. The JSON form is documented
in ``docs/simulate.md``."""

from __future__ import annotations

from collections import defaultdict
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nodewright.api.core import Event, Node, Pod
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.clock import SIMULATION_EPOCH
from nodewright.controllers.nodeclaim.history import NodeRecord
from nodewright.controllers.state.cluster import is_terminal, owner_kind
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    PluginError,
    ProviderError,
    UnknownNodeClassError,
)
from nodewright.simulation.runner import Simulation
from nodewright.simulation.timeline import TimelinePoint


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
    launched_at: datetime | None = None
    #: Set when the node was being removed as the run ended.
    removed_at: datetime | None = None
    disruption_reason: str | None = None
    #: The node was in the cluster snapshot the run started from (it was not launched then).
    existing: bool = False
    #: Its price is the provider's estimate, not a quote (known for a what-if's nodes).
    price_modelled: bool = False


@dataclass
class RemovedNodeRow:
    """A node nodewright launched that was gone (or going) by the end of the run."""

    name: str
    node_claim: str
    node_pool: str | None
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    price_per_hour: float | None
    launched_at: datetime | None
    removed_at: datetime | None
    #: ``Empty``, ``Drifted``, ``Underutilized``, ``Expired``, or None (deleted otherwise).
    disruption_reason: str | None
    #: Karpenter's event wording of the action (``Consolidation/Delete``).
    disruption: str | None
    #: The node was in the cluster snapshot the run started from (it was not launched then).
    existing: bool = False


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
    removed_nodes: list[RemovedNodeRow] = field(default_factory=list)
    #: What the report could not learn (a provider failing while it was built), one line each.
    notes: list[str] = field(default_factory=list)
    #: The run step by step (points only where something changed).
    timeline: list[TimelinePoint] = field(default_factory=list)
    #: What the nodes cost over the whole run: the hourly price integrated over simulated time.
    dollar_hours: float = 0.0
    #: Each NodePool's status at the end: its nodes, resources and conditions.
    node_pools: list[dict[str, Any]] = field(default_factory=list)
    #: The units of work the run did, as its limits count them (:class:`~.limits.Work`).
    work: int = 0

    @property
    def total_price_per_hour(self) -> float:
        return round(sum(n.price_per_hour or 0.0 for n in self.nodes), 6)

    @property
    def total_price_modelled(self) -> bool:
        """Whether the total rests on a modelled price."""
        return any(n.price_modelled for n in self.nodes if n.price_per_hour is not None)

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
                    "launchedAt": _stamp(n.launched_at),
                    "removedAt": _stamp(n.removed_at),
                    "disruptionReason": n.disruption_reason,
                    "existing": n.existing,
                    "priceModelled": n.price_modelled,
                }
                for n in self.nodes
            ],
            "removedNodes": [
                {
                    "name": r.name,
                    "nodeClaim": r.node_claim,
                    "nodePool": r.node_pool,
                    "instanceType": r.instance_type,
                    "zone": r.zone,
                    "capacityType": r.capacity_type,
                    "pricePerHour": r.price_per_hour,
                    "launchedAt": _stamp(r.launched_at),
                    "removedAt": _stamp(r.removed_at),
                    "disruptionReason": r.disruption_reason,
                    "disruption": r.disruption,
                    "existing": r.existing,
                }
                for r in self.removed_nodes
            ],
            "pods": [
                {"namespace": p.namespace, "name": p.name, "node": p.node, "reason": p.reason}
                for p in self.pods
            ],
            "totalPricePerHour": self.total_price_per_hour,
            "simulatedSeconds": self.simulated_seconds,
            "work": self.work,
            "events": self.events,
            "notes": self.notes,
            "timeline": [
                {
                    "at": _stamp(point.at),
                    "seconds": (point.at - SIMULATION_EPOCH).total_seconds(),
                    "nodes": [
                        {
                            "nodePool": pool,
                            "instanceType": instance_type,
                            "capacityType": capacity_type,
                            "count": count,
                        }
                        for (pool, instance_type, capacity_type), count in point.nodes
                    ],
                    "podsBound": point.pods_bound,
                    "podsPending": point.pods_pending,
                    "pricePerHour": point.price_per_hour,
                    "dollarHours": round(point.dollar_hours, 6),
                }
                for point in self.timeline
            ],
            "dollarHours": round(self.dollar_hours, 6),
            "nodePools": self.node_pools,
        }


def _stamp(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def build_report(simulation: Simulation) -> Report:
    cluster = simulation.cluster
    claims = {c.status.provider_id: c for c in cluster.list(NodeClaim) if c.status.provider_id}
    history = simulation.operator.disruption.history
    history.observe(cluster.list(NodeClaim), simulation.clock.now(), lambda claim: None)
    record_by_node = {r.node: r for r in history.records.values() if r.node}
    notes = _provider_notes(simulation)
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
            price_per_hour=_price(
                simulation, node, claims.get(node.spec.provider_id or ""), record, notes
            ),
            labels=dict(sorted(node.metadata.labels.items())),
            pods=sorted(by_node.get(node.name, [])),
            launched_at=record.launched_at if record else None,
            removed_at=record.removed_at if record else None,
            disruption_reason=record.disruption_reason if record else None,
        )
        for node in cluster.list(Node)
        for record in [record_by_node.get(node.name)]
    ]
    present = {node.name for node in nodes}
    removed = [
        RemovedNodeRow(
            name=r.node or r.node_claim,
            node_claim=r.node_claim,
            node_pool=r.node_pool,
            instance_type=r.instance_type,
            zone=r.zone,
            capacity_type=r.capacity_type,
            price_per_hour=r.price_per_hour,
            launched_at=r.launched_at,
            removed_at=r.removed_at,
            disruption_reason=r.disruption_reason,
            disruption=r.disruption,
        )
        for r in sorted(
            history.records.values(),
            key=lambda r: (r.removed_at or simulation.clock.now(), r.node_claim),
        )
        if r.removed_at is not None and (r.node or r.node_claim) not in present
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
            "time": _stamp(e.first_timestamp) or "",
        }
        for e in sorted(
            cluster.list(Event),
            key=lambda e: (e.first_timestamp or simulation.clock.now(), e.name),
        )
    ]
    elapsed = (simulation.clock.now() - SIMULATION_EPOCH).total_seconds()
    timeline = simulation.timeline
    timeline.observe(simulation.clock.now())
    return Report(
        nodes,
        pod_rows,
        events,
        elapsed,
        removed,
        notes,
        list(timeline.points),
        timeline.dollar_hours,
        [_node_pool(pool) for pool in cluster.list(NodePool)],
        simulation.work().units,
    )


def _node_pool(pool: NodePool) -> dict[str, Any]:
    """A NodePool's status, as ``kubectl get nodepool -o yaml`` shows it."""
    return {
        "name": pool.name,
        "nodes": pool.status.nodes,
        "resources": dict(pool.status.resources),
        "conditions": [
            {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
            for c in sorted(pool.status.conditions, key=lambda c: c.type)
        ],
    }


def _provider_notes(simulation: Simulation) -> list[str]:
    """What each configured provider says a reader must know about its figures."""
    notes: list[str] = []
    for entry in simulation.host.providers:
        if entry.info is None or entry.error is not None:
            continue
        try:
            lines = simulation.host.report_notes(entry.name)
        except (ProviderError, PluginError) as error:
            lines = [f"could not say what its figures rest on: {error}"]
        notes.extend(f"provider {entry.name}: {line}" for line in lines)
    return notes


def _price(
    simulation: Simulation,
    node: Node,
    claim: NodeClaim | None,
    record: NodeRecord | None,
    notes: list[str],
) -> float | None:
    """The instance's price as its provider tells it now; when the provider fails, the price
    known at launch, with a note saying so."""
    if claim is None or not claim.status.provider_id:
        return None
    known = record.price_per_hour if record is not None else None
    if known is None:
        with suppress(ProviderError):
            known = simulation.operator.disruption.conditions.price(claim)
    try:
        provider = simulation.operator.catalog.provider_name(claim.spec.node_class_ref)
        return simulation.host.get(provider, claim.status.provider_id).price
    except InstanceNotFoundError:
        return None
    except (ProviderError, PluginError, UnknownNodeClassError) as error:
        shown = "unknown" if known is None else f"${known:.4f}/h, the last known"
        notes.append(f"node {node.name}: price {shown}; the provider failed: {error}")
        return known


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
