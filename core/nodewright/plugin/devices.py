"""Checking the DRA devices a provider says an instance type offers
(:class:`~nodewright.plugin.DynamicResources`): what a DRA driver could publish in a
ResourceSlice, so the allocator never meets a device the API server would refuse."""

from __future__ import annotations

from nodewright.api.cel.values import Semver
from nodewright.api.names import dns_label_problems, dns_subdomain_problems
from nodewright.api.quantity import QuantityError, exact_quantity
from nodewright.api.resource import (
    MAX_ATTRIBUTE_STRING_LENGTH,
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    MAX_DEVICES_PER_SLICE,
)
from nodewright.scheduling.dra.devices import (
    AttributeBinding,
    Device,
    DeviceID,
    DynamicResources,
    ResourceSliceTemplate,
)


def _device_problem(template: ResourceSliceTemplate, device: object) -> str | None:
    if not isinstance(device, Device):
        return f"device {device!r} is a {type(device).__name__}, not a Device"
    where = f"device {device.name!r} of {template.driver}/{template.pool}"
    if dns_label_problems(device.name):
        return f"{where} is not a DNS label ({dns_label_problems(device.name)[0]})"
    if len(device.attributes) + len(device.capacity) > MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        return (
            f"{where} has more than {MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE} attributes "
            "and capacities"
        )
    attributes: dict[str, object] = dict(device.attributes)
    for name, value in attributes.items():
        if not isinstance(value, bool | int | str | Semver):
            kind = type(value).__name__
            return f"{where} attribute {name!r} is a {kind}, not int, bool, str or Semver"
        if isinstance(value, str) and len(value) > MAX_ATTRIBUTE_STRING_LENGTH:
            return f"{where} attribute {name!r} is longer than {MAX_ATTRIBUTE_STRING_LENGTH}"
    for name, quantity in device.capacity.items():
        try:
            exact_quantity(quantity)
        except (QuantityError, AttributeError, TypeError):
            return f"{where} capacity {name!r} is {quantity!r}, not a quantity"
    return None


def _template_problem(template: object) -> str | None:
    if not isinstance(template, ResourceSliceTemplate):
        return f"slice {template!r} is a {type(template).__name__}, not a ResourceSliceTemplate"
    if dns_subdomain_problems(template.driver):
        return f"driver {template.driver!r} is not a DNS subdomain"
    if not template.pool or any(dns_subdomain_problems(p) for p in template.pool.split("/")):
        return f"pool {template.pool!r} of {template.driver} is not a pool name"
    if len(template.devices) > MAX_DEVICES_PER_SLICE:
        return (
            f"slice {template.driver}/{template.pool} has more than {MAX_DEVICES_PER_SLICE} devices"
        )
    names: set[str] = set()
    for device in template.devices:
        problem = _device_problem(template, device)
        if problem is not None:
            return problem
        assert isinstance(device, Device)
        if device.name in names:
            return f"device {device.name!r} of {template.driver}/{template.pool} is listed twice"
        names.add(device.name)
    return None


def dynamic_resources_problem(resources: object) -> str | None:
    """What is wrong with an instance type's devices, in words ending a sentence that starts
    "returned instance type X whose ..."; None when nothing is."""
    if not isinstance(resources, DynamicResources):
        return f"dynamic_resources is a {type(resources).__name__}, not DynamicResources"
    known: set[DeviceID] = set()
    for template in resources.slices:
        problem = _template_problem(template)
        if problem is not None:
            return problem
        known.update(DeviceID(template.driver, template.pool, d.name) for d in template.devices)
    bindings: tuple[object, ...] = resources.attribute_bindings
    for binding in bindings:
        if not isinstance(binding, AttributeBinding):
            return f"attribute binding {binding!r} is not an AttributeBinding"
        for device in binding.devices:
            if device not in known:
                return (
                    f"attribute binding of {binding.attribute!r} names device {device}, which "
                    "none of its slices lists"
                )
    return None
