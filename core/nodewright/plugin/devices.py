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
        if not _is_quantity(quantity):
            return f"{where} capacity {name!r} is {quantity!r}, not a quantity"
    for name, policy in device.request_policies.items():
        if not device.allow_multiple_allocations:
            return (
                f"{where} has a request policy for {name!r} but does not allow multiple allocations"
            )
        amounts = [policy.default, *policy.valid_values]
        if policy.valid_range is not None:
            amounts += [policy.valid_range.min, policy.valid_range.max, policy.valid_range.step]
        if any(a is not None and not _is_quantity(a) for a in amounts):
            return f"{where} request policy for {name!r} has an amount that is not a quantity"
    sets = {c.name: c.counters for c in template.shared_counters}
    for use in device.consumes_counters:
        if use.counter_set not in sets:
            return f"{where} draws on counter set {use.counter_set!r}, which its slice lacks"
        for counter, amount in use.counters.items():
            if counter not in sets[use.counter_set] or not _is_quantity(amount):
                return f"{where} draws {counter!r} of {use.counter_set!r}, which it lacks"
    return None


def _is_quantity(value: object) -> bool:
    try:
        exact_quantity(value)  # type: ignore[arg-type]
    except (QuantityError, AttributeError, TypeError):
        return False
    return True


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
    for counter_set in template.shared_counters:
        if any(not _is_quantity(v) for v in counter_set.counters.values()):
            return (
                f"counter set {counter_set.name!r} of {template.driver}/{template.pool} has an "
                "amount that is not a quantity"
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
