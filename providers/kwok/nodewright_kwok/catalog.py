"""The instance types the KWOK provider sells: Karpenter's generated catalog, or a user's file.

The default catalog reproduces ``kwok/tools/gen_instance_types.go``: 144 shapes, four zones,
spot at 70% of the on-demand price, so spot is always cheaper. A user file replaces it; its
format is Karpenter's ``instance_types.json`` (see the provider's README), in JSON or YAML.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodewright.plugin import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPES,
    CPU,
    INSTANCE_TYPE_LABEL,
    MEMORY,
    OS_LABEL,
    PODS,
    ZONE_LABEL,
    DocumentError,
    DynamicResources,
    InstanceType,
    InstanceTypeOverhead,
    Offering,
    QuantityError,
    Requirement,
    RequirementError,
    Requirements,
    Reservation,
    ResourceList,
    format_quantity,
    parse_quantity,
    read_document,
    resources,
)
from nodewright_kwok.devices import parse_dynamic_resources
from nodewright_kwok.labels import (
    INSTANCE_CPU_LABEL,
    INSTANCE_FAMILY_LABEL,
    INSTANCE_MEMORY_LABEL,
    INSTANCE_SIZE_LABEL,
    RESERVATION_ID_LABEL,
)

ZONES = ("test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d")
CPU_COUNTS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)
#: GiB of memory per CPU, and the family letter it gives the type's name.
MEMORY_FAMILIES = ((2, "c"), (4, "s"), (8, "m"))
OPERATING_SYSTEMS = ("linux", "windows")
ARCHITECTURES = ("amd64", "arm64")

#: What a KWOK node keeps for itself, on every type.
OVERHEAD = InstanceTypeOverhead(kube_reserved=resources(cpu="100m", memory="10Mi"))
#: Pods a node runs when the catalog does not say (the Kubernetes default).
DEFAULT_MAX_PODS = 110
#: Spot costs this fraction of on-demand.
SPOT_DISCOUNT = 0.7

# Names in AWS's ``family.size`` form give their size; others fall back to the CPU count.
_AWS_NAME = re.compile(r"^\w+\.(nano|micro|small|medium|large|\d*xlarge|metal)$")
_FAMILY_DELIMITER = re.compile(r"[.-]")


def on_demand_price(cpu: int, memory_bytes: int) -> float:
    """Karpenter KWOK's price formula: 0.025 per CPU plus 0.001 per GB (10^9 bytes)."""
    return 0.025 * cpu + 0.001 * memory_bytes / 1e9


def instance_size(name: str, cpu: str) -> str:
    match = _AWS_NAME.match(name)
    return match[1] if match else cpu


def instance_family(name: str) -> str:
    parts = _FAMILY_DELIMITER.split(name, maxsplit=1)
    return parts[0] if len(parts) == 2 else name[:1]


@dataclass(frozen=True)
class Catalog:
    """The provider's instance types, with their offerings, in catalog order."""

    instance_types: tuple[InstanceType, ...]
    #: Where the catalog came from: ``"default"`` or a file path.
    source: str = "default"
    _by_name: Mapping[str, InstanceType] = field(init=False, repr=False, compare=False)
    _sizes: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {it.name: it for it in self.instance_types})
        sizes: dict[str, int] = {}
        for instance_type in self.instance_types:
            for offering in instance_type.offerings:
                if offering.reservation is not None:
                    reservation = offering.reservation
                    sizes[reservation.id] = min(
                        sizes.get(reservation.id, reservation.capacity), reservation.capacity
                    )
        object.__setattr__(self, "_sizes", sizes)

    def reservations(self) -> dict[str, int]:
        """How many instances each capacity reservation holds in all."""
        return dict(self._sizes)

    def get(self, name: str) -> InstanceType | None:
        return self._by_name.get(name)

    def __len__(self) -> int:
        return len(self.instance_types)


def build_instance_type(
    name: str,
    architecture: str,
    operating_systems: Sequence[str],
    capacity: ResourceList,
    offerings: Sequence[Offering],
    *,
    devices: DynamicResources | None = None,
) -> InstanceType:
    """An instance type with the labels Karpenter's KWOK provider derives from its shape."""
    capacity = {PODS: DEFAULT_MAX_PODS * 1000, **capacity}
    cpu = format_quantity(capacity.get(CPU, 0), CPU)
    memory = format_quantity(capacity.get(MEMORY, 0), MEMORY)
    requirements = Requirements(
        [
            *Requirements.from_labels(
                {
                    INSTANCE_TYPE_LABEL: name,
                    ARCH_LABEL: architecture,
                    INSTANCE_SIZE_LABEL: instance_size(name, cpu),
                    INSTANCE_FAMILY_LABEL: instance_family(name),
                    INSTANCE_CPU_LABEL: cpu,
                    INSTANCE_MEMORY_LABEL: memory,
                }
            ).values(),
            Requirement(OS_LABEL, False, frozenset(operating_systems)),
        ]
    )
    instance_type = InstanceType(
        name, requirements, capacity, OVERHEAD, dynamic_resources=devices or DynamicResources()
    )
    return instance_type.with_offerings(offerings)


def default_catalog() -> Catalog:
    """The 144 generic types of Karpenter's KWOK provider, e.g. ``c-4x-amd64-linux``."""
    types: list[InstanceType] = []
    for cpu in CPU_COUNTS:
        for gib_per_cpu, family in MEMORY_FAMILIES:
            for os in OPERATING_SYSTEMS:
                for arch in ARCHITECTURES:
                    memory = f"{cpu * gib_per_cpu}Gi"
                    capacity = resources(
                        cpu=cpu,
                        memory=memory,
                        pods=min(16 * cpu, 1024),
                        ephemeral_storage="20Gi",
                    )
                    price = on_demand_price(cpu, capacity[MEMORY] // 1000)
                    offerings = [
                        Offering(zone, capacity_type, price * SPOT_DISCOUNT if spot else price)
                        for zone in ZONES
                        for spot, capacity_type in ((True, "spot"), (False, "on-demand"))
                    ]
                    name = f"{family}-{cpu}x-{arch}-{os}"
                    types.append(build_instance_type(name, arch, [os], capacity, offerings))
    return Catalog(tuple(types))


# -- user files ---------------------------------------------------------------------------


class CatalogFileError(ValueError):
    """A catalog file that cannot be used; the message names the file and the entry."""


def load_catalog(path: str | Path) -> Catalog:
    """Read a catalog file (JSON or YAML: a list of instance types in Karpenter's format),
    as the core reads every file of user input: a regular file, within its limits."""
    try:
        data = read_document(Path(path))
    except DocumentError as error:
        raise CatalogFileError(str(error)) from None
    return parse_catalog(data, str(path))


def parse_catalog(data: Any, source: str = "<catalog>") -> Catalog:
    """Build a catalog from parsed file contents; errors name ``source`` and the entry."""
    if not isinstance(data, list) or not data:
        raise CatalogFileError(f"{source}: expected a non-empty list of instance types")
    types: list[InstanceType] = []
    seen: set[str] = set()
    lines: list[int] = getattr(data, "item_lines", [])  # read_document's, from YAML
    for index, entry in enumerate(data):
        where = f"{source}:{lines[index]}" if index < len(lines) else source
        label = f"instance type #{index}"
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            label += f" ({entry['name']!r})"
        try:
            instance_type = _parse_instance_type(entry)
        except (ValueError, TypeError) as error:
            raise CatalogFileError(f"{where}: {label}: {error}") from error
        if instance_type.name in seen:
            raise CatalogFileError(f"{where}: {label}: duplicate name")
        seen.add(instance_type.name)
        types.append(instance_type)
    return Catalog(tuple(types), source)


_TYPE_FIELDS = {
    "name": "name",
    "architecture": "architecture",
    "operatingsystems": "operatingSystems",
    "resources": "resources",
    "offerings": "offerings",
    "dynamicresources": "dynamicResources",
}
_OFFERING_FIELDS = {
    "price": "price",
    "available": "available",
    "requirements": "requirements",
    "zone": "zone",
    "capacitytype": "capacityType",
    "labels": "labels",
    "reservationid": "reservationID",
    "reservationcapacity": "reservationCapacity",
}


def _fields(entry: Any, known: Mapping[str, str], what: str) -> dict[str, Any]:
    """The entry's fields by canonical name; Go matches JSON keys case-insensitively, so do we."""
    if not isinstance(entry, dict):
        raise TypeError(f"{what} must be a mapping, got {type(entry).__name__}")
    fields: dict[str, Any] = {}
    for key, value in entry.items():
        canonical = known.get(str(key).lower())
        if canonical is None:
            raise ValueError(f"unknown field {key!r} (known: {', '.join(known.values())})")
        fields[canonical] = value
    return fields


def _parse_instance_type(entry: Any) -> InstanceType:
    fields = _fields(entry, _TYPE_FIELDS, "an instance type")
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("'name' is required")
    architecture = fields.get("architecture", "amd64")
    if not isinstance(architecture, str) or not architecture:
        raise ValueError("'architecture' must be a string such as 'amd64'")
    systems = fields.get("operatingSystems", ["linux"])
    if not isinstance(systems, list) or not systems or not all(isinstance(s, str) for s in systems):
        raise ValueError("'operatingSystems' must be a non-empty list such as ['linux']")
    raw_resources = fields.get("resources")
    if not isinstance(raw_resources, dict):
        raise ValueError("'resources' is required (a mapping such as {cpu: '4', memory: '16Gi'})")
    capacity: ResourceList = {}
    for resource, quantity in raw_resources.items():
        try:
            capacity[str(resource)] = parse_quantity(quantity)
        except QuantityError as error:
            raise ValueError(f"resources.{resource}: {error}") from error
    for required in (CPU, MEMORY):
        if capacity.get(required, 0) <= 0:
            raise ValueError(f"resources.{required} is required and must be positive")
    raw_offerings = fields.get("offerings")
    if not isinstance(raw_offerings, list) or not raw_offerings:
        raise ValueError("'offerings' must be a non-empty list")
    offerings = []
    for position, raw in enumerate(raw_offerings):
        try:
            offerings.append(_parse_offering(raw))
        except (ValueError, TypeError) as error:
            raise ValueError(f"offering #{position}: {error}") from error
    devices = None
    if fields.get("dynamicResources") is not None:
        devices = parse_dynamic_resources(fields["dynamicResources"])
    return build_instance_type(name, architecture, systems, capacity, offerings, devices=devices)


def _parse_offering(raw: Any) -> Offering:
    fields = _fields(raw, _OFFERING_FIELDS, "an offering")
    price = fields.get("price")
    if isinstance(price, bool) or not isinstance(price, int | float) or price < 0:
        raise ValueError("'price' is required and must be a non-negative number")
    available = fields.get("available", True)
    if not isinstance(available, bool):
        raise ValueError("'available' must be true or false")
    labels: dict[str, str] = {}
    raw_labels = fields.get("labels", {})
    if not isinstance(raw_labels, dict):
        raise ValueError("'labels' must be a mapping")
    labels.update({str(k): str(v) for k, v in raw_labels.items()})
    for requirement in _parse_requirements(fields.get("requirements", [])):
        if requirement.complement or len(requirement.values) != 1:
            raise ValueError(
                f"requirement {requirement} must be 'In' with exactly one value "
                "(an offering is one zone and one capacity type)"
            )
        labels[requirement.key] = next(iter(requirement.values))
    if "zone" in fields:
        labels[ZONE_LABEL] = str(fields["zone"])
    if "capacityType" in fields:
        labels[CAPACITY_TYPE_LABEL] = str(fields["capacityType"])
    zone = labels.pop(ZONE_LABEL, "")
    capacity_type = labels.pop(CAPACITY_TYPE_LABEL, "")
    if not zone:
        raise ValueError(f"no zone (set 'zone' or a {ZONE_LABEL} requirement)")
    if capacity_type not in CAPACITY_TYPES:
        raise ValueError(
            f"capacity type {capacity_type!r} must be one of {', '.join(CAPACITY_TYPES)} "
            f"(set 'capacityType' or a {CAPACITY_TYPE_LABEL} requirement)"
        )
    reservation = _parse_reservation(fields, capacity_type)
    return Offering(zone, capacity_type, float(price), available, labels, reservation)


def _parse_reservation(fields: Mapping[str, Any], capacity_type: str) -> Reservation | None:
    """A reserved offering's capacity reservation: ``reservationID`` and how many instances
    it holds in all (``reservationCapacity``)."""
    reservation_id = fields.get("reservationID")
    capacity = fields.get("reservationCapacity")
    if reservation_id is None and capacity is None:
        if capacity_type == CAPACITY_TYPE_RESERVED:
            raise ValueError("a reserved offering needs 'reservationID' and 'reservationCapacity'")
        return None
    if capacity_type != CAPACITY_TYPE_RESERVED:
        raise ValueError(
            f"'reservationID' and 'reservationCapacity' belong on a reserved offering, "
            f"not {capacity_type!r}"
        )
    if not isinstance(reservation_id, str) or not reservation_id:
        raise ValueError("'reservationID' must be a non-empty string")
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
        raise ValueError("'reservationCapacity' must be a whole number, 0 or more")
    return Reservation(reservation_id, RESERVATION_ID_LABEL, capacity)


def _parse_requirements(raw: Any) -> list[Requirement]:
    if not isinstance(raw, list):
        raise ValueError("'requirements' must be a list of {key, operator, values}")
    parsed = []
    for item in raw:
        if not isinstance(item, dict):
            raise ValueError("each requirement must be a mapping with key, operator, values")
        values = item.get("values", [])
        if not isinstance(values, list):
            raise ValueError(f"requirement {item.get('key')!r}: 'values' must be a list")
        try:
            parsed.append(
                Requirement.of(str(item.get("key", "")), str(item.get("operator", "")), values)
            )
        except RequirementError as error:
            raise ValueError(str(error)) from error
    return parsed
