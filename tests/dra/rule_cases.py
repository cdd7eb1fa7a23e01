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
]
