"""DRA objects a real API server refuses (checked on v1.36 with ``kubectl apply
--dry-run=server``), each with the field and words of its refusal, and one it accepts of each
kind. Shared by the offline test and the live one that asks a real API server."""

from __future__ import annotations

RESOURCE = "apiVersion: resource.k8s.io/v1\n"


def device_class(spec: str, name: str = "gpu") -> str:
    return f"{RESOURCE}kind: DeviceClass\nmetadata: {{name: {name}}}\nspec: {spec}\n"


def claim(devices: str, name: str = "c1") -> str:
    return (
        f"{RESOURCE}kind: ResourceClaim\nmetadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{devices: {devices}}}\n"
    )


def template(devices: str) -> str:
    return (
        f"{RESOURCE}kind: ResourceClaimTemplate\nmetadata: {{name: t1, namespace: default}}\n"
        f"spec: {{spec: {{devices: {devices}}}}}\n"
    )


def resource_slice(spec: str) -> str:
    return f"{RESOURCE}kind: ResourceSlice\nmetadata: {{name: s1}}\nspec: {spec}\n"


POOL = "pool: {name: p, generation: 0, resourceSliceCount: 1}"

#: (manifest, field, words of the refusal)
REFUSED = [
    (
        device_class('{selectors: [{cel: {expression: "device.colour == 1"}}]}'),
        "spec.selectors[0].cel.expression",
        "undefined field 'colour'",
    ),
    (device_class("{selectors: [{}]}"), "spec.selectors[0].cel", "Required value"),
    (
        claim("{requests: [{name: gpu, exactly: {}}]}"),
        "spec.devices.requests[0].exactly.deviceClassName",
        "",
    ),
    (
        claim("{requests: [{name: gpu}]}"),
        "spec.devices.requests[0]",
        "exactly one of `exactly` or `firstAvailable` is required",
    ),
    (
        claim(
            "{requests: [{name: gpu, exactly: {deviceClassName: gpu}, "
            "firstAvailable: [{name: a, deviceClassName: gpu}]}]}"
        ),
        "spec.devices.requests[0]",
        "multiple fields are set",
    ),
    (
        claim(
            "{requests: [{name: gpu, exactly: "
            "{deviceClassName: gpu, allocationMode: All, count: 2}}]}"
        ),
        "spec.devices.requests[0].exactly.count",
        "must not be specified when allocationMode is 'All'",
    ),
    (
        claim("{requests: [{name: gpu, exactly: {deviceClassName: gpu, allocationMode: Some}}]}"),
        "spec.devices.requests[0].exactly.allocationMode",
        'supported values: "All", "ExactCount"',
    ),
    (
        claim("{requests: [{name: Bad_Name, exactly: {deviceClassName: gpu}}]}"),
        "spec.devices.requests[0].name",
        "",
    ),
    (
        claim(
            "{requests: [{name: gpu, exactly: {deviceClassName: gpu}}, "
            "{name: gpu, exactly: {deviceClassName: gpu}}]}"
        ),
        "spec.devices.requests[1]",
        "Duplicate value",
    ),
    (
        claim(
            "{requests: [{name: gpu, exactly: {deviceClassName: gpu}}], "
            "constraints: [{requests: [nic], matchAttribute: example.com/x}]}"
        ),
        "spec.devices.constraints[0].requests[0]",
        "must be the name of a request in the claim",
    ),
    (
        claim(
            "{requests: [{name: gpu, exactly: {deviceClassName: gpu}}], "
            "constraints: [{matchAttribute: noDomain}]}"
        ),
        "spec.devices.constraints[0].matchAttribute",
        "a fully qualified name must be a domain and a name separated by a slash",
    ),
    (
        template("{requests: [{name: gpu}]}"),
        "spec.spec.devices.requests[0]",
        "exactly one of `exactly` or `firstAvailable` is required",
    ),
    (
        resource_slice(f"{{driver: gpu.example.com, {POOL}, devices: [{{name: d0}}]}}"),
        "spec",
        "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, nodeName: n1, allNodes: true, {POOL}, "
            "devices: [{name: d0}]}"
        ),
        "spec",
        "multiple fields are set",
    ),
    (
        resource_slice(
            "{driver: gpu.example.com, allNodes: true, "
            "pool: {name: p, generation: 0, resourceSliceCount: 0}}"
        ),
        "spec.pool.resourceSliceCount",
        "must be greater than zero",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, allNodes: true, {POOL}, "
            "devices: [{name: d0, attributes: {model: {string: a, int: 1}}}]}"
        ),
        "spec.devices[0].attributes[model]",
        "exactly one value must be specified",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, allNodes: true, {POOL}, "
            "devices: [{name: d0, attributes: {v: {version: '1.2'}}}]}"
        ),
        "spec.devices[0].attributes[v].version",
        "semver.org spec 2.0.0",
    ),
    (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: default}\n"
        "spec: {resourceClaims: [{name: gpu}], containers: [{name: c, image: x}]}\n",
        "spec.resourceClaims[0]",
        "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
    ),
]


def shared(capacity: str, allow: bool = True) -> str:
    """A slice with one device whose ``memory`` capacity is ``capacity``."""
    multiple = "allowMultipleAllocations: true, " if allow else ""
    return resource_slice(
        f"{{driver: gpu.example.com, allNodes: true, {POOL}, "
        f"devices: [{{name: d0, {multiple}capacity: {{memory: {capacity}}}}}]}}"
    )


CAPACITY = "spec.devices[0].capacity[memory].requestPolicy"
COUNTERS = "[{name: gpu-0, counters: {memory: {value: 40Gi}}}]"

#: Shared devices (consumable capacity) and partitionable devices (counter sets).
REFUSED += [
    (
        shared("{value: 16Gi, requestPolicy: {default: 2Gi, validValues: [2Gi]}}", allow=False),
        CAPACITY,
        "allowMultipleAllocations must be true",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {validValues: [1Gi], validRange: {min: 1Gi}}}"),
        CAPACITY,
        'cannot specify "validValues" and "validRange" at the same time',
    ),
    (
        shared("{value: 16Gi, requestPolicy: {validRange: {min: 1Gi}}}"),
        f"{CAPACITY}.default",
        "required when validRange is defined",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {validValues: [2Gi, 4Gi]}}"),
        f"{CAPACITY}.default",
        "required when validValues is defined",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 4Gi, validRange: {min: 4Gi, max: 2Gi}}}"),
        f"{CAPACITY}.validRange.max",
        "min is larger than max: 2Gi",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 8Gi, validRange: {min: 1Gi, max: 4Gi}}}"),
        f"{CAPACITY}.validRange.max",
        "default is more than max: 4Gi",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 4Gi, validRange: {min: 4Gi, max: 32Gi}}}"),
        f"{CAPACITY}.validRange.max",
        "max is larger than capacity value: 16Gi",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 20Gi, validRange: {min: 20Gi}}}"),
        f"{CAPACITY}.validRange.min",
        "min is larger than capacity value: 16Gi",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 3Gi, validRange: {min: 4Gi, step: 2Gi}}}"),
        f"{CAPACITY}.validRange.min",
        "default is less than min: 4Gi",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 5Gi, validRange: {min: 4Gi, step: 2Gi}}}"),
        f"{CAPACITY}.validRange.step",
        "value is not a multiple of a given step (2Gi) from (4Gi)",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 1Gi, validRange: {min: 1Gi, step: 32Gi}}}"),
        f"{CAPACITY}.validRange.step",
        "one step 33Gi is larger than capacity value: 16Gi",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 2Gi, validValues: [4Gi, 2Gi]}}"),
        f"{CAPACITY}.validValues[1]",
        "values must be sorted in ascending order",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 2Gi, validValues: [2Gi, 2Gi]}}"),
        f"{CAPACITY}.validValues[1]",
        "Duplicate value",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 3Gi, validValues: [2Gi, 4Gi]}}"),
        f"{CAPACITY}.validValues",
        "default value is not valid according to the requestPolicy",
    ),
    (
        shared("{value: 16Gi, requestPolicy: {default: 2Gi, validValues: [2Gi, 32Gi]}}"),
        f"{CAPACITY}.validValues[1]",
        "option is larger than capacity value: 16Gi",
    ),
    (
        shared(
            "{value: 16Gi, requestPolicy: {default: 1, validValues: [1,2,3,4,5,6,7,8,9,10,11]}}"
        ),
        f"{CAPACITY}.validValues",
        "must have at most 10 items",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, allNodes: true, {POOL}, sharedCounters: {COUNTERS}, "
            "devices: [{name: d0}]}"
        ),
        "spec",
        "only one of `sharedCounters` or `devices` is allowed",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, nodeName: n1, {POOL}, sharedCounters: {COUNTERS}, "
            "devices: []}"
        ),
        "spec",
        "only one of `sharedCounters` or `devices` is allowed",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, nodeName: n1, {POOL}, "
            "sharedCounters: [{name: a, counters: {m: {value: 1}}}, "
            "{name: a, counters: {m: {value: 1}}}]}"
        ),
        "spec.sharedCounters[1]",
        "Duplicate value",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, nodeName: n1, {POOL}, "
            "sharedCounters: [{counters: {m: {value: 1}}}]}"
        ),
        "spec.sharedCounters[0].name",
        "",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, nodeName: n1, {POOL}, "
            "sharedCounters: [{name: a, counters: {}}]}"
        ),
        "spec.sharedCounters[0].counters",
        "Required value",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, nodeName: n1, {POOL}, "
            "sharedCounters: [{name: a, counters: {Bad_Name: {value: 1}}}]}"
        ),
        "spec.sharedCounters[0].counters",
        "Invalid value: ",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, allNodes: true, {POOL}, "
            "devices: [{name: d0, consumesCounters: [{counters: {m: {value: 1}}}]}]}"
        ),
        "spec.devices[0].consumesCounters[0].counterSet",
        "",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, allNodes: true, {POOL}, "
            "devices: [{name: d0, consumesCounters: [{counterSet: a, counters: {}}]}]}"
        ),
        "spec.devices[0].consumesCounters[0].counters",
        "Required value",
    ),
    (
        resource_slice(
            f"{{driver: gpu.example.com, allNodes: true, {POOL}, "
            "devices: [{name: d0, consumesCounters: [{counterSet: a, counters: {m: {value: 1}}}, "
            "{counterSet: a, counters: {m: {value: 1}}}]}]}"
        ),
        "spec.devices[0].consumesCounters[1]",
        "Duplicate value",
    ),
]

#: Refused offline only: the v1.36 API server fails on it with an internal error (a division
#: by zero) instead of naming the field.
REFUSED_OFFLINE = [
    (
        shared("{value: 16Gi, requestPolicy: {default: 1Gi, validRange: {min: 1Gi, step: 0}}}"),
        f"{CAPACITY}.validRange.step",
        "must be greater than zero",
    ),
]

ACCEPTED = [
    device_class('{selectors: [{cel: {expression: "device.driver == \\"gpu.example.com\\""}}]}'),
    claim(
        "{requests: [{name: gpu, exactly: {deviceClassName: gpu, count: 2}}, "
        "{name: nic, exactly: {deviceClassName: nic, allocationMode: All}}], "
        "constraints: [{requests: [gpu, nic], matchAttribute: pci.example.com/root}]}"
    ),
    template("{requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}"),
    resource_slice(
        f"{{driver: gpu.example.com, allNodes: true, {POOL}, devices: [{{name: d0, "
        "attributes: {model: {string: a100}, v: {version: 1.2.3}}, "
        "capacity: {memory: {value: 80Gi}}}]}"
    ),
    shared("{value: 16Gi, requestPolicy: {default: 1Gi, validRange: {min: 1Gi, step: 1Gi}}}"),
    shared("{value: 16Gi, requestPolicy: {default: 4Gi, validValues: [4Gi, 8Gi]}}"),
    resource_slice(
        f"{{driver: gpu.example.com, nodeName: n1, {POOL}, sharedCounters: {COUNTERS}}}"
    ),
    resource_slice(
        f"{{driver: gpu.example.com, nodeName: n1, {POOL}, devices: [{{name: half-0, "
        "consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 20Gi}}}]}]}"
    ),
    # The server checks nothing of a request's capacity amounts.
    claim(
        "{requests: [{name: gpu, exactly: {deviceClassName: gpu, "
        "capacity: {requests: {memory: 6Gi}}}}]}"
    ),
]
