"""Devices: what DRA drivers publish in ResourceSlices, and what a provider says an instance
type will offer once its node runs (Karpenter's ``cloudprovider.DynamicResources``).

An instance type's :class:`DynamicResources` lists :class:`ResourceSliceTemplate` s, the
slices its node's drivers will publish (always reachable from that node only), and
:class:`AttributeBinding` s, devices that will share an attribute whose value is only known at
run time (the PCI root a GPU and a NIC share), so a claim's ``matchAttribute`` constraint on
such an attribute can be met before the node exists.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from nodewright.api.cel.program import DeviceInput
from nodewright.api.cel.values import Semver
from nodewright.api.quantity import exact_quantity

#: An attribute's value: an int, a bool, a string or a semantic version.
AttributeValue = int | bool | str | Semver


@dataclass(frozen=True, slots=True, order=True)
class DeviceID:
    """A device's identity: its driver, its pool and its name in the pool."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class Device:
    """One device, as a ResourceSlice lists it.

    ``attributes`` and ``capacity`` are keyed by qualified name (``gpu.example.com/model``,
    or ``model``, which takes the driver as its domain); capacities are quantities
    (``"80Gi"``). Devices that share counters with others (partitionable devices) or that
    several claims may share (``allowMultipleAllocations``) are listed but not allocated by
    nodewright.
    """

    name: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    consumes_counters: bool = False

    @property
    def allocatable(self) -> bool:
        """False for the kinds of device nodewright does not allocate."""
        return not (self.allow_multiple_allocations or self.consumes_counters)

    @functools.cached_property
    def exact_capacity(self) -> Mapping[str, Fraction]:
        return {name: exact_quantity(value) for name, value in self.capacity.items()}

    def selector_input(self, driver: str) -> DeviceInput:
        return DeviceInput(
            driver, self.attributes, self.exact_capacity, self.allow_multiple_allocations
        )

    def attribute(self, driver: str, name: str) -> AttributeValue | None:
        """The attribute ``name`` (fully qualified), also found under its bare id when its
        domain is the driver's."""
        value = self.attributes.get(name)
        if value is not None:
            return value
        domain, slash, ident = name.partition("/")
        if slash and domain == driver:
            return self.attributes.get(ident)
        return None


@dataclass(frozen=True)
class ResourceSliceTemplate:
    """The devices one driver will publish on a node of an instance type, in one pool."""

    driver: str
    pool: str
    devices: tuple[Device, ...] = ()


@dataclass(frozen=True)
class AttributeBinding:
    """Devices of an instance type that will share ``attribute`` (a qualified name) at run
    time; two or more, else it binds nothing."""

    attribute: str
    devices: tuple[DeviceID, ...]


@dataclass(frozen=True)
class DynamicResources:
    """The DRA devices an instance type's node will offer (empty: none)."""

    slices: tuple[ResourceSliceTemplate, ...] = ()
    attribute_bindings: tuple[AttributeBinding, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.slices)


def attribute_values_equal(left: AttributeValue, right: AttributeValue) -> bool:
    """Equal values of one type (versions compared as written, as Karpenter does)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, Semver):
        return str(left) == str(right)
    return left == right
