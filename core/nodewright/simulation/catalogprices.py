"""A simulation's catalog prices looked up by what a node is (instance type, zone, capacity
type), for nodes the provider did not launch and so cannot price itself: a snapshot's, and
nodes the what-if compares at another capacity type."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.karpenter import NodeClass
from nodewright.plugin.errors import (
    PluginError,
    ProviderError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.scheduling.instancetype import Offering
from nodewright.simulation.runner import Simulation

#: (instance type, zone, capacity type)
OfferingKey = tuple[str, str, str]


class CatalogPrices:
    """The offerings of each NodeClass's catalog, indexed once per NodeClass."""

    def __init__(self, simulation: Simulation) -> None:
        self._simulation = simulation
        self._index: dict[tuple[str, str], dict[OfferingKey, Offering]] = {}

    def node_classes(self) -> list[NodeClass]:
        """Every NodeClass in the cluster, of every installed provider's kinds."""
        simulation = self._simulation
        return [
            node_class
            for kind in simulation.host.node_class_kinds()
            for node_class in simulation.cluster.list(kind.model)
        ]

    def offering(
        self,
        node_classes: Sequence[NodeClass],
        instance_type: str | None,
        zone: str | None,
        capacity_type: str | None,
    ) -> Offering | None:
        """The first of ``node_classes`` whose catalog sells that offering; None when none
        does (or their providers cannot say)."""
        if not instance_type or not capacity_type:
            return None
        for node_class in node_classes:
            found = self._offerings(node_class).get((instance_type, zone or "", capacity_type))
            if found is not None:
                return found
        return None

    def _offerings(self, node_class: NodeClass) -> dict[OfferingKey, Offering]:
        key = (node_class.kind, node_class.name)
        index = self._index.get(key)
        if index is None:
            index = {}
            try:
                instance_types = self._simulation.operator.catalog.instance_types(node_class)
            except (PluginError, ProviderError, TemporaryProviderError, UnknownNodeClassError):
                instance_types = []
            for instance_type in instance_types:
                for offering in instance_type.offerings:
                    index.setdefault(
                        (instance_type.name, offering.zone, offering.capacity_type), offering
                    )
            self._index[key] = index
        return index
