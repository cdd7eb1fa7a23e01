"""The toy provider: three machine sizes in two zones of an imaginary cloud.

Built step by step in docs/plugins/writing-a-provider.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import ClassVar

from pydantic import Field

from nodewright.api.karpenter import NodeClass
from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    OS_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import StrictModel
from nodewright.plugin import (
    Instance,
    InstanceNotFoundError,
    InstanceType,
    InstanceTypeOverhead,
    InsufficientCapacityError,
    LaunchRequest,
    NodeClassKind,
    Offering,
    ProviderContext,
    ProviderInfo,
    hookimpl,
)
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import resources

# -- the NodeClass ------------------------------------------------------------------------

GROUP = "toy.nodewright.dev"
SIZE_LABEL = f"{GROUP}/size"


class ToyNodeClassSpec(StrictModel):
    zones: list[str] = Field(default_factory=lambda: ["toy-1a", "toy-1b"])


class ToyNodeClass(NodeClass):
    API_VERSION: ClassVar[str] = f"{GROUP}/v1"
    KIND: ClassVar[str] = "ToyNodeClass"

    spec: ToyNodeClassSpec = Field(default_factory=ToyNodeClassSpec)


# -- the catalog --------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    name: str
    cpu: str
    memory: str
    on_demand_price: float


SIZES = (
    Size("toy.small", cpu="1", memory="2Gi", on_demand_price=0.02),
    Size("toy.medium", cpu="2", memory="4Gi", on_demand_price=0.04),
    Size("toy.large", cpu="4", memory="8Gi", on_demand_price=0.08),
)


def instance_type(size: Size) -> InstanceType:
    return InstanceType(
        name=size.name,
        requirements=Requirements.from_labels(
            {
                INSTANCE_TYPE_LABEL: size.name,
                ARCH_LABEL: "amd64",
                OS_LABEL: "linux",
                SIZE_LABEL: size.name.removeprefix("toy."),
            }
        ),
        capacity=resources(cpu=size.cpu, memory=size.memory, pods=32),
        overhead=InstanceTypeOverhead(kube_reserved=resources(cpu="100m", memory="256Mi")),
    )


def offerings(size: Size, zones: Sequence[str]) -> list[Offering]:
    spot = round(size.on_demand_price * 0.3, 4)
    return [
        *(Offering(zone, "spot", spot) for zone in zones),
        *(Offering(zone, "on-demand", size.on_demand_price) for zone in zones),
    ]


# -- the provider -------------------------------------------------------------------------


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
            node_classes=(NodeClassKind(GROUP, "ToyNodeClass", ToyNodeClass),),
            restricted_label_domains=frozenset({GROUP}),
            well_known_labels=frozenset({SIZE_LABEL}),
        )

    @hookimpl
    def nodewright_configure(self, context: ProviderContext) -> None:
        self.context = context

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
            node_pool=request.node_claim.metadata.labels.get("karpenter.sh/nodepool", ""),
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

    def now(self) -> datetime:
        # Time comes from the core's clock, so simulations are reproducible.
        return self.context.clock.now() if self.context else datetime(2026, 1, 1, tzinfo=UTC)

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
