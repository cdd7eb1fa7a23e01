"""The what-if of a cluster snapshot: what its nodes cost now, what nodewright would make of
them, and what that would cost.

Every node, existing or launched by the run, managed or not, is priced the same way: its
instance type, zone and capacity type labels looked up in its provider's catalog (through the
NodeClass of its NodeClaim, or any NodeClass of the snapshot for an unmanaged node). A node
the catalog does not know has no price; it is listed, never counted as free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodewright.api.core import Node
from nodewright.api.karpenter import NodeClass
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.controllers.catalog import NodeClassNotFoundError
from nodewright.plugin.errors import (
    PluginError,
    ProviderError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.simulation.report import PodRow, Report
from nodewright.simulation.runner import Simulation

#: Capacity-type labels of node groups Karpenter did not launch, and what their values mean;
#: a node with none of these (nor ``karpenter.sh/capacity-type``) is priced on demand.
CAPACITY_TYPE_LABELS: tuple[tuple[str, dict[str, str]], ...] = (
    ("eks.amazonaws.com/capacityType", {"ON_DEMAND": "on-demand", "SPOT": "spot"}),
    ("kubernetes.azure.com/scalesetpriority", {"regular": "on-demand", "spot": "spot"}),
)


def capacity_type_of(labels: dict[str, str]) -> str:
    """The node's capacity type: Karpenter's label, a managed node group's, or on-demand."""
    if labels.get(CAPACITY_TYPE_LABEL):
        return labels[CAPACITY_TYPE_LABEL]
    for key, meaning in CAPACITY_TYPE_LABELS:
        if labels.get(key) in meaning:
            return meaning[labels[key]]
    return "on-demand"


@dataclass
class PricedNode:
    name: str
    node_pool: str | None
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    #: None: the provider's catalog has no such offering (or no provider serves the node).
    price_per_hour: float | None
    #: Whether nodewright manages it (a NodeClaim of a NodePool); unmanaged nodes stay.
    managed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodePool": self.node_pool,
            "instanceType": self.instance_type,
            "zone": self.zone,
            "capacityType": self.capacity_type,
            "pricePerHour": self.price_per_hour,
            "managed": self.managed,
        }


@dataclass
class NodeChange:
    """An existing node the run removed: ``removed``, or ``replaced`` by a new node."""

    node: PricedNode
    action: str
    #: ``Empty``, ``Underutilized``, ``Drifted``, ``Expired``; None when removed otherwise.
    reason: str | None
    #: Karpenter's wording of the decision (``Consolidation/Replace``), when disrupted.
    disruption: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.node.to_dict(),
            "action": self.action,
            "reason": self.reason,
            "disruption": self.disruption,
        }


@dataclass
class WhatIf:
    source: str
    current: list[PricedNode]
    projected: list[PricedNode] = field(default_factory=list)
    changes: list[NodeChange] = field(default_factory=list)
    #: Nodes the run launched and still has at the end.
    added: list[PricedNode] = field(default_factory=list)
    unplaced: list[PodRow] = field(default_factory=list)

    @property
    def current_price_per_hour(self) -> float:
        return _total(self.current)

    @property
    def projected_price_per_hour(self) -> float:
        return _total(self.projected)

    @property
    def unpriced(self) -> list[str]:
        """Nodes, existing or projected, whose price is unknown (not in the totals)."""
        names = [n.name for n in [*self.current, *self.projected] if n.price_per_hour is None]
        return list(dict.fromkeys(names))

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "currentPricePerHour": self.current_price_per_hour,
            "projectedPricePerHour": self.projected_price_per_hour,
            "savingsPerHour": round(self.current_price_per_hour - self.projected_price_per_hour, 6),
            "currentNodes": [n.to_dict() for n in self.current],
            "projectedNodes": [n.to_dict() for n in self.projected],
            "changes": [c.to_dict() for c in self.changes],
            "addedNodes": [n.to_dict() for n in self.added],
            "unplacedPods": [
                {"namespace": p.namespace, "name": p.name, "reason": p.reason}
                for p in self.unplaced
            ],
            "unpricedNodes": self.unpriced,
        }


def _total(nodes: list[PricedNode]) -> float:
    return round(sum(n.price_per_hour or 0.0 for n in nodes), 6)


def price_nodes(simulation: Simulation) -> list[PricedNode]:
    """Every Node in the cluster now, priced from its provider's catalog."""
    node_classes = _node_classes(simulation)
    return [
        _priced(simulation, node, node_classes)
        for node in sorted(simulation.cluster.list(Node), key=lambda n: n.name)
    ]


def _node_classes(simulation: Simulation) -> list[NodeClass]:
    return [
        node_class
        for kind in simulation.host.node_class_kinds()
        for node_class in simulation.cluster.list(kind.model)
    ]


def _priced(simulation: Simulation, node: Node, node_classes: list[NodeClass]) -> PricedNode:
    labels = node.metadata.labels
    claim = simulation.cluster.state.claim_for(node)
    candidates = node_classes
    if claim is not None:
        try:
            candidates = [simulation.operator.catalog.node_class(claim.spec.node_class_ref)]
        except (UnknownNodeClassError, NodeClassNotFoundError, PluginError):
            candidates = []
    return PricedNode(
        name=node.name,
        node_pool=labels.get(NODEPOOL_LABEL),
        instance_type=labels.get(INSTANCE_TYPE_LABEL),
        zone=labels.get(ZONE_LABEL),
        capacity_type=capacity_type_of(labels),
        price_per_hour=_catalog_price(simulation, node, candidates),
        managed=claim is not None,
    )


def _catalog_price(
    simulation: Simulation, node: Node, node_classes: list[NodeClass]
) -> float | None:
    labels = node.metadata.labels
    name = labels.get(INSTANCE_TYPE_LABEL)
    zone, capacity_type = labels.get(ZONE_LABEL), capacity_type_of(labels)
    if not name:
        return None
    for node_class in node_classes:
        try:
            instance_types = simulation.operator.catalog.instance_types(node_class)
        except (PluginError, ProviderError, TemporaryProviderError, UnknownNodeClassError):
            continue
        for instance_type in instance_types:
            if instance_type.name != name:
                continue
            for offering in instance_type.offerings:
                if offering.zone == zone and offering.capacity_type == capacity_type:
                    return offering.price
    return None


def build_what_if(
    simulation: Simulation, source: str, current: list[PricedNode], report: Report
) -> WhatIf:
    """Compare the nodes at the start (``current``) with those at the end of the run; the
    report's nodes that their provider could not price get their catalog price."""
    projected = price_nodes(simulation)
    names_now = {n.name for n in projected}
    names_before = {n.name for n in current}
    records = {r.node: r for r in simulation.operator.disruption.history.records.values() if r.node}
    removing = {n.name for n in report.nodes if n.removed_at is not None}
    changes = []
    for node in current:
        if node.name in names_now and node.name not in removing:
            continue
        record = records.get(node.name)
        disruption = record.disruption if record is not None else None
        changes.append(
            NodeChange(
                node=node,
                action="replaced" if disruption and disruption.endswith("/Replace") else "removed",
                reason=record.disruption_reason if record is not None else None,
                disruption=disruption,
            )
        )
    # A node of the snapshot is not the provider's instance: the node table gets its price
    # from the catalog, as the what-if does.
    prices = {n.name: n.price_per_hour for n in projected}
    for row in report.nodes:
        if row.price_per_hour is None:
            row.price_per_hour = prices.get(row.name)
    return WhatIf(
        source=source,
        current=current,
        projected=projected,
        changes=changes,
        added=[n for n in projected if n.name not in names_before],
        unplaced=list(report.pending),
    )
