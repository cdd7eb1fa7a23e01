"""Instance types from DescribeInstanceTypes, derived as Karpenter's AWS provider does, and
:class:`InstanceTypeProvider`, which discovers them (and their zones) every 12 hours.

Building the region's ~700 types for a class is the costly part, and its inputs rarely
change: the provider keeps each class's built types and builds again only what an input
change touches. A type's requirements, capacity and overhead depend on the discovered data
and the class's shaping fields (:func:`shape_key`); its zone IDs and partitions on the
class's subnets and placement group, which are put on the built types without building them
again.

Labels follow ``computeRequirements`` (every ``karpenter.k8s.aws/*`` key is defined; an
unknown value is DoesNotExist), capacity ``computeCapacity`` (ENI-limited pods, VM memory
overhead, -64 MiB on arm64) and overhead ``kubeReservedResources`` / ``evictionThreshold``.
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nodewright.plugin import (
    ARCH_LABEL,
    INSTANCE_TYPE_LABEL,
    OS_LABEL,
    REGION_LABEL,
    WINDOWS_BUILD_LABEL,
    InstanceType,
    InstanceTypeOverhead,
    Requirement,
    Requirements,
    ResourceList,
    TemporaryProviderError,
    parse_resources,
)
from nodewright_aws import labels as L
from nodewright_aws.clients import AWSClients, MissingConfigurationError, aws_errors
from nodewright_aws.compatibility import compatible
from nodewright_aws.launchoptions import EFA_ONLY, NetworkInterface
from nodewright_aws.nodeclass import EC2NodeClass, EC2NodeClassSpec
from nodewright_aws.options import Settings
from nodewright_aws.placementgroup import PlacementGroup, partition_requirement

MIB = 1024 * 1024
GIB = 1024 * MIB
_TYPE_NAME = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")
_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
_WINDOWS_BUILDS = {
    "Windows2019": "10.0.17763",
    "Windows2022": "10.0.20348",
    "Windows2025": "10.0.26100",
}
#: The family's default root/ephemeral volume size (Karpenter's resolver defaults).
DEFAULT_EPHEMERAL_STORAGE = 20 * GIB
#: How often DescribeInstanceTypes and DescribeInstanceTypeOfferings are read again.
DISCOVERY_REFRESH = timedelta(hours=12)
#: EC2NodeClass spec fields no instance type's requirements, capacity or overhead reads,
#: nor which types the class can launch: a change to one builds nothing again. (The resolved
#: placement group does bear on types; it keys them apart from the spec.) A field missing
#: here, a new one say, is read as shaping: it costs a rebuild, never a stale type.
NOT_SHAPING = frozenset(
    {
        "subnet_selector_terms",
        "security_group_selector_terms",
        "capacity_reservation_selector_terms",
        "placement_group_selector",
        "associate_public_ip_address",
        "user_data",
        "role",
        "instance_profile",
        "tags",
        "ip_prefix_count",
        "detailed_monitoring",
        "metadata_options",
        "context",
    }
)
#: How many sets of built types (one per shaping input) are kept.
BUILT_SETS = 16
#: Serials of discovered data: each refresh that finds other data takes the next one.
_DATA_VERSIONS = itertools.count(1)
#: (label, value) -> its requirement, shared by every type that has it (see requirements_for).
_LABEL_REQUIREMENTS: dict[tuple[str, str | None], Requirement] = {}
_LABEL_REQUIREMENTS_KEPT = 16384
_TENANCY = Requirement.of(L.INSTANCE_TENANCY, "In", ["default", "dedicated"])


@dataclass(frozen=True)
class CapacitySettings:
    """Operator-level knobs of the capacity arithmetic."""

    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0


def kebab(text: str) -> str:
    return text.lower().replace(" ", "-")


def architecture(info: Mapping[str, Any]) -> str | None:
    archs = info.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
    return _ARCH.get(archs[0]) if archs else None


def eni_limited_pods(
    info: Mapping[str, Any],
    reserved_enis: int = 0,
    interfaces: Sequence[NetworkInterface] | None = None,
) -> int:
    """(ENIs of the default card - reserved - the class's efa-only ones on card 0) x
    (IPv4 per ENI - 1) + 2; 0 when no ENI is left for pods."""
    network = info.get("NetworkInfo", {})
    default_card = network.get("DefaultNetworkCardIndex", 0)
    enis = network.get("MaximumNetworkInterfaces", 0)
    for card in network.get("NetworkCards", []):
        if card.get("NetworkCardIndex") == default_card:
            enis = card.get("MaximumNetworkInterfaces", enis)
    efa_only = sum(
        1 for i in interfaces or () if i.network_card_index == 0 and i.interface_type == EFA_ONLY
    )
    usable = int(enis) - reserved_enis - efa_only
    if usable <= 0:
        return 0
    ips = network.get("Ipv4AddressesPerInterface", 0)
    return usable * (int(ips) - 1) + 2


def network_bandwidth_mbps(info: Mapping[str, Any]) -> int | None:
    """Baseline Mbps. Karpenter reads a table scraped from the EC2 docs; the same baseline
    figures are in DescribeInstanceTypes' ``NetworkCards[].BaselineBandwidthInGbps``."""
    cards = info.get("NetworkInfo", {}).get("NetworkCards", [])
    values = [c.get("BaselineBandwidthInGbps") for c in cards]
    if not values or any(v is None for v in values):
        return None
    return round(float(sum(values)) * 1000)


def requirements_for(
    info: Mapping[str, Any], region: str, ami_family: str = "AL2023"
) -> Requirements:
    """Every label an instance type defines; unknown values become DoesNotExist."""
    name: str = info["InstanceType"]
    family, _, size = name.partition(".")
    values: dict[str, str | None] = dict.fromkeys(L.INSTANCE_TYPE_LABELS)
    arch = architecture(info)
    windows = ami_family.startswith("Windows")
    values[INSTANCE_TYPE_LABEL] = name
    values[ARCH_LABEL] = arch
    values[OS_LABEL] = ("windows" if arch == "amd64" else None) if windows else "linux"
    values[REGION_LABEL] = region
    values[WINDOWS_BUILD_LABEL] = _WINDOWS_BUILDS.get(ami_family)
    match = _TYPE_NAME.match(name)
    if match:
        values[L.INSTANCE_CATEGORY] = match.group(1)
        values[L.INSTANCE_GENERATION] = match.group(3)
    values[L.INSTANCE_FAMILY] = family
    values[L.INSTANCE_SIZE] = size or None
    values[L.INSTANCE_CAPABILITY_FLEX] = "true" if "-flex" in family else "false"
    values[L.INSTANCE_CPU] = str(info.get("VCpuInfo", {}).get("DefaultVCpus", 0))
    processor = info.get("ProcessorInfo", {})
    if processor.get("Manufacturer"):
        values[L.INSTANCE_CPU_MANUFACTURER] = kebab(processor["Manufacturer"])
    if processor.get("SustainedClockSpeedInGhz") is not None:
        values[L.INSTANCE_CPU_SUSTAINED_CLOCK] = str(
            round(processor["SustainedClockSpeedInGhz"] * 1000)
        )
    values[L.INSTANCE_MEMORY] = str(info.get("MemoryInfo", {}).get("SizeInMiB", 0))
    ebs = info.get("EbsInfo", {})
    if ebs.get("EbsOptimizedSupport") == "default" and ebs.get("EbsOptimizedInfo"):
        values[L.INSTANCE_EBS_BANDWIDTH] = str(ebs["EbsOptimizedInfo"]["MaximumBandwidthInMbps"])
    bandwidth = network_bandwidth_mbps(info)
    if bandwidth is not None:
        values[L.INSTANCE_NETWORK_BANDWIDTH] = str(bandwidth)
    storage = info.get("InstanceStorageInfo")
    if storage and storage.get("NvmeSupport") != "unsupported":
        values[L.INSTANCE_LOCAL_NVME] = str(storage.get("TotalSizeInGB", 0))
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    if len(gpus) == 1:
        gpu = gpus[0]
        values[L.INSTANCE_GPU_NAME] = kebab(gpu["Name"])
        values[L.INSTANCE_GPU_MANUFACTURER] = kebab(gpu["Manufacturer"])
        values[L.INSTANCE_GPU_COUNT] = str(gpu["Count"])
        values[L.INSTANCE_GPU_MEMORY] = str(gpu["MemoryInfo"]["SizeInMiB"])
    inference = info.get("InferenceAcceleratorInfo", {}).get("Accelerators", [])
    neuron = info.get("NeuronInfo", {}).get("NeuronDevices", [])
    if len(inference) == 1 and not neuron:
        values[L.INSTANCE_ACCELERATOR_NAME] = kebab(inference[0]["Name"])
        values[L.INSTANCE_ACCELERATOR_MANUFACTURER] = kebab(inference[0]["Manufacturer"])
        values[L.INSTANCE_ACCELERATOR_COUNT] = str(inference[0]["Count"])
    elif len(neuron) == 1:
        values[L.INSTANCE_ACCELERATOR_NAME] = kebab(neuron[0]["Name"])
        values[L.INSTANCE_ACCELERATOR_MANUFACTURER] = "aws"
        values[L.INSTANCE_ACCELERATOR_COUNT] = str(neuron[0]["Count"])
    if info.get("Hypervisor"):
        values[L.INSTANCE_HYPERVISOR] = info["Hypervisor"]
    values[L.INSTANCE_ENCRYPTION_IN_TRANSIT] = (
        "true" if info.get("NetworkInfo", {}).get("EncryptionInTransitSupported") else "false"
    )
    items: list[Requirement] = [
        _label_requirement(key, value) for key, value in values.items() if key != L.INSTANCE_TENANCY
    ]
    items.append(_TENANCY)
    return Requirements(items)


def _label_requirement(key: str, value: str | None) -> Requirement:
    """``key In [value]``, or ``key DoesNotExist`` for None: one shared requirement per pair
    (a catalog of a thousand types repeats the same few hundred; requirements are immutable)."""
    found = _LABEL_REQUIREMENTS.get((key, value))
    if found is None:
        found = (
            Requirement.of(key, "In", [value])
            if value is not None
            else Requirement.of(key, "DoesNotExist")
        )
        if len(_LABEL_REQUIREMENTS) >= _LABEL_REQUIREMENTS_KEPT:
            _LABEL_REQUIREMENTS.clear()
        _LABEL_REQUIREMENTS[(key, value)] = found
    return found


def ephemeral_storage(spec: EC2NodeClassSpec | None, info: Mapping[str, Any]) -> int:
    """Bytes of ephemeral storage, in Karpenter's order of precedence."""
    if spec is None:
        return DEFAULT_EPHEMERAL_STORAGE
    if spec.instance_store_policy == "RAID0" and info.get("InstanceStorageInfo"):
        return int(info["InstanceStorageInfo"].get("TotalSizeInGB", 0)) * 1000**3
    mappings = spec.block_device_mappings
    chosen = next((m for m in mappings if m.root_volume), None)
    family = spec.effective_ami_family()
    if chosen is None and family == "Custom" and mappings:
        chosen = mappings[-1]
    if chosen is None:
        device = "/dev/xvdb" if family == "Bottlerocket" else "/dev/xvda"
        chosen = next((m for m in mappings if m.device_name == device), None)
    if chosen is not None and chosen.ebs is not None and chosen.ebs.volume_size:
        return parse_resources({"storage": chosen.ebs.volume_size})["storage"] // 1000
    return DEFAULT_EPHEMERAL_STORAGE


def kube_reserved_cpu_millis(vcpus: int) -> int:
    """6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% above."""
    millis = vcpus * 1000
    tiers = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, math.inf, 0.0025))
    total = 0.0
    for start, end, share in tiers:
        if millis > start:
            total += (min(millis, end) - start) * share
    return int(total)


def _percent_or_quantity(value: str, capacity: int) -> int:
    if value.endswith("%"):
        return (
            int(capacity * (1 - float(value[:-1]) / 100))
            if value == "100%"
            else int(capacity * float(value[:-1]) / 100)
        )
    return parse_resources({"x": value})["x"]


def build_instance_type(
    info: Mapping[str, Any],
    region: str,
    spec: EC2NodeClassSpec | None = None,
    settings: CapacitySettings = CapacitySettings(),
) -> InstanceType:
    """One InstanceType with capacity and overhead as Karpenter computes them."""
    family = spec.effective_ami_family() if spec is not None else "AL2023"
    kubelet = spec.kubelet if spec is not None else None
    interfaces = spec.network_interfaces if spec is not None else None
    vcpus = int(info.get("VCpuInfo", {}).get("DefaultVCpus", 0))
    memory_mib = int(info.get("MemoryInfo", {}).get("SizeInMiB", 0))
    arch = architecture(info)
    if arch == "arm64":
        memory_mib -= 64
    memory_mib -= math.ceil(memory_mib * settings.vm_memory_overhead_percent)
    eni_pods = eni_limited_pods(info, settings.reserved_enis, interfaces)
    if kubelet is not None and kubelet.max_pods is not None:
        pods = kubelet.max_pods
    elif family.startswith("Windows"):
        pods = 110
    else:
        pods = eni_pods
    if kubelet is not None and kubelet.pods_per_core and family != "Bottlerocket":
        pods = min(pods, kubelet.pods_per_core * vcpus)
    storage = ephemeral_storage(spec, info)
    capacity: ResourceList = {
        "cpu": vcpus * 1000,
        "memory": memory_mib * MIB * 1000,
        "pods": pods * 1000,
        "ephemeral-storage": storage * 1000,
    }
    for resource, count in accelerators(info, interfaces).items():
        capacity[resource] = count * 1000
    # AL2, AL2023 and Custom size kube-reserved memory by ENI density, even with maxPods.
    memory_pods = (
        eni_limited_pods(info, 0, interfaces) if family in ("AL2", "AL2023", "Custom") else pods
    )
    kube_reserved: ResourceList = {
        "cpu": kube_reserved_cpu_millis(vcpus),
        "memory": (11 * memory_pods + 255) * MIB * 1000,
        "ephemeral-storage": GIB * 1000,
    }
    system_reserved: ResourceList = {}
    if kubelet is not None:
        kube_reserved.update(parse_resources(kubelet.kube_reserved or {}))
        system_reserved.update(parse_resources(kubelet.system_reserved or {}))
    eviction: ResourceList = {
        "memory": 100 * MIB * 1000,
        "ephemeral-storage": math.ceil(storage * 0.1) * 1000,
    }
    hard = (kubelet.eviction_hard or {}) if kubelet is not None else {}
    if "memory.available" in hard:
        eviction["memory"] = _percent_or_quantity(hard["memory.available"], capacity["memory"])
    if "nodefs.available" in hard:
        eviction["ephemeral-storage"] = _percent_or_quantity(
            hard["nodefs.available"], capacity["ephemeral-storage"]
        )
    return InstanceType(
        name=info["InstanceType"],
        requirements=requirements_for(info, region, family),
        capacity=capacity,
        overhead=InstanceTypeOverhead(
            kube_reserved=kube_reserved,
            system_reserved=system_reserved,
            eviction_threshold=eviction,
        ),
    )


def accelerators(
    info: Mapping[str, Any], interfaces: Sequence[NetworkInterface] | None = None
) -> dict[str, int]:
    """Extended resources: GPUs by manufacturer, Neuron devices and cores, EFA (the type's
    EFA interfaces, or the class's efa-only ones when it lists its network interfaces)."""
    found: dict[str, int] = {}
    names = {"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu", "Habana": "habana.ai/gaudi"}
    for gpu in info.get("GpuInfo", {}).get("Gpus", []):
        resource = names.get(gpu.get("Manufacturer", ""))
        if resource:
            found[resource] = found.get(resource, 0) + int(gpu.get("Count", 0))
    for device in info.get("NeuronInfo", {}).get("NeuronDevices", []):
        count = int(device.get("Count", 0))
        found["aws.amazon.com/neuron"] = found.get("aws.amazon.com/neuron", 0) + count
        cores = int(device.get("CoreInfo", {}).get("Count", 0))
        found["aws.amazon.com/neuroncore"] = (
            found.get("aws.amazon.com/neuroncore", 0) + count * cores
        )
    efa = info.get("NetworkInfo", {}).get("EfaInfo", {}).get("MaximumEfaInterfaces")
    if interfaces is not None:
        efa = sum(1 for i in interfaces if i.interface_type == EFA_ONLY)
    if efa:
        found[L.EFA_RESOURCE] = int(efa)
    return {k: v for k, v in found.items() if v > 0}


def usable(info: Mapping[str, Any]) -> bool:
    """Karpenter's discovery filters: HVM, x86_64 or arm64."""
    return (
        "hvm" in info.get("SupportedVirtualizationTypes", ["hvm"])
        and architecture(info) is not None
    )


def capacity_types(info: Mapping[str, Any]) -> tuple[str, ...]:
    classes: Iterable[str] = info.get("SupportedUsageClasses", ["on-demand"])
    return tuple(c for c in ("spot", "on-demand") if c in classes)


@dataclass
class InstanceTypeData:
    """Raw DescribeInstanceTypes / DescribeInstanceTypeOfferings data."""

    infos: dict[str, dict[str, Any]] = field(default_factory=dict)
    zones: dict[str, frozenset[str]] = field(default_factory=dict)
    refreshed_at: datetime | None = None
    #: Which discovered data this is: equal versions, equal data.
    version: int = 0


def shape_key(spec: EC2NodeClassSpec | None) -> str:
    """What of a class's spec shapes its instance types (AMI family, kubelet, block devices,
    instance store, network interfaces, CPU options, connection tracking), as text; "" for
    no class (a type's defaults)."""
    return "" if spec is None else spec.model_dump_json(exclude=set(NOT_SHAPING))


@dataclass
class _Listed:
    """A class's last list: what it was made from, and the types."""

    key: tuple[object, ...]
    types: list[InstanceType]


class InstanceTypeProvider:
    """The region's usable instance types (narrowed by ``aws.instance-types``) and the zones
    offering each, read every 12 hours; built per EC2NodeClass on demand."""

    def __init__(
        self,
        clients: AWSClients,
        settings: Settings,
        zone_ids: Callable[[EC2NodeClass], Mapping[str, str]],
        now: Callable[[], datetime],
        placement_group: Callable[[EC2NodeClass], PlacementGroup | None] = lambda _: None,
    ) -> None:
        self.clients = clients
        self.settings = settings
        #: Zone name to zone ID of a class's subnets.
        self.zone_ids = zone_ids
        self.now = now
        #: The class's resolved placement group (None: none, or not known now).
        self.placement_group = placement_group
        self.data = InstanceTypeData()
        #: (data version, shape key) -> type name -> the type as built (no zone IDs yet).
        self._built: dict[tuple[int, str], dict[str, InstanceType]] = {}
        #: EC2NodeClass name -> its last list.
        self._listed: dict[str, _Listed] = {}
        #: How many instance types were built (each is built once per input that shapes it).
        self.builds = 0

    def refresh(self, force: bool = False) -> InstanceTypeData:
        now = self.now()
        last = self.data.refreshed_at
        if not force and last is not None and now - last < DISCOVERY_REFRESH:
            return self.data
        ec2 = self.clients.ec2
        filters: list[dict[str, Any]] = [
            {"Name": "supported-virtualization-type", "Values": ["hvm"]},
            {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
        ]
        if self.settings.instance_types:
            filters.append({"Name": "instance-type", "Values": list(self.settings.instance_types)})
        infos: dict[str, dict[str, Any]] = {}
        zones: dict[str, set[str]] = {}
        with aws_errors("discovering instance types"):
            for page in ec2.get_paginator("describe_instance_types").paginate(
                Filters=filters,
                PaginationConfig={"PageSize": 100},
            ):
                for info in page.get("InstanceTypes", []):
                    if usable(info) and self._wanted(info["InstanceType"]):
                        infos[info["InstanceType"]] = dict(info)
            # All offerings, narrowed here: not every EC2 implementation (moto) honours
            # wildcards in the instance-type filter of this call.
            for page in ec2.get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone",
                PaginationConfig={"PageSize": 1000},
            ):
                for offering in page.get("InstanceTypeOfferings", []):
                    if offering["InstanceType"] not in infos:
                        continue
                    zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        found = {k: frozenset(v) for k, v in zones.items()}
        same = infos == self.data.infos and found == self.data.zones
        version = self.data.version if same else next(_DATA_VERSIONS)
        self.data = InstanceTypeData(infos, found, now, version)
        if not same:
            self._built.clear()
            self._listed.clear()
        return self.data

    def _wanted(self, name: str) -> bool:
        patterns = self.settings.instance_types
        return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)

    def spot_price_types(self) -> Iterable[str]:
        """The types to ask spot prices for: the discovered ones when ``aws.instance-types``
        narrows them, else none (every type)."""
        return self.data.infos.keys() if self.settings.instance_types else ()

    def list(self, node_class: EC2NodeClass) -> list[InstanceType]:
        """The class's instance types (those it can launch: see :mod:`compatibility`), each
        with the zone IDs of the class's subnets and, in a partition placement group, the
        group's partitions. The same list as last time while none of its inputs changed."""
        try:
            data = self.refresh()
        except MissingConfigurationError as error:
            raise TemporaryProviderError(str(error)) from None
        zone_ids = self.zone_ids(node_class)
        group = self.placement_group(node_class)
        shape = shape_key(node_class.spec)
        key = (data.version, shape, tuple(sorted(zone_ids.items())), group)
        listed = self._listed.get(node_class.name)
        if listed is not None and listed.key == key:
            return list(listed.types)
        built = self._built_set(data.version, shape)
        partitions = partition_requirement(group)
        types = []
        for name in sorted(data.infos):
            info = data.infos[name]
            if not compatible(info, node_class.spec, group):
                continue
            base = self._built_type(built, name, info, node_class.spec)
            ids = sorted(zone_ids[z] for z in data.zones.get(name, ()) if z in zone_ids)
            extra = [
                Requirement.of(L.ZONE_ID, "In", ids)
                if ids
                else Requirement.of(L.ZONE_ID, "DoesNotExist")
            ]
            if partitions is not None:
                extra.append(partitions)
            types.append(
                InstanceType(base.name, base.requirements.add(*extra), base.capacity, base.overhead)
            )
        self._listed[node_class.name] = _Listed(key, types)
        return list(types)

    def _built_set(self, version: int, shape: str) -> dict[str, InstanceType]:
        """The types built so far for this data and shape (the last ``BUILT_SETS`` kept)."""
        key = (version, shape)
        found = self._built.pop(key, None)
        if found is None:
            found = {}
            while len(self._built) >= BUILT_SETS:
                del self._built[next(iter(self._built))]
        self._built[key] = found  # most recently used last
        return found

    def _built_type(
        self,
        built: dict[str, InstanceType],
        name: str,
        info: Mapping[str, Any],
        spec: EC2NodeClassSpec | None,
    ) -> InstanceType:
        """Type ``name`` from ``built`` (a :meth:`_built_set`), built there first if it is
        not yet."""
        found = built.get(name)
        if found is None:
            self.builds += 1
            settings = CapacitySettings(
                self.settings.vm_memory_overhead_percent, self.settings.reserved_enis
            )
            found = built[name] = build_instance_type(info, self.clients.region, spec, settings)
        return found

    def build(self, name: str, node_class: EC2NodeClass | None = None) -> InstanceType | None:
        """A type as the class shapes it (for describing a running instance): the capacity and
        overhead it had at launch (the class's network interfaces, kubelet and AMI family
        bear on both). Without the class (deleted, or an instance of another tool), the type's
        defaults. None for a type this region does not list."""
        try:
            data = self.refresh()
        except MissingConfigurationError:
            data = self.data
        info = data.infos.get(name)
        if info is None:
            return None
        spec = node_class.spec if node_class is not None else None
        return self._built_type(self._built_set(data.version, shape_key(spec)), name, info, spec)
