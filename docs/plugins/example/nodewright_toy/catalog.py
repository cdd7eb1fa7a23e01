"""The toy cloud's catalog: three machine sizes, sold spot and on-demand in every zone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.plugin import (
    ARCH_LABEL,
    INSTANCE_TYPE_LABEL,
    OS_LABEL,
    InstanceType,
    InstanceTypeOverhead,
    Offering,
    Requirements,
    resources,
)
from nodewright_toy.nodeclass import GROUP

SIZE_LABEL = f"{GROUP}/size"


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
