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
class ValidRange:
    """The amounts a capacity request may take: ``min``, then every ``step`` above it (any
    amount when no step), up to ``max`` (no bound when empty)."""

    min: str
    max: str | None = None
    step: str | None = None


@dataclass(frozen=True)
class RequestPolicy:
    """How a shared device's capacity is handed out (``capacity.requestPolicy``): the amount
    a request that names no amount takes (``default``), and the amounts a request is rounded
    up to (``valid_values``, ascending, or ``valid_range``)."""

    default: str | None = None
    valid_values: tuple[str, ...] = ()
    valid_range: ValidRange | None = None


@dataclass(frozen=True)
class CounterConsumption:
    """What a partitionable device uses up of one counter set of its pool."""

    counter_set: str
    counters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterSet:
    """A budget that the devices of a pool draw on (``sharedCounters``): counter -> amount."""

    name: str
    counters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Device:
    """One device, as a ResourceSlice lists it.

    ``attributes`` and ``capacity`` are keyed by qualified name (``gpu.example.com/model``,
    or ``model``, which takes the driver as its domain); capacities are quantities
    (``"80Gi"``). A device with ``allow_multiple_allocations`` is shared: each allocation
    takes a share of its capacity (``request_policies`` say how much), until none is left. A
    partitionable device draws on its pool's counter sets (``consumes_counters``): it can be
    allocated only while they last.
    """

    name: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    consumes_counters: tuple[CounterConsumption, ...] = ()
    #: Capacity name -> its request policy (shared devices only).
    request_policies: Mapping[str, RequestPolicy] = field(default_factory=dict)

    @functools.cached_property
    def exact_capacity(self) -> Mapping[str, Fraction]:
        return {name: exact_quantity(value) for name, value in self.capacity.items()}

    @functools.cached_property
    def exact_counters(self) -> tuple[tuple[str, str, Fraction], ...]:
        """(counter set, counter, amount) for each counter the device uses up."""
        return tuple(
            (use.counter_set, name, exact_quantity(value))
            for use in self.consumes_counters
            for name, value in use.counters.items()
        )

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
    #: The counter sets the pool's partitionable devices draw on.
    shared_counters: tuple[CounterSet, ...] = ()


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
