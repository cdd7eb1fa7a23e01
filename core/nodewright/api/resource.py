"""``resource.k8s.io/v1``: the Dynamic Resource Allocation kinds nodewright reads.

A pod asks for devices through ResourceClaims (its own, or one kube-controller-manager makes
from a ResourceClaimTemplate for it); each request names a DeviceClass, whose CEL selectors and
the request's own pick devices that DRA drivers publish in ResourceSlices. The scheduler writes
the chosen devices into the claim's ``status.allocation`` and the pods using it into
``status.reservedFor``.

Only the fields nodewright acts on are declared; the rest are kept as given (``extra="allow"``),
so an object read from a cluster and written back loses nothing.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from nodewright.api.core import NodeSelector
from nodewright.api.meta import KubeObject, Model, ObjectMeta

GROUP = "resource.k8s.io"
API_VERSION = f"{GROUP}/v1"

#: A request's allocation modes: a number of devices, or every matching one.
EXACT_COUNT = "ExactCount"
ALL = "All"
ALLOCATION_MODES = (EXACT_COUNT, ALL)

#: The API's caps (``k8s.io/api/resource/v1``).
MAX_REQUESTS_PER_CLAIM = 32
MAX_CONSTRAINTS_PER_CLAIM = 32
MAX_SELECTORS = 32
MAX_SUBREQUESTS = 8
MAX_RESULTS_PER_CLAIM = 32
MAX_DEVICES_PER_SLICE = 128
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
MAX_CEL_EXPRESSION_LENGTH = 10 * 1024
MAX_ATTRIBUTE_ID_LENGTH = 32
MAX_ATTRIBUTE_STRING_LENGTH = 64
MAX_DRIVER_NAME_LENGTH = 63


def _quantity(value: object) -> object:
    """YAML gives ``value: 8`` as an int; the API keeps quantities as strings."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _quantities(value: object) -> object:
    if isinstance(value, dict):
        return {k: _quantity(v) for k, v in value.items()}
    return value


class CELDeviceSelector(Model):
    expression: str = ""


class DeviceSelector(Model):
    cel: CELDeviceSelector | None = None


class DeviceClassSpec(Model):
    selectors: list[DeviceSelector] = Field(default_factory=list)


class DeviceClass(KubeObject):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "DeviceClass"
    NAMESPACED: ClassVar[bool] = False

    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


class CapacityRequirements(Model):
    requests: dict[str, str] = Field(default_factory=dict)

    _normalise = field_validator("requests", mode="before")(_quantities)


class ExactDeviceRequest(Model):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = Field(default_factory=list)
    #: ``ExactCount`` (the default) or ``All``.
    allocation_mode: str | None = None
    #: For ``ExactCount``: how many devices (the API defaults it to 1).
    count: int | None = None
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(Model):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = Field(default_factory=list)
    allocation_mode: str | None = None
    count: int | None = None


class DeviceRequest(Model):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(Model):
    #: The requests it binds (empty: all of the claim's).
    requests: list[str] = Field(default_factory=list)
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaim(Model):
    requests: list[DeviceRequest] = Field(default_factory=list)
    constraints: list[DeviceConstraint] = Field(default_factory=list)


class ResourceClaimSpec(Model):
    devices: DeviceClaim = Field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(Model):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    #: For a shared device: this allocation's share, and what it takes of each capacity.
    share_id: str | None = Field(default=None, alias="shareID")
    consumed_capacity: dict[str, str] | None = None

    _normalise = field_validator("consumed_capacity", mode="before")(_quantities)


class DeviceAllocationResult(Model):
    results: list[DeviceRequestAllocationResult] = Field(default_factory=list)


class AllocationResult(Model):
    devices: DeviceAllocationResult = Field(default_factory=DeviceAllocationResult)
    #: Where the devices can be reached from (absent: anywhere).
    node_selector: NodeSelector | None = None


class ResourceClaimConsumerReference(Model):
    api_group: str | None = None
    resource: str = ""
    name: str = ""
    uid: str = ""

    @property
    def is_pod(self) -> bool:
        return self.resource == "pods" and not self.api_group


class ResourceClaimStatus(Model):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = Field(default_factory=list)


class ResourceClaim(KubeObject):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ResourceClaim"

    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = Field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(Model):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(KubeObject):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ResourceClaimTemplate"

    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)


class DeviceAttribute(Model):
    """One typed value; exactly one of them is set."""

    int_value: int | None = Field(default=None, alias="int")
    bool_value: bool | None = Field(default=None, alias="bool")
    string_value: str | None = Field(default=None, alias="string")
    version_value: str | None = Field(default=None, alias="version")


class CapacityRequestPolicyRange(Model):
    min: str | None = None
    max: str | None = None
    step: str | None = None

    _normalise = field_validator("min", "max", "step", mode="before")(_quantity)


class CapacityRequestPolicy(Model):
    """How a shared device's capacity is handed out to requests."""

    default: str | None = None
    valid_values: list[str] | None = None
    valid_range: CapacityRequestPolicyRange | None = None

    _normalise = field_validator("default", mode="before")(_quantity)

    @field_validator("valid_values", mode="before")
    @classmethod
    def _values(cls, value: object) -> object:
        if isinstance(value, list):
            return [_quantity(v) for v in value]
        return value


class DeviceCapacity(Model):
    value: str = "0"
    request_policy: CapacityRequestPolicy | None = None

    _normalise = field_validator("value", mode="before")(_quantity)


class Counter(Model):
    value: str = "0"

    _normalise = field_validator("value", mode="before")(_quantity)


class CounterSet(Model):
    """A pool's budget that partitionable devices draw on (``sharedCounters``)."""

    name: str = ""
    counters: dict[str, Counter] = Field(default_factory=dict)


class DeviceCounterConsumption(Model):
    counter_set: str = ""
    counters: dict[str, Counter] = Field(default_factory=dict)


class Device(Model):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = Field(default_factory=dict)
    allow_multiple_allocations: bool | None = None
    #: Counters of the pool it uses up (a partitionable device).
    consumes_counters: list[DeviceCounterConsumption] = Field(default_factory=list)
    #: Per-device reach (with ``spec.perDeviceNodeSelection``).
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None


class ResourcePool(Model):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(Model):
    driver: str = ""
    pool: ResourcePool = Field(default_factory=ResourcePool)
    #: Exactly one of these four says which nodes reach the devices.
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    #: Absent, not empty, beside ``sharedCounters``: the API server refuses even ``[]`` there.
    devices: list[Device] | None = None
    #: Counter sets partitionable devices draw on.
    shared_counters: list[CounterSet] | None = None


class ResourceSlice(KubeObject):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ResourceSlice"
    NAMESPACED: ClassVar[bool] = False

    spec: ResourceSliceSpec = Field(default_factory=ResourceSliceSpec)

    def node_owner(self) -> str | None:
        """The Node that owns the slice (an ownerReference of kind Node), if any: how a
        node-local driver marks the slices of its node."""
        for ref in self.metadata.owner_references:
            if ref.kind == "Node":
                return ref.name
        return None
