"""The toy provider: machines in an imaginary cloud, kept in memory.

Built step by step in docs/plugins/writing-a-provider.md.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from nodewright.plugin import (
    CAPACITY_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    Instance,
    InstanceNotFoundError,
    InstanceType,
    InsufficientCapacityError,
    LaunchRequest,
    NodeClassKind,
    Offering,
    ProviderContext,
    ProviderInfo,
    hookimpl,
)
from nodewright_toy.catalog import SIZE_LABEL, SIZES, instance_type, offerings
from nodewright_toy.nodeclass import GROUP, ToyNodeClass, toy_node_class_crd


class ToyProvider:
    """Machines live in ``self.machines``; a real provider would call its cloud's API."""

    def __init__(self) -> None:
        self.machines: dict[str, Instance] = {}
        self.launched_for: dict[str, str] = {}  # idempotency key -> provider ID
        self.serial = 0
        self.context: ProviderContext | None = None

    @hookimpl
    def nodewright_provider_info(self) -> ProviderInfo:
        return ProviderInfo(
            name="toy",
            node_classes=(
                NodeClassKind(GROUP, ToyNodeClass.KIND, ToyNodeClass, crd=toy_node_class_crd),
            ),
            restricted_label_domains=frozenset({GROUP}),
            well_known_labels=frozenset({SIZE_LABEL}),
        )

    @hookimpl
    def nodewright_configure(self, context: ProviderContext) -> None:
        self.context = context

    def now(self) -> datetime:
        # Time comes from the core's clock, so simulations are reproducible.
        return self.context.clock.now() if self.context else datetime(2026, 1, 1, tzinfo=UTC)

    @hookimpl
    def nodewright_instance_types(self) -> list[InstanceType]:
        return [instance_type(size) for size in SIZES]

    @hookimpl
    def nodewright_offerings(self, node_class: ToyNodeClass) -> dict[str, list[Offering]]:
        return {size.name: offerings(size, node_class.spec.zones) for size in SIZES}

    @hookimpl
    def nodewright_launch(self, request: LaunchRequest) -> Instance:
        existing = self.launched_for.get(request.idempotency_key)
        if existing in self.machines:
            return self.machines[existing]
        choices = [
            (offering.price, option.name, option, offering)
            for option in request.instance_types
            if not request.requirements.intersects(option.requirements)
            for offering in option.offerings
            if offering.available and not request.requirements.intersects(offering.requirements())
        ]
        if not choices:
            raise InsufficientCapacityError("no toy machine fits the request")
        _, _, chosen, offering = min(choices, key=lambda choice: choice[:2])
        self.serial += 1
        provider_id = f"toy:///{offering.zone}/m-{self.serial}"
        instance = Instance(
            provider_id=provider_id,
            node_claim=request.node_claim.name,
            node_pool=request.node_claim.metadata.labels.get(NODEPOOL_LABEL, ""),
            node_class=request.node_class.name,
            instance_type=chosen.name,
            zone=offering.zone,
            capacity_type=offering.capacity_type,
            price=offering.price,
            created_at=self.now(),
            labels={ZONE_LABEL: offering.zone, CAPACITY_TYPE_LABEL: offering.capacity_type},
            capacity=chosen.capacity,
            allocatable=chosen.allocatable(),
            state="pending",
        )
        self.machines[provider_id] = instance
        self.launched_for[request.idempotency_key] = provider_id
        return instance

    @hookimpl
    def nodewright_get(self, provider_id: str) -> Instance:
        try:
            return self.machines[provider_id]
        except KeyError:
            raise InstanceNotFoundError(provider_id) from None

    @hookimpl
    def nodewright_list(self) -> list[Instance]:
        return list(self.machines.values())

    @hookimpl
    def nodewright_delete(self, provider_id: str) -> None:
        machine = self.nodewright_get(provider_id)
        if machine.state == "terminating":
            # The second call finds the machine gone: deletion is complete.
            del self.machines[provider_id]
            raise InstanceNotFoundError(provider_id)
        self.machines[provider_id] = replace(machine, state="terminating")


#: The object the entry point names.
provider = ToyProvider()
