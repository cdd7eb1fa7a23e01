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
        - driver: shared.example.com       # a device several claims share
          pool: shared
          devices:
            - name: accel-0
              allowMultipleAllocations: true
              capacity:
                memory:
                  value: 16Gi
                  requestPolicy: {default: 1Gi, validRange: {min: 1Gi, step: 1Gi}}
        - driver: mig.example.com          # partitions drawing on one GPU's counters
          pool: mig
          sharedCounters: [{name: gpu-0, counters: {memory: {value: 40Gi}}}]
          devices:
            - name: half-0
              consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 20Gi}}}]
      attributeBindings:
        - attribute: pci.example.com/root
          devices: [{driver: gpu.example.com, pool: gpus, device: gpu-0}, ...]

Attribute values, capacities (a quantity, or ``value`` with a ``requestPolicy``),
``allowMultipleAllocations``, ``consumesCounters`` and ``sharedCounters`` take the
ResourceSlice API's form (an attribute has exactly one of ``int``, ``bool``, ``string``,
``version``).
"""

from __future__ import annotations

from typing import Any

from nodewright.plugin import (
    AttributeBinding,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceID,
    DynamicResources,
    RequestPolicy,
    ResourceSliceTemplate,
    Semver,
    ValidRange,
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


def _amount(raw: Any, what: str) -> str:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise ValueError(f"{what} must be a quantity such as '80Gi'")
    return str(raw)


def _policy(name: str, raw: Any) -> RequestPolicy:
    what = f"capacity {name!r} requestPolicy"
    fields = _mapping(raw, what)
    _only(fields, ("default", "validValues", "validRange"), what)
    default = fields.get("default")
    values = fields.get("validValues") or []
    if not isinstance(values, list):
        raise ValueError(f"{what}.validValues must be a list")
    valid_range = None
    if "validRange" in fields:
        bounds = _mapping(fields["validRange"], f"{what}.validRange")
        _only(bounds, ("min", "max", "step"), f"{what}.validRange")
        if "min" not in bounds:
            raise ValueError(f"{what}.validRange needs a 'min'")
        valid_range = ValidRange(
            _amount(bounds["min"], f"{what}.validRange.min"),
            *(
                None if key not in bounds else _amount(bounds[key], f"{what}.validRange.{key}")
                for key in ("max", "step")
            ),
        )
    return RequestPolicy(
        default=None if default is None else _amount(default, f"{what}.default"),
        valid_values=tuple(_amount(v, f"{what}.validValues[]") for v in values),
        valid_range=valid_range,
    )


def _capacity(name: str, raw: Any) -> tuple[str, RequestPolicy | None]:
    policy = None
    if isinstance(raw, dict):
        _only(raw, ("value", "requestPolicy"), f"capacity {name!r}")
        if "requestPolicy" in raw:
            policy = _policy(name, raw["requestPolicy"])
        raw = raw.get("value")
    return _amount(raw, f"capacity {name!r}"), policy


def _counters(raw: Any, what: str) -> dict[str, str]:
    counters: dict[str, str] = {}
    for name, value in _mapping(raw, what).items():
        entry = _mapping(value, f"{what}[{name}]")
        _only(entry, ("value",), f"{what}[{name}]")
        counters[name] = _amount(entry.get("value"), f"{what}[{name}].value")
    return counters


def _counter_list(raw: Any, key: str, what: str) -> list[tuple[str, dict[str, str]]]:
    """``[{<key>: name, counters: {...}}]`` as (name, counters)."""
    if not isinstance(raw, list):
        raise ValueError(f"{what} must be a list")
    found: list[tuple[str, dict[str, str]]] = []
    for index, item in enumerate(raw):
        entry = _mapping(item, f"{what}[{index}]")
        _only(entry, (key, "counters"), f"{what}[{index}]")
        name = entry.get(key)
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what}[{index}] needs a '{key}'")
        found.append((name, _counters(entry.get("counters", {}), f"{what}[{index}].counters")))
    return found


def _device(raw: Any) -> Device:
    fields = _mapping(raw, "a device")
    known = ("name", "attributes", "capacity", "allowMultipleAllocations", "consumesCounters")
    _only(fields, known, "a device")
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a device needs a 'name'")
    attributes = {
        k: _attribute(k, v) for k, v in _mapping(fields.get("attributes", {}), "attributes").items()
    }
    capacities = {
        k: _capacity(k, v) for k, v in _mapping(fields.get("capacity", {}), "capacity").items()
    }
    shared = fields.get("allowMultipleAllocations", False)
    if not isinstance(shared, bool):
        raise ValueError(f"device {name!r}: allowMultipleAllocations must be true or false")
    uses = _counter_list(fields.get("consumesCounters", []), "counterSet", "consumesCounters")
    return Device(
        name,
        attributes,
        {k: value for k, (value, _) in capacities.items()},
        allow_multiple_allocations=shared,
        consumes_counters=tuple(CounterConsumption(n, c) for n, c in uses),
        request_policies={k: p for k, (_, p) in capacities.items() if p is not None},
    )


def parse_dynamic_resources(raw: Any) -> DynamicResources:
    """A catalog entry's ``dynamicResources``; ValueError names what is wrong."""
    fields = _mapping(raw, "dynamicResources")
    _only(fields, ("resourceSlices", "attributeBindings"), "dynamicResources")
    slices: list[ResourceSliceTemplate] = []
    for index, item in enumerate(fields.get("resourceSlices") or []):
        entry = _mapping(item, f"resourceSlices[{index}]")
        _only(entry, ("driver", "pool", "devices", "sharedCounters"), f"resourceSlices[{index}]")
        driver, pool = entry.get("driver"), entry.get("pool")
        if not isinstance(driver, str) or not isinstance(pool, str) or not driver or not pool:
            raise ValueError(f"resourceSlices[{index}] needs a 'driver' and a 'pool'")
        devices = entry.get("devices") or []
        if not isinstance(devices, list):
            raise ValueError(f"resourceSlices[{index}].devices must be a list")
        try:
            parsed = tuple(_device(d) for d in devices)
            sets = _counter_list(entry.get("sharedCounters", []), "name", "sharedCounters")
        except ValueError as error:
            raise ValueError(f"resourceSlices[{index}]: {error}") from error
        counter_sets = tuple(CounterSet(n, c) for n, c in sets)
        slices.append(ResourceSliceTemplate(driver, pool, parsed, counter_sets))
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
