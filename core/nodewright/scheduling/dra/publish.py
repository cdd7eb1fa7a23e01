"""The ResourceSlices a node's DRA drivers publish for the devices its instance type offers,
as a driver's kubelet plugin does: one slice per template, reachable from that node only
(``nodeName``), owned by the Node (so they go when it goes), each its own pool named after
the node and the template's pool."""

from __future__ import annotations

import re

from nodewright.api.cel.values import Semver
from nodewright.api.meta import ObjectMeta, OwnerReference
from nodewright.api.resource import (
    Device,
    DeviceAttribute,
    DeviceCapacity,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
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


def slice_name(node_name: str, driver: str, pool: str) -> str:
    """A slice's object name: the node, the driver and the pool, made a DNS subdomain."""
    name = _UNSAFE.sub("-", f"{node_name}-{driver}-{pool}".lower()).strip("-.")
    return name[:_MAX_NAME].rstrip("-.")


def node_slices(node_name: str, node_uid: str, resources: DynamicResources) -> list[ResourceSlice]:
    """The slices the drivers of node ``node_name`` publish for ``resources``."""
    slices: list[ResourceSlice] = []
    owner = OwnerReference(api_version="v1", kind="Node", name=node_name, uid=node_uid)
    for template in resources.slices:
        devices = [
            Device(
                name=d.name,
                attributes={k: _attribute(v) for k, v in d.attributes.items()},
                capacity={k: DeviceCapacity(value=v) for k, v in d.capacity.items()},
                allow_multiple_allocations=d.allow_multiple_allocations or None,
            )
            for d in template.devices
        ]
        slices.append(
            ResourceSlice(
                metadata=ObjectMeta(
                    name=slice_name(node_name, template.driver, template.pool),
                    owner_references=[owner],
                ),
                spec=ResourceSliceSpec(
                    driver=template.driver,
                    pool=ResourcePool(
                        name=f"{node_name}/{template.pool}", generation=0, resource_slice_count=1
                    ),
                    node_name=node_name,
                    devices=devices,
                ),
            )
        )
    return slices
