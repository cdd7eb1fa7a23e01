"""Instance discovery through moto: Karpenter's labels, capacity and overhead, with the
reference's worked numbers, and offerings priced (or unavailable) per zone."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nodewright.api.labels import ARCH_LABEL, INSTANCE_TYPE_LABEL, OS_LABEL, REGION_LABEL
from nodewright.clock import SimulatedClock
from nodewright.plugin.model import InstanceType
from nodewright_aws import labels as L
from nodewright_aws.instancetype import kube_reserved_cpu_millis, requirements_for
from providers.aws.tests.aws_helpers import REGION, ZONES, World, configured_provider, node_class

MI = 1024 * 1024 * 1000  # one MiB in milli-units


def catalog(world: World, **extra: str) -> dict[str, InstanceType]:
    provider = configured_provider(world, extra=extra)
    return {t.name: t for t in provider.instance_types(node_class())}


@pytest.mark.parametrize(
    ("name", "pods", "memory_mib", "expected"),
    [
        # (kube-reserved cpu m, kube-reserved memory Mi, allocatable memory Mi)
        ("m5.large", 29, 7577, (70, 574, 6903)),
        ("c7g.xlarge", 58, 7518, (80, 893, 6525)),
        ("g5.12xlarge", 737, 181862, (190, 8362, 173400)),
    ],
)
def test_worked_numbers_from_the_reference(
    world: World, name: str, pods: int, memory_mib: int, expected: tuple[int, int, int]
) -> None:
    kube_cpu, kube_memory_mib, allocatable_mib = expected
    instance_type = catalog(world)[name]
    assert instance_type.capacity["pods"] == pods * 1000
    assert instance_type.capacity["memory"] == memory_mib * MI
    assert instance_type.overhead.kube_reserved["cpu"] == kube_cpu
    assert instance_type.overhead.kube_reserved["memory"] == kube_memory_mib * MI
    assert instance_type.overhead.eviction_threshold["memory"] == 100 * MI
    assert instance_type.allocatable()["memory"] == allocatable_mib * MI


def test_kube_reserved_cpu_tiers() -> None:
    assert [kube_reserved_cpu_millis(n) for n in (2, 4, 8, 48)] == [70, 80, 90, 190]


def test_labels_are_derived_as_karpenter_derives_them(world: World) -> None:
    types = catalog(world)
    m5 = types["m5.large"].requirements.labels()
    assert m5[INSTANCE_TYPE_LABEL] == "m5.large"
    assert m5[ARCH_LABEL] == "amd64"
    assert m5[OS_LABEL] == "linux"
    assert m5[REGION_LABEL] == REGION
    assert m5[L.INSTANCE_CATEGORY] == "m"
    assert m5[L.INSTANCE_FAMILY] == "m5"
    assert m5[L.INSTANCE_GENERATION] == "5"
    assert m5[L.INSTANCE_SIZE] == "large"
    assert m5[L.INSTANCE_CPU] == "2"
    assert m5[L.INSTANCE_CPU_MANUFACTURER] == "intel"
    assert m5[L.INSTANCE_CPU_SUSTAINED_CLOCK] == "3100"
    assert m5[L.INSTANCE_MEMORY] == "8192"
    assert m5[L.INSTANCE_EBS_BANDWIDTH] == "4750"
    assert m5[L.INSTANCE_NETWORK_BANDWIDTH] == "750"
    assert m5[L.INSTANCE_HYPERVISOR] == "nitro"
    assert m5[L.INSTANCE_ENCRYPTION_IN_TRANSIT] == "false"
    assert m5[L.INSTANCE_CAPABILITY_FLEX] == "false"
    # Unknown values are DoesNotExist, so pods selecting a GPU never land here.
    gpu_count = types["m5.large"].requirements[L.INSTANCE_GPU_COUNT]
    assert not gpu_count.complement
    assert not gpu_count.values
    c7g = types["c7g.xlarge"].requirements.labels()
    assert (
        c7g[ARCH_LABEL],
        c7g[L.INSTANCE_CPU_MANUFACTURER],
        c7g[L.INSTANCE_NETWORK_BANDWIDTH],
    ) == ("arm64", "aws", "1876")
    g5 = types["g5.12xlarge"].requirements.labels()
    assert g5[L.INSTANCE_GPU_NAME] == "a10g"
    assert g5[L.INSTANCE_GPU_MANUFACTURER] == "nvidia"
    assert g5[L.INSTANCE_GPU_COUNT] == "4"
    assert g5[L.INSTANCE_GPU_MEMORY] == "22888"
    assert g5[L.INSTANCE_LOCAL_NVME] == "3800"
    assert types["g5.12xlarge"].capacity["nvidia.com/gpu"] == 4000


def test_kubelet_settings_change_pods_and_reservations(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class(
        kubelet={
            "maxPods": 20,
            "systemReserved": {"memory": "200Mi"},
            "evictionHard": {"memory.available": "500Mi"},
        }
    )
    m5 = {t.name: t for t in provider.instance_types(nc)}["m5.large"]
    assert m5.capacity["pods"] == 20_000
    # AL2023 keeps the ENI-limited count for kube-reserved memory, even with maxPods.
    assert m5.overhead.kube_reserved["memory"] == 574 * MI
    assert m5.overhead.system_reserved["memory"] == 200 * MI
    assert m5.overhead.eviction_threshold["memory"] == 500 * MI


def test_vm_memory_overhead_is_an_option(world: World) -> None:
    m5 = catalog(world, **{"vm-memory-overhead-percent": "0"})["m5.large"]
    assert m5.capacity["memory"] == 8192 * MI


def test_offerings_cover_subnet_zones_and_both_capacity_types(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class()
    types = provider.instance_types(nc)
    offerings = provider.offerings(nc, types)
    m5 = offerings["m5.large"]
    assert {(o.zone, o.capacity_type) for o in m5} == {
        (z, ct) for z in ZONES for ct in ("spot", "on-demand")
    }
    on_demand = next(o for o in m5 if o.capacity_type == "on-demand")
    assert on_demand.price == pytest.approx(0.096)  # static table (moto has no Pricing API)
    assert all(o.available for o in m5)
    assert all(o.labels[L.ZONE_ID].startswith("usw2-az") for o in m5)


def test_a_type_without_a_price_has_unavailable_offerings(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class()
    types = provider.instance_types(nc)
    book = provider.pricing.book()
    book.on_demand.pop("c5.large")
    offerings = provider.offerings(nc, types)
    on_demand = [o for o in offerings["c5.large"] if o.capacity_type == "on-demand"]
    assert on_demand
    assert not any(o.available for o in on_demand)


def test_discovery_is_cached_and_refreshed_with_the_clock(world: World) -> None:
    clock = SimulatedClock()
    provider = configured_provider(world, clock=clock)
    provider.instance_types(node_class())
    first = provider.instance_type_provider.data.refreshed_at
    clock.advance(timedelta(hours=1))
    provider.instance_types(node_class())
    assert provider.instance_type_provider.data.refreshed_at == first
    clock.advance(timedelta(hours=12))
    provider.instance_types(node_class())
    assert provider.instance_type_provider.data.refreshed_at == clock.now()


def test_types_built_in_turn_carry_their_own_region_and_os() -> None:
    # Label requirements are shared between types; each type still gets its own values.
    info = {
        "InstanceType": "m5.large",
        "VCpuInfo": {"DefaultVCpus": 2},
        "MemoryInfo": {"SizeInMiB": 8192},
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
    }
    east = requirements_for(info, "us-east-1").labels()
    west = requirements_for(info, "eu-west-1").labels()
    windows = requirements_for(info, "us-east-1", "Windows2022").labels()
    assert (east[REGION_LABEL], east[OS_LABEL]) == ("us-east-1", "linux")
    assert (west[REGION_LABEL], west[OS_LABEL]) == ("eu-west-1", "linux")
    assert (windows[REGION_LABEL], windows[OS_LABEL]) == ("us-east-1", "windows")
    assert requirements_for(info, "us-east-1") == requirements_for(info, "us-east-1")
