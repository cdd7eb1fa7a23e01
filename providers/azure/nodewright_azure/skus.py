"""From Resource SKUs to instance types: filtering, labels and capacity
(Karpenter's ``pkg/providers/instancetype``).

Everything here is pure: :class:`Sku` is the slice of a Resource SKU this provider reads, built
from the SDK model by :func:`sku_from_model` (or from JSON in tests).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.plugin import (
    ARCH_LABEL,
    CPU,
    EPHEMERAL_STORAGE,
    INSTANCE_TYPE_LABEL,
    MEMORY,
    OS_LABEL,
    PODS,
    REGION_LABEL,
    InstanceType,
    InstanceTypeOverhead,
    Requirement,
    Requirements,
    ResourceList,
)
from nodewright_azure import labels as L
from nodewright_azure.nodeclass import AKSNodeClassSpec
from nodewright_azure.vmsize import VMSize, VMSizeError, parse_vm_size

MIB = 1024 * 1024
GIB = 1024 * MIB

#: Sizes AKS refuses, and sizes Karpenter blocks (``skus.go``).
RESTRICTED_SKUS = frozenset(
    {
        "Standard_A0",
        "Standard_A1",
        "Standard_A1_v2",
        "Standard_B1s",
        "Standard_B1ms",
        "Standard_F1",
        "Standard_F1s",
        "Basic_A0",
        "Basic_A1",
        "Basic_A2",
        "Basic_A3",
        "Basic_A4",
        "Standard_E64i_v3",
        "Standard_E64is_v3",
    }
)

#: GPU sizes with a supported driver: lower-cased name -> (manufacturer, operating systems).
#: A subset of Karpenter's ``supported-gpus.yaml``; GPU SKUs missing here are dropped.
GPU_REGISTRY: Mapping[str, tuple[str, frozenset[str]]] = {
    **{
        f"standard_nc{n}as_t4_v3": ("nvidia", frozenset({"ubuntu", "azurelinux", "windows"}))
        for n in (4, 8, 16, 64)
    },
    **{
        f"standard_nc{n}ads_a100_v4": ("nvidia", frozenset({"ubuntu", "azurelinux"}))
        for n in (24, 48, 96)
    },
    **{f"standard_nc{n}s_v3": ("nvidia", frozenset({"ubuntu", "azurelinux"})) for n in (6, 12, 24)},
    "standard_nc24rs_v3": ("nvidia", frozenset({"ubuntu", "azurelinux"})),
    **{
        f"standard_nc{n}ads_h100_v5": ("nvidia", frozenset({"ubuntu", "azurelinux"}))
        for n in (40, 80)
    },
    "standard_nd96isr_h100_v5": ("nvidia", frozenset({"ubuntu", "azurelinux"})),
    "standard_nd96isr_mi300x_v5": ("amd", frozenset({"ubuntu"})),
    **{
        f"standard_nv{n}ads_a10_v5": ("nvidia", frozenset({"ubuntu", "windows"}))
        for n in (6, 12, 18, 36, 72)
    },
}

DEFAULT_VM_MEMORY_OVERHEAD = 0.075
EVICTION_HARD_MEMORY = 750 * MIB
MIN_CPUS = 2
MIN_MEMORY_GIB = 3.5


@dataclass(frozen=True)
class Sku:
    """The fields of a Resource SKU (``resourceType == virtualMachines``) this provider uses."""

    name: str
    family: str
    capabilities: Mapping[str, str]
    #: Zones offered in the region, minus zones a restriction removes (``"1"``, ``"2"``...).
    zones: tuple[str, ...] = ()
    #: True when a ``Location`` restriction bars the SKU from the whole region.
    location_restricted: bool = False
    #: Zones where a ``Zone`` restriction applies.
    restricted_zones: frozenset[str] = field(default_factory=frozenset)

    def capability(self, name: str, default: str = "") -> str:
        return self.capabilities.get(name, default)

    def flag(self, name: str) -> bool:
        return self.capability(name).lower() == "true"

    def number(self, name: str) -> float:
        try:
            return float(self.capability(name, "0") or 0)
        except ValueError:
            return 0.0

    @property
    def cpus(self) -> int:
        return int(self.number("vCPUs"))

    @property
    def memory_gib(self) -> float:
        return self.number("MemoryGB")

    @property
    def gpus(self) -> int:
        return int(self.number("GPUs"))

    @property
    def available_zones(self) -> tuple[str, ...]:
        if self.location_restricted:
            return ()
        return tuple(z for z in self.zones if z not in self.restricted_zones)


def sku_from_json(data: Mapping[str, Any], location: str) -> Sku:
    """A :class:`Sku` from a Resource SKU as ARM returns it (camelCase JSON)."""
    caps = {str(c.get("name")): str(c.get("value")) for c in data.get("capabilities") or ()}
    zones: list[str] = []
    for info in data.get("locationInfo") or ():
        if str(info.get("location", "")).lower() == location.lower():
            zones.extend(str(z) for z in info.get("zones") or ())
    location_restricted = False
    restricted_zones: set[str] = set()
    for restriction in data.get("restrictions") or ():
        info = restriction.get("restrictionInfo") or {}
        if restriction.get("type") == "Location":
            locations = [
                str(x).lower() for x in info.get("locations") or restriction.get("values") or ()
            ]
            if not locations or location.lower() in locations:
                location_restricted = True
        elif restriction.get("type") == "Zone":
            restricted_zones.update(str(z) for z in info.get("zones") or ())
    return Sku(
        name=str(data.get("name", "")),
        family=str(data.get("family", "")),
        capabilities=caps,
        zones=tuple(sorted(zones)),
        location_restricted=location_restricted,
        restricted_zones=frozenset(restricted_zones),
    )


def sku_from_model(model: Any, location: str) -> Sku:
    """A :class:`Sku` from an azure-mgmt-compute ``ResourceSku``."""
    return (
        sku_from_json(model.as_dict(), location)
        if not isinstance(model, Mapping)
        else sku_from_json(model, location)
    )


# -- region-level filtering ----------------------------------------------------------------


def rejection(sku: Sku) -> str | None:
    """Why a SKU is never offered in its region (``None``: it is supported)."""
    if sku.name in RESTRICTED_SKUS:
        return "restricted"
    try:
        size = parse_vm_size(sku.name)
    except VMSizeError:
        return "unparsable size name"
    if sku.location_restricted:
        return "location restriction"
    if sku.cpus < MIN_CPUS or sku.memory_gib < MIN_MEMORY_GIB:
        return "too small"
    if sku.gpus > 0 and sku.name.lower() not in GPU_REGISTRY:
        return "unsupported GPU"
    if size.constrained_cpus is not None:
        return "constrained vCPUs"
    if size.size.startswith(("DC", "EC")):
        return "confidential"
    return None


def supported(skus: Iterable[Sku]) -> list[Sku]:
    return [s for s in skus if rejection(s) is None]


def node_class_rejection(sku: Sku, spec: AKSNodeClassSpec) -> str | None:
    """Why a supported SKU is not offered for this NodeClass."""
    if sku.gpus > 0:
        manufacturer, systems = GPU_REGISTRY[sku.name.lower()]
        wanted = {"azurelinux", "azurelinux3"} if spec.image_family == "AzureLinux" else {"ubuntu"}
        if not systems & wanted:
            return f"GPU SKU has no {spec.image_family} support"
        if (spec.gpu is None or spec.gpu.mode in (None, "Driver")) and manufacturer != "nvidia":
            return "no managed GPU driver"
    if spec.security is not None:
        if spec.security.encryption_at_host and not sku.flag("EncryptionAtHostSupported"):
            return "no encryption at host"
        tl = spec.security.trusted_launch
        trusted = tl is not None and (tl.vtpm or tl.secure_boot)
        if trusted and (
            "V2" not in sku.capability("HyperVGenerations") or sku.flag("TrustedLaunchDisabled")
        ):
            return "no trusted launch"
    if (
        spec.artifact_streaming is not None
        and spec.artifact_streaming.enabled
        and arch(sku) == "arm64"
    ):
        return "artifact streaming does not support arm64"
    return None


# -- labels ----------------------------------------------------------------------------------


def arch(sku: Sku) -> str:
    return "arm64" if sku.capability("CpuArchitectureType").lower() == "arm64" else "amd64"


def memory_mib(sku: Sku) -> int:
    return int(sku.memory_gib * 1024)


def ephemeral_os_max_gb(sku: Sku) -> int | None:
    """The largest ephemeral OS disk in decimal GB, or None when ephemeral OS is unsupported."""
    if not sku.flag("EphemeralOSDiskSupported"):
        return None
    placements = sku.capability("SupportedEphemeralOSDiskPlacements")
    if "NvmeDisk" in placements and sku.number("NvmeDiskSizeInMiB") > 0:
        return int(sku.number("NvmeDiskSizeInMiB") * MIB) // 10**9
    if sku.number("CachedDiskBytes") > 0:
        return int(sku.number("CachedDiskBytes")) // 10**9
    if sku.number("MaxResourceVolumeMB") > 0:
        return int(sku.number("MaxResourceVolumeMB") * MIB) // 10**9
    return None


def sku_labels(sku: Sku, spec: AKSNodeClassSpec) -> dict[str, str]:
    """Every single-valued label an instance type of this SKU defines."""
    size: VMSize = parse_vm_size(sku.name)
    gpu = GPU_REGISTRY.get(sku.name.lower())
    values = {
        INSTANCE_TYPE_LABEL: sku.name,
        ARCH_LABEL: arch(sku),
        OS_LABEL: "linux",
        L.SKU_NAME: sku.name,
        L.SKU_FAMILY: size.family,
        L.SKU_SERIES: size.series,
        L.SKU_CPU: str(sku.cpus),
        L.SKU_MEMORY: str(memory_mib(sku)),
        L.AKS_SKU_CPU: str(sku.cpus),
        L.AKS_SKU_MEMORY: str(memory_mib(sku)),
        L.SKU_NETWORKING_ACCELERATED: _bool(sku.flag("AcceleratedNetworkingEnabled")),
        L.SKU_STORAGE_PREMIUM_CAPABLE: _bool(sku.flag("PremiumIO")),
        L.SKU_GPU_COUNT: str(sku.gpus if gpu else 0),
        L.AKS_OS_SKU: spec.os_sku,
    }
    version = size.version_label
    if version is not None:
        values[L.SKU_VERSION] = version
    ephemeral = ephemeral_os_max_gb(sku)
    if ephemeral is not None:
        values[L.SKU_STORAGE_EPHEMERALOS_MAXSIZE] = str(ephemeral)
    if gpu and sku.gpus > 0:
        values[L.SKU_GPU_MANUFACTURER] = gpu[0]
        if size.accelerator:
            values[L.SKU_GPU_NAME] = size.accelerator
    return values


def _bool(value: bool) -> str:
    return "true" if value else "false"


# -- capacity and overhead --------------------------------------------------------------------


def kube_reserved_cpu_millis(cpus: int) -> int:
    """6% of the first core, 4% of the second, 2% of cores 3-4, 1% of the rest (AKS)."""
    millis = 0.0
    for core in range(1, cpus + 1):
        millis += 60 if core == 1 else 40 if core == 2 else 20 if core <= 4 else 10
    return int(millis)


def kube_reserved_memory_mib(memory_gib: float) -> int:
    """AKS before 1.29: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8,
    6% up to 128 GiB, 2% above."""
    brackets = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (math.inf, 0.02))
    remaining, reserved = memory_gib, 0.0
    for size, rate in brackets:
        part = min(remaining, size)
        reserved += part * rate
        remaining -= part
        if remaining <= 0:
            break
    return int(reserved * 1024)


def capacity(
    sku: Sku, spec: AKSNodeClassSpec, max_pods: int, vm_memory_overhead: float
) -> ResourceList:
    """What the node reports: memory less the hypervisor's share, disk from the NodeClass."""
    whole_gib = math.floor(sku.memory_gib)
    memory = whole_gib * GIB - math.ceil(whole_gib * GIB * vm_memory_overhead)
    values: ResourceList = {
        CPU: sku.cpus * 1000,
        MEMORY: memory * 1000,
        EPHEMERAL_STORAGE: spec.os_disk_size_gb * 10**9 * 1000,
        PODS: max_pods * 1000,
    }
    gpu = GPU_REGISTRY.get(sku.name.lower())
    if gpu and sku.gpus > 0:
        values["nvidia.com/gpu" if gpu[0] == "nvidia" else "amd.com/gpu"] = sku.gpus * 1000
    return values


def overhead(sku: Sku) -> InstanceTypeOverhead:
    return InstanceTypeOverhead(
        kube_reserved={
            CPU: kube_reserved_cpu_millis(sku.cpus),
            MEMORY: kube_reserved_memory_mib(sku.memory_gib) * MIB * 1000,
        },
        eviction_threshold={MEMORY: EVICTION_HARD_MEMORY * 1000},
    )


def instance_type(
    sku: Sku,
    spec: AKSNodeClassSpec,
    region: str,
    *,
    max_pods: int,
    vm_memory_overhead: float = DEFAULT_VM_MEMORY_OVERHEAD,
) -> InstanceType:
    """The instance type of a supported SKU for one NodeClass (no offerings yet)."""
    values = sku_labels(sku, spec)
    scopes = {"regional"} | ({"zonal"} if sku.available_zones else set())
    requirements = Requirements(
        [
            *Requirements.from_labels({**values, REGION_LABEL: region}).values(),
            Requirement(L.PLACEMENT_SCOPE, False, frozenset(scopes)),
        ]
    )
    return InstanceType(
        sku.name, requirements, capacity(sku, spec, max_pods, vm_memory_overhead), overhead(sku)
    )


def zone_values(sku: Sku, region: str) -> list[str]:
    """Offering zones: ``<region>-<n>`` for every available zone, plus regional ``0``."""
    return [f"{region.lower()}-{z}" for z in sku.available_zones] + [L.REGIONAL_ZONE]


def instance_types(
    skus: Sequence[Sku],
    spec: AKSNodeClassSpec,
    region: str,
    *,
    max_pods: int,
    vm_memory_overhead: float = DEFAULT_VM_MEMORY_OVERHEAD,
) -> list[InstanceType]:
    return [
        instance_type(s, spec, region, max_pods=max_pods, vm_memory_overhead=vm_memory_overhead)
        for s in supported(skus)
        if node_class_rejection(s, spec) is None
    ]
