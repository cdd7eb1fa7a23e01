"""Karpenter's fake instance-type catalog (``pkg/cloudprovider/fake``), the one copy.

The :class:`~nodewright.testing.FakeProvider` sells it, and the core's scheduling tests build
their NodePools from it, so scenarios from Karpenter's suites read the same here. Every type
defaults to 4 CPU / 4Gi / 5 pods, reserves 100m CPU and 10Mi memory, is sold as spot in zones
1-2 and on-demand in zones 1-3 at :func:`price_from_resources`, and carries the fake's own
labels (size, exotic, CPU count) under this kit's label domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    INSTANCE_TYPE_LABEL,
    OS_LABEL,
)
from nodewright.plugin import (
    Device,
    DynamicResources,
    InstanceType,
    InstanceTypeOverhead,
    Offering,
    ResourceSliceTemplate,
)
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.resources import CPU, MEMORY, parse_resources, resources

GROUP = "testing.nodewright.dev"
#: ``small`` or ``large``, like Karpenter's fake ``size`` label.
SIZE_LABEL = f"{GROUP}/size"
#: The number of CPUs, as an integer label (for ``Gt``/``Lt`` requirements); Karpenter's
#: ``integer``.
CPU_LABEL = f"{GROUP}/cpu"
#: ``optional`` on large types only, absent elsewhere; Karpenter's exotic ``special``.
SPECIAL_LABEL = f"{GROUP}/special"
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
#: Karpenter's two fake GPU resources; each one a type has adds 1 to its price.
GPU_A = "fake.com/vendor-a"
GPU_B = "fake.com/vendor-b"
#: The DRA driver of Karpenter's DRA test fixtures.
GPU_DRIVER = "gpu.example.com"


def price_from_resources(capacity: Mapping[str, int]) -> float:
    """Karpenter's fake price: 0.1 per CPU, 0.1 per 10^9 bytes of memory, 1 per GPU kind."""
    price = 0.1 * capacity.get(CPU, 0) / 1000 + 0.1 * capacity.get(MEMORY, 0) / 1000 / 1e9
    price += sum(1.0 for gpu in (GPU_A, GPU_B) if capacity.get(gpu, 0))
    return round(price, 6)


def default_offerings(price: float) -> list[Offering]:
    """Spot in test-zone-1 and 2, on-demand in test-zone-1 to 3, all at ``price``."""
    return [
        *(Offering(zone, CAPACITY_TYPE_SPOT, price) for zone in ZONES[:2]),
        *(Offering(zone, CAPACITY_TYPE_ON_DEMAND, price) for zone in ZONES),
    ]


def fake_instance_type(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "4Gi",
    pods: int = 5,
    arch: str = "amd64",
    operating_systems: Iterable[str] = ("linux", "windows", "darwin"),
    offerings: Sequence[Offering] | None = None,
    extra: Mapping[str, str] | None = None,
    devices: DynamicResources | None = None,
) -> InstanceType:
    """One instance type shaped like Karpenter's ``fake.NewInstanceType``.

    Without ``offerings``: :func:`default_offerings` at :func:`price_from_resources`.
    ``extra`` adds resources (``{"nvidia.com/gpu": "1"}``); ``devices`` the DRA devices its
    nodes offer.
    """
    capacity = resources(cpu=cpu, memory=memory, pods=pods)
    if extra:
        capacity.update(parse_resources(extra))
    if offerings is None:
        offerings = default_offerings(price_from_resources(capacity))
    large = capacity[CPU] > 4000 and capacity[MEMORY] > resources(memory="8Gi")[MEMORY]
    requirements = Requirements(
        [
            Requirement.of(INSTANCE_TYPE_LABEL, "In", [name]),
            Requirement.of(ARCH_LABEL, "In", [arch]),
            Requirement.of(OS_LABEL, "In", list(operating_systems)),
            Requirement.of(SIZE_LABEL, "In", ["large" if large else "small"]),
            Requirement.of(
                SPECIAL_LABEL, *(("In", ["optional"]) if large else ("DoesNotExist", []))
            ),
            Requirement.of(CPU_LABEL, "In", [str(capacity[CPU] // 1000)]),
        ]
    )
    overhead = InstanceTypeOverhead(kube_reserved=resources(cpu="100m", memory="10Mi"))
    instance_type = InstanceType(
        name, requirements, capacity, overhead, dynamic_resources=devices or DynamicResources()
    )
    return instance_type.with_offerings(offerings)


def gpu_instance_type(
    name: str, count: int, *, cpu: str = "4", memory: str = "4Gi"
) -> InstanceType:
    """Karpenter's ``fake.GPUInstanceType``: a type whose nodes offer ``count`` DRA GPUs
    (``<name>-gpu-0`` ...) of :data:`GPU_DRIVER` in pool ``<name>-pool``."""
    gpus = tuple(Device(f"{name}-gpu-{i}") for i in range(count))
    devices = DynamicResources((ResourceSliceTemplate(GPU_DRIVER, f"{name}-pool", gpus),))
    return fake_instance_type(name, cpu=cpu, memory=memory, devices=devices)


def default_instance_types() -> list[InstanceType]:
    """The FakeProvider's default catalog: small (2/2Gi), default (4/4Gi), arm (16/128Gi)."""
    return [
        fake_instance_type("default-instance-type"),
        fake_instance_type("small-instance-type", cpu="2", memory="2Gi"),
        fake_instance_type("arm-instance-type", cpu="16", memory="128Gi", arch="arm64"),
    ]


def karpenter_instance_types() -> list[InstanceType]:
    """Karpenter's ``fake.CloudProvider.GetInstanceTypes`` without overrides: the default
    catalog plus two GPU types and a type with one pod slot."""
    return [
        fake_instance_type("default-instance-type"),
        fake_instance_type("small-instance-type", cpu="2", memory="2Gi"),
        fake_instance_type("gpu-vendor-instance-type", extra={GPU_A: "2"}),
        fake_instance_type("gpu-vendor-b-instance-type", extra={GPU_B: "2"}),
        fake_instance_type(
            "arm-instance-type",
            cpu="16",
            memory="128Gi",
            arch="arm64",
            operating_systems=("ios", "linux", "windows", "darwin"),
        ),
        fake_instance_type("single-pod-instance-type", pods=1),
    ]
