"""SKU discovery through the real azure-mgmt-compute client against the fake's Resource SKUs
pages, and the labels, zones and capacity Karpenter derives from them."""

from __future__ import annotations

from nodewright.api.labels import ARCH_LABEL, INSTANCE_TYPE_LABEL, OS_LABEL, REGION_LABEL
from nodewright.api.quantity import parse_quantity
from nodewright.plugin.model import InstanceType
from nodewright_azure import labels as L
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.skus import (
    Sku,
    kube_reserved_cpu_millis,
    kube_reserved_memory_mib,
    rejection,
)
from providers.azure.tests.azure_helpers import node_class
from providers.azure.tests.fake_azure import FakeAzure


def catalog(provider: AzureProvider, **spec: object) -> dict[str, InstanceType]:
    return {t.name: t for t in provider.instance_types(node_class(**spec))}


def single(instance_type: InstanceType, key: str) -> str:
    (value,) = instance_type.requirements[key].values
    return str(value)


def test_skus_are_read_through_every_page_filtered_by_location(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    found = provider.instance_type_provider.region_skus()
    sku_calls = [path for method, path in fake.requests if "/Microsoft.Compute/skus" in path]
    assert len(sku_calls) == 4  # 35 SKUs, 10 per page, followed through nextLink
    assert all("api-version=" in path for path in sku_calls)
    assert "location+eq+%27japaneast%27" in sku_calls[0] or "location%20eq" in sku_calls[0]
    assert len(found) == 34  # the disk SKU is not a VM


def test_unsupported_skus_are_dropped_for_the_reason_the_reference_gives(
    provider: AzureProvider,
) -> None:
    reasons = {s.name: rejection(s) for s in provider.instance_type_provider.region_skus()}
    assert reasons["Standard_B1s"] == "restricted"
    assert reasons["Standard_A1_v2"] == "restricted"
    assert reasons["Standard_D2_v2"] == "location restriction"
    assert reasons["Standard_M8-2ms"] == "constrained vCPUs"
    assert reasons["Standard_DC2s_v3"] == "confidential"
    assert reasons["Standard_NV6"] == "unsupported GPU"
    assert reasons["Standard_D2_v4"] is None
    types = catalog(provider)
    assert not {n for n, r in reasons.items() if r} & set(types)
    assert len(types) == 28


def test_too_small_skus_are_dropped() -> None:
    small = Sku("Standard_B2ts_v2", "standardBsv2Family", {"vCPUs": "2", "MemoryGB": "1"})
    assert rejection(small) == "too small"


def test_seed_002_labels_of_a_d2_v4(provider: AzureProvider) -> None:
    d2 = catalog(provider, imageFamily="Ubuntu2204")["Standard_D2_v4"]
    expected = {
        INSTANCE_TYPE_LABEL: "Standard_D2_v4",
        ARCH_LABEL: "amd64",
        OS_LABEL: "linux",
        REGION_LABEL: "japaneast",
        L.SKU_NAME: "Standard_D2_v4",
        L.SKU_FAMILY: "D",
        L.SKU_SERIES: "D_v4",
        L.SKU_VERSION: "4",
        L.SKU_CPU: "2",
        L.SKU_MEMORY: "8192",
        L.SKU_GPU_COUNT: "0",
        L.SKU_NETWORKING_ACCELERATED: "true",
        L.SKU_STORAGE_PREMIUM_CAPABLE: "false",
        L.AKS_OS_SKU: "Ubuntu",
    }
    for key, value in expected.items():
        assert single(d2, key) == value, key
    assert L.SKU_GPU_NAME not in d2.requirements
    assert L.SKU_STORAGE_EPHEMERALOS_MAXSIZE not in d2.requirements
    assert "karpenter.azure.com/zone" not in d2.requirements


def test_e16as_v5_is_the_seed_002_131072_mib_node(provider: AzureProvider) -> None:
    types = catalog(provider)
    big = [n for n, t in types.items() if single(t, L.SKU_MEMORY) == "131072"]
    assert sorted(big) == ["Standard_E16as_v5", "Standard_E16ds_v5", "Standard_E16s_v5"]
    e16 = types["Standard_E16as_v5"]
    assert single(e16, L.SKU_CPU) == "16"
    assert single(e16, L.SKU_FAMILY) == "E"
    assert single(e16, L.SKU_STORAGE_PREMIUM_CAPABLE) == "true"


def test_ephemeral_os_disk_size_in_decimal_gb(provider: AzureProvider) -> None:
    types = catalog(provider)
    # CachedDiskBytes 34359738368 -> 34 GB; MaxResourceVolumeMB 614400 MiB -> 644 GB.
    assert single(types["Standard_F2s_v2"], L.SKU_STORAGE_EPHEMERALOS_MAXSIZE) == "34"
    assert single(types["Standard_E16ds_v5"], L.SKU_STORAGE_EPHEMERALOS_MAXSIZE) == "644"


def test_gpu_labels_and_capacity(provider: AzureProvider) -> None:
    t4 = catalog(provider)["Standard_NC4as_T4_v3"]
    assert single(t4, L.SKU_GPU_NAME) == "T4"
    assert single(t4, L.SKU_GPU_MANUFACTURER) == "nvidia"
    assert single(t4, L.SKU_GPU_COUNT) == "1"
    assert single(t4, L.SKU_FAMILY) == "N"
    assert t4.capacity["nvidia.com/gpu"] == 1000
    v100 = catalog(provider)["Standard_NC6s_v3"]
    assert single(v100, L.SKU_GPU_NAME) == "V100"


def test_zones_are_region_dash_n_plus_regional_and_restricted_zones_are_removed(
    provider: AzureProvider,
) -> None:
    nc = node_class()
    types = provider.instance_types(nc)
    offerings = provider.offerings(nc, types)
    zones = {o.zone for o in offerings["Standard_D2_v4"]}
    assert zones == {"japaneast-1", "japaneast-2", "japaneast-3", "0"}
    assert {o.zone for o in offerings["Standard_E4s_v4"]} == {"japaneast-1", "japaneast-2", "0"}
    scopes = {o.zone: o.labels[L.PLACEMENT_SCOPE] for o in offerings["Standard_D2_v4"]}
    assert scopes["0"] == "regional"
    assert scopes["japaneast-1"] == "zonal"
    # B-series are not LowPriorityCapable: no spot offering.
    assert {o.capacity_type for o in offerings["Standard_B2s"]} == {"on-demand"}
    assert {o.capacity_type for o in offerings["Standard_D2_v4"]} == {"on-demand", "spot"}


def test_capacity_and_overhead_reproduce_the_worked_examples(provider: AzureProvider) -> None:
    types = catalog(provider)
    d2 = types["Standard_D2s_v5"]
    gib = 1024**3 * 1000
    assert d2.capacity["memory"] == parse_quantity(str(8 * 1024**3 - 644245095))
    assert round(d2.capacity["memory"] / gib, 2) == 7.40
    assert d2.overhead.kube_reserved == {"cpu": 100, "memory": parse_quantity("1843Mi")}
    assert d2.overhead.eviction_threshold == {"memory": parse_quantity("750Mi")}
    allocatable = d2.allocatable()
    assert allocatable["cpu"] == 1900
    assert round(allocatable["memory"] / gib, 2) == 4.87
    d8 = types["Standard_D8s_v5"].allocatable()
    assert d8["cpu"] == 7820
    assert round(d8["memory"] / gib, 1) == 25.3
    assert d2.capacity["ephemeral-storage"] == 128 * 10**9 * 1000
    assert d2.capacity["pods"] == 250 * 1000  # azure-overlay default


def test_kube_reserved_tables() -> None:
    assert [kube_reserved_cpu_millis(n) for n in (1, 2, 4, 8, 16, 64)] == [
        60,
        100,
        140,
        180,
        260,
        740,
    ]
    assert kube_reserved_memory_mib(8) == 1843
    assert kube_reserved_memory_mib(4) == 1024
    assert kube_reserved_memory_mib(256) == 12165  # 1024 + 819.2 + 819.2 + 6881.28 + 2621.44


def test_node_class_settings_change_the_catalog(provider: AzureProvider) -> None:
    plain = catalog(provider)
    assert "Standard_D2pls_v5" in plain
    streaming = catalog(provider, artifactStreaming={"enabled": True})
    assert "Standard_D2pls_v5" not in streaming
    pods = catalog(provider, maxPods=110, osDiskSizeGB=64)["Standard_D2_v4"]
    assert pods.capacity["pods"] == 110 * 1000
    assert pods.capacity["ephemeral-storage"] == 64 * 10**9 * 1000
    azure_linux = catalog(provider, imageFamily="AzureLinux")["Standard_D2_v4"]
    assert single(azure_linux, L.AKS_OS_SKU) == "AzureLinux"


def test_vm_memory_overhead_option(make_provider: object) -> None:
    provider = make_provider(vm_memory_overhead_percent="0")  # type: ignore[operator]
    d2 = catalog(provider)["Standard_D2s_v5"]
    assert d2.capacity["memory"] == 8 * 1024**3 * 1000
