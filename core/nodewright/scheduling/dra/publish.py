"""The ResourceSlices a node's DRA drivers publish for the devices its instance type offers,
as a driver's kubelet plugin does: one slice per template, reachable from that node only
(``nodeName``), owned by the Node (so they go when it goes), each its own pool named after
the node and the template's pool. A template with counter sets publishes them in a slice of
their own in the same pool (the API keeps ``sharedCounters`` and ``devices`` apart)."""

from __future__ import annotations

import re

from nodewright.api.cel.values import Semver
from nodewright.api.meta import ObjectMeta, OwnerReference
from nodewright.api.resource import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Counter,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceCounterConsumption,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from nodewright.scheduling.dra import devices as dra
from nodewright.scheduling.dra.devices import AttributeValue, DynamicResources

_UNSAFE = re.compile(r"[^a-z0-9.-]+")
_MAX_NAME = 253


def _attribute(value: AttributeValue) -> DeviceAttribute:
    if isinstance(value, bool):
        return DeviceAttribute(bool_value=value)
    if isinstance(value, int):
        return DeviceAttribute(int_value=value)
    if isinstance(value, Semver):
        return DeviceAttribute(version_value=str(value))
    return DeviceAttribute(string_value=value)


def _policy(policy: dra.RequestPolicy | None) -> CapacityRequestPolicy | None:
    if policy is None:
        return None
    valid = policy.valid_range
    return CapacityRequestPolicy(
        default=policy.default,
        valid_values=list(policy.valid_values) or None,
        valid_range=None
        if valid is None
        else CapacityRequestPolicyRange(min=valid.min, max=valid.max, step=valid.step),
    )


def _device(d: dra.Device) -> Device:
    return Device(
        name=d.name,
        attributes={k: _attribute(v) for k, v in d.attributes.items()},
        capacity={
            k: DeviceCapacity(value=v, request_policy=_policy(d.request_policies.get(k)))
            for k, v in d.capacity.items()
        },
        allow_multiple_allocations=d.allow_multiple_allocations or None,
        consumes_counters=[
            DeviceCounterConsumption(
                counter_set=use.counter_set,
                counters={k: Counter(value=v) for k, v in use.counters.items()},
            )
            for use in d.consumes_counters
        ],
    )


def slice_name(node_name: str, driver: str, pool: str) -> str:
    """A slice's object name: the node, the driver and the pool, made a DNS subdomain."""
    name = _UNSAFE.sub("-", f"{node_name}-{driver}-{pool}".lower()).strip("-.")
    return name[:_MAX_NAME].rstrip("-.")


def node_slices(node_name: str, node_uid: str, resources: DynamicResources) -> list[ResourceSlice]:
    """The slices the drivers of node ``node_name`` publish for ``resources``."""
    slices: list[ResourceSlice] = []
    owner = OwnerReference(api_version="v1", kind="Node", name=node_name, uid=node_uid)
    for template in resources.slices:
        pool = f"{node_name}/{template.pool}"
        name = slice_name(node_name, template.driver, template.pool)
        parts: list[tuple[str, ResourceSliceSpec]] = []
        if template.shared_counters:
            counters = [
                CounterSet(
                    name=c.name, counters={k: Counter(value=v) for k, v in c.counters.items()}
                )
                for c in template.shared_counters
            ]
            parts.append(
                (f"{name}-counters"[:_MAX_NAME], ResourceSliceSpec(shared_counters=counters))
            )
        if template.devices or not parts:
            devices = [_device(d) for d in template.devices]
            parts.append((name, ResourceSliceSpec(devices=devices)))
        for part_name, spec in parts:
            spec.driver = template.driver
            spec.pool = ResourcePool(name=pool, generation=0, resource_slice_count=len(parts))
            spec.node_name = node_name
            slices.append(
                ResourceSlice(
                    metadata=ObjectMeta(name=part_name, owner_references=[owner]), spec=spec
                )
            )
    return slices
