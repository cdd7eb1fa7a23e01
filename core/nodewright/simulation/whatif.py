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
from nodewright.controllers.nodeclaim.history import NodeRecord
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.simulation.catalogprices import CatalogPrices
from nodewright.simulation.report import PodRow, Report
from nodewright.simulation.runner import Simulation
from nodewright.simulation.savings import Figure, Price, RunHistory, Savings, explain

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
    #: The price is the provider's estimate (an offline catalog's modelled price), not a quote.
    price_modelled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodePool": self.node_pool,
            "instanceType": self.instance_type,
            "zone": self.zone,
            "capacityType": self.capacity_type,
            "pricePerHour": self.price_per_hour,
            "priceModelled": self.price_modelled,
            "managed": self.managed,
        }


@dataclass
class AddedNode(PricedNode):
    """A node the run launched and still has at the end."""

    #: The snapshot's nodes it took the place of (through replacements of replacements);
    #: empty for a node launched for pods that had no room.
    replaces: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "replaces": self.replaces}


@dataclass
class NodeChange:
    """An existing node the run removed: ``removed``, or ``replaced`` by a new node."""

    node: PricedNode
    action: str
    #: ``Empty``, ``Underutilized``, ``Drifted``, ``Expired``; None when removed otherwise.
    reason: str | None
    #: Karpenter's wording of the decision (``Consolidation/Replace``), when disrupted.
    disruption: str | None
    #: The nodes standing at the end that took its place (through replacements of
    #: replacements); empty when it was removed, or its replacement was removed too.
    replaced_by: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.node.to_dict(),
            "action": self.action,
            "reason": self.reason,
            "disruption": self.disruption,
            "replacedBy": self.replaced_by,
        }


@dataclass
class WhatIf:
    source: str
    current: list[PricedNode]
    projected: list[PricedNode] = field(default_factory=list)
    changes: list[NodeChange] = field(default_factory=list)
    #: Nodes the run launched and still has at the end.
    added: list[AddedNode] = field(default_factory=list)
    unplaced: list[PodRow] = field(default_factory=list)
    #: Where the saving comes from (None until :func:`build_what_if` explains it).
    savings: Savings | None = None

    @property
    def current_price_per_hour(self) -> float:
        return _total(self.current)

    @property
    def projected_price_per_hour(self) -> float:
        return _total(self.projected)

    @property
    def current_price_modelled(self) -> bool:
        """Whether the total now rests on a modelled price."""
        return any(n.price_modelled for n in self.current if n.price_per_hour is not None)

    @property
    def projected_price_modelled(self) -> bool:
        return any(n.price_modelled for n in self.projected if n.price_per_hour is not None)

    @property
    def any_price_modelled(self) -> bool:
        """Whether any figure of the what-if rests on a modelled price."""
        return (
            self.current_price_modelled
            or self.projected_price_modelled
            or any(n.price_modelled for n in self.added)
        )

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
            "currentPriceModelled": self.current_price_modelled,
            "projectedPriceModelled": self.projected_price_modelled,
            "savings": self.savings.to_dict() if self.savings is not None else None,
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
    catalog = CatalogPrices(simulation)
    node_classes = catalog.node_classes()
    return [
        _priced(simulation, catalog, node, node_classes)
        for node in sorted(simulation.cluster.list(Node), key=lambda n: n.name)
    ]


def _priced(
    simulation: Simulation, catalog: CatalogPrices, node: Node, node_classes: list[NodeClass]
) -> PricedNode:
    labels = node.metadata.labels
    claim = simulation.cluster.state.claim_for(node)
    candidates = node_classes
    if claim is not None:
        try:
            candidates = [simulation.operator.catalog.node_class(claim.spec.node_class_ref)]
        except (UnknownNodeClassError, NodeClassNotFoundError, PluginError):
            candidates = []
    offering = catalog.offering(
        candidates,
        labels.get(INSTANCE_TYPE_LABEL),
        labels.get(ZONE_LABEL),
        capacity_type_of(labels),
    )
    return PricedNode(
        name=node.name,
        node_pool=labels.get(NODEPOOL_LABEL),
        instance_type=labels.get(INSTANCE_TYPE_LABEL),
        zone=labels.get(ZONE_LABEL),
        capacity_type=capacity_type_of(labels),
        price_per_hour=offering.price if offering is not None else None,
        managed=claim is not None,
        price_modelled=offering.price_modelled if offering is not None else False,
    )


def build_what_if(
    simulation: Simulation, source: str, current: list[PricedNode], report: Report
) -> WhatIf:
    """Compare the nodes at the start (``current``) with those at the end of the run, say
    which new node took the place of which and where the saving comes from; the report's
    nodes that their provider could not price get their catalog price, and the snapshot's
    are marked as such."""
    projected = price_nodes(simulation)
    names_now = {n.name for n in projected}
    names_before = {n.name for n in current}
    history = RunHistory(list(simulation.operator.disruption.history.records.values()))
    removing = {n.name for n in report.nodes if n.removed_at is not None}
    standing = names_now - removing
    changes = []
    for node in current:
        if node.name in standing:
            continue
        record = history.by_node.get(node.name)
        disruption = record.disruption if record is not None else None
        changes.append(
            NodeChange(
                node=node,
                action="replaced" if disruption and disruption.endswith("/Replace") else "removed",
                reason=record.disruption_reason if record is not None else None,
                disruption=disruption,
                replaced_by=history.standing(node.name, standing),
            )
        )
    replaces: dict[str, list[str]] = {}
    for change in changes:
        for name in change.replaced_by:
            replaces.setdefault(name, []).append(change.node.name)
    added = [
        AddedNode(**vars(n), replaces=replaces.get(n.name, []))
        for n in projected
        if n.name not in names_before
    ]
    # A node of the snapshot is not the provider's instance: the node table gets its price
    # from the catalog, as the what-if does.
    prices = {n.name: n for n in projected}
    for row in report.nodes:
        priced = prices.get(row.name)
        if row.price_per_hour is None and priced is not None:
            row.price_per_hour = priced.price_per_hour
        row.price_modelled = priced is not None and priced.price_modelled
        row.existing = row.name in names_before
    for removed in report.removed_nodes:
        removed.existing = removed.name in names_before
    what_if = WhatIf(
        source=source,
        current=current,
        projected=projected,
        changes=changes,
        added=added,
        unplaced=list(report.pending),
    )
    what_if.savings = _savings(simulation, what_if, history)
    return what_if


def _savings(simulation: Simulation, what_if: WhatIf, history: RunHistory) -> Savings:
    """The saving, split by the steps of the run (see :mod:`nodewright.simulation.savings`)."""
    catalog = CatalogPrices(simulation)
    node_classes = catalog.node_classes()
    known: dict[str, Price] = {
        n.name: (n.price_per_hour, n.price_modelled) for n in [*what_if.projected, *what_if.current]
    }

    def price(record: NodeRecord) -> Price:
        if record.node in known:
            return known[record.node]
        offering = catalog.offering(
            node_classes, record.instance_type, record.zone, record.capacity_type
        )
        if offering is not None:
            return offering.price, offering.price_modelled
        return record.price_per_hour, False

    def price_as(record: NodeRecord, capacity_type: str) -> Price:
        offering = catalog.offering(node_classes, record.instance_type, record.zone, capacity_type)
        return (offering.price, offering.price_modelled) if offering is not None else (None, False)

    total = Figure(
        what_if.current_price_per_hour - what_if.projected_price_per_hour,
        0,
        what_if.current_price_modelled or what_if.projected_price_modelled,
    )
    return explain(history, total, {n.name for n in what_if.current}, price, price_as)
