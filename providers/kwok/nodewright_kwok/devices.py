"""The DRA devices of a catalog file's instance types (``dynamicResources``), and the
ResourceSlices the provider publishes for them when it registers a node (it plays the node's
DRA drivers, as it plays its kubelet).

In a catalog entry::

    dynamicResources:
      resourceSlices:
        - driver: gpu.example.com
          pool: gpus
          devices:
            - name: gpu-0
              attributes: {model: {string: A100}, memoryGB: {int: 80}}
              capacity: {memory: 80Gi}
      attributeBindings:
        - attribute: pci.example.com/root
          devices: [{driver: gpu.example.com, pool: gpus, device: gpu-0}, ...]

Attribute values take the ResourceSlice API's form (exactly one of ``int``, ``bool``,
``string``, ``version``).
"""

from __future__ import annotations

from typing import Any

from nodewright.plugin import (
    AttributeBinding,
    Device,
    DeviceID,
    DynamicResources,
    ResourceSliceTemplate,
    Semver,
    dynamic_resources_problem,
)

_KINDS = ("int", "bool", "string", "version")


def _mapping(raw: Any, what: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{what} must be a mapping, got {type(raw).__name__}")
    return {str(k): v for k, v in raw.items()}


def _only(raw: dict[str, Any], known: tuple[str, ...], what: str) -> None:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ValueError(f"{what}: unknown field {unknown[0]!r} (known: {', '.join(known)})")


def _attribute(name: str, raw: Any) -> int | bool | str | Semver:
    value = _mapping(raw, f"attribute {name!r}")
    set_kinds = [k for k in _KINDS if k in value]
    _only(value, _KINDS, f"attribute {name!r}")
    if len(set_kinds) != 1:
        raise ValueError(f"attribute {name!r} needs exactly one of {', '.join(_KINDS)}")
    kind = set_kinds[0]
    item = value[kind]
    if kind == "int" and (isinstance(item, bool) or not isinstance(item, int)):
        raise ValueError(f"attribute {name!r}: int must be a whole number")
    if kind == "bool" and not isinstance(item, bool):
        raise ValueError(f"attribute {name!r}: bool must be true or false")
    if kind in ("string", "version") and not isinstance(item, str):
        raise ValueError(f"attribute {name!r}: {kind} must be a string")
    if kind == "version":
        try:
            return Semver.parse(item)
        except ValueError as error:
            raise ValueError(f"attribute {name!r}: {error}") from error
    return item  # type: ignore[no-any-return]


def _capacity(name: str, raw: Any) -> str:
    if isinstance(raw, dict):
        _only(raw, ("value",), f"capacity {name!r}")
        raw = raw.get("value")
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise ValueError(f"capacity {name!r} must be a quantity such as '80Gi'")
    return str(raw)


def _device(raw: Any) -> Device:
    fields = _mapping(raw, "a device")
    _only(fields, ("name", "attributes", "capacity"), "a device")
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a device needs a 'name'")
    attributes = {
        k: _attribute(k, v) for k, v in _mapping(fields.get("attributes", {}), "attributes").items()
    }
    capacity = {
        k: _capacity(k, v) for k, v in _mapping(fields.get("capacity", {}), "capacity").items()
    }
    return Device(name, attributes, capacity)


def parse_dynamic_resources(raw: Any) -> DynamicResources:
    """A catalog entry's ``dynamicResources``; ValueError names what is wrong."""
    fields = _mapping(raw, "dynamicResources")
    _only(fields, ("resourceSlices", "attributeBindings"), "dynamicResources")
    slices: list[ResourceSliceTemplate] = []
    for index, item in enumerate(fields.get("resourceSlices") or []):
        entry = _mapping(item, f"resourceSlices[{index}]")
        _only(entry, ("driver", "pool", "devices"), f"resourceSlices[{index}]")
        driver, pool = entry.get("driver"), entry.get("pool")
        if not isinstance(driver, str) or not isinstance(pool, str) or not driver or not pool:
            raise ValueError(f"resourceSlices[{index}] needs a 'driver' and a 'pool'")
        devices = entry.get("devices") or []
        if not isinstance(devices, list):
            raise ValueError(f"resourceSlices[{index}].devices must be a list")
        try:
            parsed = tuple(_device(d) for d in devices)
        except ValueError as error:
            raise ValueError(f"resourceSlices[{index}]: {error}") from error
        slices.append(ResourceSliceTemplate(driver, pool, parsed))
    bindings: list[AttributeBinding] = []
    for index, item in enumerate(fields.get("attributeBindings") or []):
        entry = _mapping(item, f"attributeBindings[{index}]")
        _only(entry, ("attribute", "devices"), f"attributeBindings[{index}]")
        attribute = entry.get("attribute")
        if not isinstance(attribute, str) or "/" not in attribute:
            raise ValueError(f"attributeBindings[{index}] needs a qualified 'attribute'")
        members: list[DeviceID] = []
        for member in entry.get("devices") or []:
            ref = _mapping(member, f"attributeBindings[{index}].devices[]")
            _only(ref, ("driver", "pool", "device"), f"attributeBindings[{index}].devices[]")
            members.append(
                DeviceID(str(ref.get("driver")), str(ref.get("pool")), str(ref.get("device")))
            )
        bindings.append(AttributeBinding(attribute, tuple(members)))
    resources = DynamicResources(tuple(slices), tuple(bindings))
    problem = dynamic_resources_problem(resources)
    if problem is not None:
        raise ValueError(f"dynamicResources: its {problem}")
    return resources
