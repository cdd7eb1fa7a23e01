"""Published devices: ResourceSlices read into plain data, and the pools they form.

A driver publishes a pool of devices in one or more slices. The slices of a pool's highest
``generation`` are its current ones; the pool is incomplete until all ``resourceSliceCount``
of them are seen, and invalid when two of them name the same device. Each slice says which
nodes reach its devices: all of them, one node by name, or those its node selector matches
(the selector's requirements then follow the device onto whatever node uses it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api import core as api
from nodewright.api.cel.values import Semver, VersionError
from nodewright.api.labels import HOSTNAME_LABEL, WELL_KNOWN_LABELS
from nodewright.api.resource import Device as ApiDevice
from nodewright.api.resource import DeviceAttribute, DeviceCapacity, ResourceSlice
from nodewright.scheduling.dra.counters import PoolKey, budget, draws_known
from nodewright.scheduling.dra.devices import (
    AttributeValue,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceID,
    RequestPolicy,
    ValidRange,
)
from nodewright.scheduling.requirements import Requirement, RequirementError, Requirements


@dataclass(frozen=True)
class PublishedSlice:
    """A ResourceSlice in the cluster, as the allocator reads it."""

    name: str
    driver: str
    pool: str
    generation: int = 0
    slice_count: int = 1
    devices: tuple[Device, ...] = ()
    #: Exactly one of the next three says who reaches the devices (none: nobody).
    node_name: str = ""
    node_selector: tuple[Requirements, ...] | None = None
    all_nodes: bool = False
    #: The Node that owns the slice (ownerReference), if any.
    owner_node: str | None = None
    #: The counter sets it declares (a partitionable device's budget): reachable everywhere.
    shared_counters: tuple[CounterSet, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """A device the search may pick, with where it comes from."""

    device: Device
    id: DeviceID
    #: From an instance type's template (a device the node will have), not the cluster.
    template: bool = False
    #: Node requirements a slice's node selector puts on whoever uses the device.
    topology: Requirements | None = None


@dataclass
class Pool:
    driver: str
    name: str
    slices: list[PublishedSlice] = field(default_factory=list)
    devices: list[Candidate] = field(default_factory=list)
    incomplete: bool = False
    invalid: bool = False


def _attribute(value: DeviceAttribute) -> AttributeValue | None:
    if value.int_value is not None:
        return value.int_value
    if value.bool_value is not None:
        return value.bool_value
    if value.string_value is not None:
        return value.string_value
    if value.version_value is not None:
        try:
            return Semver.parse(value.version_value)
        except VersionError:
            return None
    return None


#: The node field a selector can match (``matchFields``).
NODE_NAME_FIELD = "metadata.name"


def selector_terms(selector: api.NodeSelector) -> tuple[Requirements, ...]:
    """A node selector's terms as requirements (a term with an unknown operator is left
    out: it matches nothing). A ``metadata.name`` field, as kube-scheduler pins a claim
    allocated from one node's devices, becomes that node's hostname."""
    terms: list[Requirements] = []
    for term in selector.node_selector_terms:
        fields = [e for e in term.match_fields if e.key == NODE_NAME_FIELD]
        try:
            terms.append(
                Requirements(
                    [
                        *(
                            Requirement.of(e.key, e.operator, e.values)
                            for e in term.match_expressions
                        ),
                        *(Requirement.of(HOSTNAME_LABEL, e.operator, e.values) for e in fields),
                    ]
                )
            )
        except RequirementError:
            continue
    return tuple(terms)


def _policy(capacity: DeviceCapacity) -> RequestPolicy | None:
    policy = capacity.request_policy
    if policy is None:
        return None
    valid = policy.valid_range
    return RequestPolicy(
        default=policy.default,
        valid_values=tuple(policy.valid_values or ()),
        valid_range=None
        if valid is None or valid.min is None
        else ValidRange(valid.min, valid.max, valid.step),
    )


def read_device(d: ApiDevice) -> Device:
    """A published device as plain data (attributes nodewright cannot read are left out)."""
    attributes = {
        name: value for name, raw in d.attributes.items() if (value := _attribute(raw)) is not None
    }
    return Device(
        name=d.name,
        attributes=attributes,
        capacity={name: c.value for name, c in d.capacity.items()},
        allow_multiple_allocations=bool(d.allow_multiple_allocations),
        consumes_counters=tuple(
            CounterConsumption(use.counter_set, {k: v.value for k, v in use.counters.items()})
            for use in d.consumes_counters
        ),
        request_policies={
            name: policy for name, c in d.capacity.items() if (policy := _policy(c)) is not None
        },
    )


def published_slice(obj: ResourceSlice) -> PublishedSlice:
    """A ResourceSlice as plain data. Devices with per-device node selection
    (``perDeviceNodeSelection``) are left out: nodewright does not allocate them."""
    spec = obj.spec
    devices: list[Device] = []
    if not spec.per_device_node_selection:
        devices = [read_device(d) for d in spec.devices or ()]
    return PublishedSlice(
        name=obj.name,
        driver=spec.driver,
        pool=spec.pool.name,
        generation=spec.pool.generation,
        slice_count=spec.pool.resource_slice_count,
        devices=tuple(devices),
        node_name=spec.node_name or "",
        node_selector=None if spec.node_selector is None else selector_terms(spec.node_selector),
        all_nodes=bool(spec.all_nodes),
        owner_node=obj.node_owner(),
        shared_counters=tuple(
            CounterSet(c.name, {k: v.value for k, v in c.counters.items()})
            for c in spec.shared_counters or ()
        ),
    )


def _topology(s: PublishedSlice) -> Requirements | None:
    """The requirements a device of ``s`` puts on its user: its selector's terms together
    (as Karpenter reads a selector), none when every node reaches it."""
    if s.all_nodes or s.node_selector is None:
        return None
    return Requirements().add(*s.node_selector)


def reachable(
    s: PublishedSlice,
    requirements: Requirements,
    node_name: str,
    allow_undefined: frozenset[str] = WELL_KNOWN_LABELS,
) -> bool:
    """Whether a node with ``requirements`` (and ``node_name``, empty for a node still to be
    launched) reaches the devices of ``s``; labels in ``allow_undefined`` may be missing from
    ``requirements``."""
    if s.all_nodes or s.shared_counters:
        return True
    if s.node_name:
        return bool(node_name) and s.node_name == node_name
    if s.node_selector is not None:
        return any(requirements.compatible(term, allow_undefined) for term in s.node_selector)
    return False


def current_slices(slices: Iterable[PublishedSlice]) -> dict[PoolKey, list[PublishedSlice]]:
    """Per (driver, pool), the slices of its newest generation: the pool as it stands (older
    generations are being replaced)."""
    current: dict[PoolKey, list[PublishedSlice]] = {}
    for s in slices:
        key = (s.driver, s.pool)
        kept = current.get(key)
        if kept is None or s.generation > kept[0].generation:
            current[key] = [s]
        elif s.generation == kept[0].generation:
            kept.append(s)
    return current


def gather_pools(
    current: Mapping[PoolKey, Sequence[PublishedSlice]],
    requirements: Requirements,
    node_name: str,
    allow_undefined: frozenset[str] = WELL_KNOWN_LABELS,
) -> list[Pool]:
    """The pools whose devices a node with ``requirements`` reaches, in (driver, pool)
    order, from each pool's current slices (:func:`current_slices`). Completeness counts
    every slice of the pool's generation, reachable or not."""
    pools: list[Pool] = []
    for (driver, name), members in sorted(current.items()):
        pool = Pool(driver, name, incomplete=len(members) != members[0].slice_count)
        seen: set[str] = set()
        for s in members:
            if not reachable(s, requirements, node_name, allow_undefined):
                continue
            pool.slices.append(s)
            topology = _topology(s)
            for device in s.devices:
                pool.invalid = pool.invalid or device.name in seen
                seen.add(device.name)
                identity = DeviceID(driver, name, device.name)
                pool.devices.append(Candidate(device, identity, False, topology))
        counters, valid = budget(c for s in members for c in s.shared_counters)
        if not valid or not draws_known(counters, (d for s in members for d in s.devices)):
            pool.invalid = True
        if pool.invalid:
            pool.devices = []
            pools.append(pool)
        elif pool.slices:
            pools.append(pool)
    return pools


def filter_pools(
    pools: Sequence[Pool],
    requirements: Requirements,
    node_name: str,
    allow_undefined: frozenset[str] = WELL_KNOWN_LABELS,
) -> list[Pool]:
    """The pools again, keeping only the slices still reachable under narrower
    ``requirements`` (invalid pools are kept: ``All`` requests must see them)."""
    kept: list[Pool] = []
    for pool in pools:
        if pool.invalid:
            kept.append(pool)
            continue
        narrowed = Pool(pool.driver, pool.name, incomplete=pool.incomplete)
        for s in pool.slices:
            if not reachable(s, requirements, node_name, allow_undefined):
                continue
            narrowed.slices.append(s)
            topology = _topology(s)
            narrowed.devices.extend(
                Candidate(d, DeviceID(pool.driver, pool.name, d.name), False, topology)
                for d in s.devices
            )
        if narrowed.slices:
            kept.append(narrowed)
    return kept
