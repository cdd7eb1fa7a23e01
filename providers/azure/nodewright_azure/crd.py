"""The ``aksnodeclasses.karpenter.azure.com`` CustomResourceDefinition.

Shaped as Karpenter Azure's: cluster-scoped, short names ``aksnc``/``aksncs``, categories
``karpenter`` and ``nap``, printer columns Ready, Age and (wide) ImageFamily, and two versions
with one schema: ``v1beta1`` (storage) and ``v1alpha2`` (served, deprecated). The schema is
built from this provider's model constants and the core's building blocks, with the CEL rules
the AKSNodeClass CRD carries (kubelet image-GC thresholds, tag keys and values, FIPS per image
family, swap needs ``failSwapOn: false``, local DNS zones).
"""

from __future__ import annotations

from typing import Any

from nodewright.api.crds import conditions, obj, resolved_requirement, rule, string
from nodewright_azure.labels import GROUP
from nodewright_azure.nodeclass import (
    API_VERSION,
    API_VERSION_V1ALPHA2,
    DEFAULT_IMAGE_FAMILY,
    DEFAULT_OS_DISK_SIZE_GB,
    IMAGE_FAMILIES,
    KIND,
)

PLURAL = "aksnodeclasses"
SHORT_NAMES = ("aksnc", "aksncs")
CATEGORIES = ("karpenter", "nap")
DEPRECATION_WARNING = "use v1beta1.AKSNodeClass instead"

Schema = dict[str, Any]

_SUBNET_PATTERN = (
    r"(?i)^\/subscriptions\/[^\/]+\/resourceGroups\/[a-zA-Z0-9_\-().]{0,89}[a-zA-Z0-9_\-()]"
    r"\/providers\/Microsoft\.Network\/virtualNetworks\/[^\/]+\/subnets\/[^\/]+$"
)
_SIZE_PATTERN = r"^\d+(E|P|T|G|M|K|Ei|Pi|Ti|Gi|Mi|Ki)$"
_DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
_DNS_ZONE_PATTERN = (
    r"^(\.|[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*\.?)$"
)


def _int(minimum: int | None = None, maximum: int | None = None, **extra: Any) -> Schema:
    schema: Schema = {"type": "integer", "format": "int32", **extra}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _bool() -> Schema:
    return {"type": "boolean"}


def _kubelet() -> Schema:
    return obj(
        {
            "cpuManagerPolicy": string(enum=["none", "static"], default="none"),
            "cpuCFSQuota": {"type": "boolean", "default": True},
            "cpuCFSQuotaPeriod": string(default="100ms"),
            "imageGCHighThresholdPercent": _int(0, 100),
            "imageGCLowThresholdPercent": _int(0, 100),
            "topologyManagerPolicy": string(
                enum=["restricted", "best-effort", "none", "single-numa-node"], default="none"
            ),
            "allowedUnsafeSysctls": {"type": "array", "items": string()},
            "containerLogMaxSize": string(pattern=_SIZE_PATTERN, default="50Mi"),
            "containerLogMaxFiles": _int(2, default=5),
            "podPidsLimit": {"type": "integer", "format": "int64"},
            "failSwapOn": _bool(),
        },
        (),
        **{
            "x-kubernetes-validations": [
                rule(
                    "has(self.imageGCHighThresholdPercent) && "
                    "has(self.imageGCLowThresholdPercent) ? self.imageGCHighThresholdPercent "
                    "> self.imageGCLowThresholdPercent : true",
                    "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
                )
            ]
        },
    )


def _dns_overrides(*, vnet: bool) -> Schema:
    override = obj(
        {
            "zone": string(minLength=1, maxLength=254, pattern=_DNS_ZONE_PATTERN),
            "queryLogging": string(enum=["Error", "Log"]),
            "protocol": string(enum=["PreferUDP", "ForceTCP"]),
            "forwardDestination": string(enum=["ClusterCoreDNS", "VnetDNS"]),
            "forwardPolicy": string(enum=["Sequential", "RoundRobin", "Random"]),
            "maxConcurrent": _int(0),
            "cacheDuration": string(pattern=_DURATION_PATTERN),
            "serveStaleDuration": string(pattern=_DURATION_PATTERN),
            "serveStale": string(enum=["Verify", "Immediate", "Disable"]),
        },
        required=[
            "cacheDuration",
            "forwardDestination",
            "forwardPolicy",
            "maxConcurrent",
            "protocol",
            "queryLogging",
            "serveStale",
            "serveStaleDuration",
            "zone",
        ],
        **{
            "x-kubernetes-validations": [
                rule(
                    "!(self.zone.endsWith('cluster.local') && "
                    "self.forwardDestination == 'VnetDNS')",
                    "'cluster.local' cannot be forwarded to VnetDNS",
                ),
                rule(
                    "!(self.serveStale == 'Verify' && self.protocol == 'ForceTCP')",
                    "serveStale Verify cannot be used with protocol ForceTCP",
                ),
            ]
        },
    )
    rules = [
        rule(
            "['.', 'cluster.local'].all(z, self.exists(x, x.zone == z))",
            "must contain required zones '.' and 'cluster.local'",
        )
    ]
    if vnet:
        rules += [
            rule(
                "!self.exists(x, x.zone == '.' && x.forwardDestination == 'ClusterCoreDNS')",
                "root zone '.' cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",
            ),
            rule(
                "!self.exists(x, x.zone != '.' && !x.zone.endsWith('cluster.local') && "
                "x.forwardDestination == 'ClusterCoreDNS')",
                "external domains cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",
            ),
        ]
    return {
        "type": "array",
        "items": override,
        "maxItems": 100,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["zone"],
        "x-kubernetes-validations": rules,
    }


def _linux_os_config() -> Schema:
    return obj(
        {
            "swapFileSize": string(pattern=_SIZE_PATTERN),
            # About 25 bounded sysctls; kept as written (the node applies them).
            "sysctls": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "transparentHugePageEnabled": string(enum=["always", "madvise", "never"]),
            "transparentHugePageDefrag": string(
                enum=["always", "defer", "defer+madvise", "madvise", "never"]
            ),
        }
    )


def _tags() -> Schema:
    return {
        "type": "object",
        "additionalProperties": string(),
        "x-kubernetes-validations": [
            rule("self.all(k, size(k) <= 512)", "tags keys must be less than 512 characters"),
            rule(
                "self.all(k, !k.matches('[<>%&?]'))",
                "tags keys must not contain '<', '>', '%', '&', or '?'",
            ),
            rule("self.all(k, !k.contains('\\\\'))", "tags keys must not contain '\\'"),
            rule(
                "self.all(k, size(self[k]) <= 256)", "tags values must be less than 256 characters"
            ),
        ],
    }


def spec_schema() -> Schema:
    """The AKSNodeClass ``spec`` schema (the same in both versions)."""
    return obj(
        {
            "vnetSubnetID": string(pattern=_SUBNET_PATTERN),
            "osDiskSizeGB": _int(30, 2048, default=DEFAULT_OS_DISK_SIZE_GB),
            "imageFamily": string(enum=list(IMAGE_FAMILIES), default=DEFAULT_IMAGE_FAMILY),
            "fipsMode": string(enum=["FIPS", "Disabled"]),
            "tags": _tags(),
            "kubelet": _kubelet(),
            "maxPods": _int(10, 250),
            "security": obj(
                {
                    "encryptionAtHost": _bool(),
                    "trustedLaunch": obj({"vtpm": _bool(), "secureBoot": _bool()}),
                }
            ),
            "localDNS": obj(
                {
                    "mode": string(enum=["Preferred", "Required", "Disabled"]),
                    "vnetDNSOverrides": _dns_overrides(vnet=True),
                    "kubeDNSOverrides": _dns_overrides(vnet=False),
                },
                required=["kubeDNSOverrides", "mode", "vnetDNSOverrides"],
            ),
            "gpu": obj({"mode": string(enum=["Driver", "None"], default="Driver")}),
            "artifactStreaming": obj({"enabled": _bool()}),
            "linuxOSConfig": _linux_os_config(),
        },
        (),
        **{
            "x-kubernetes-validations": [
                rule(
                    "has(self.fipsMode) && self.fipsMode == 'FIPS' ? "
                    "(!has(self.imageFamily) || self.imageFamily != 'Ubuntu2404') : true",
                    "FIPS is not supported for Ubuntu2404",
                ),
                rule(
                    "has(self.fipsMode) && self.fipsMode == 'FIPS' && has(self.imageFamily) && "
                    "self.imageFamily == 'Ubuntu2204' ? (has(self.security) && "
                    "has(self.security.trustedLaunch) && "
                    "((has(self.security.trustedLaunch.vtpm) && "
                    "self.security.trustedLaunch.vtpm) || "
                    "(has(self.security.trustedLaunch.secureBoot) && "
                    "self.security.trustedLaunch.secureBoot))) : true",
                    "FIPS on Ubuntu2204 requires security.trustedLaunch (vtpm or secureBoot)",
                ),
                rule(
                    "!has(self.linuxOSConfig) || !has(self.linuxOSConfig.swapFileSize) || "
                    "(has(self.kubelet) && has(self.kubelet.failSwapOn) && "
                    "self.kubelet.failSwapOn == false)",
                    "kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize "
                    "is specified",
                ),
            ]
        },
    )


def status_schema() -> Schema:
    requirement = resolved_requirement()
    return obj(
        {
            "conditions": conditions(),
            "images": {
                "type": "array",
                "items": obj(
                    {"id": string(), "requirements": {"type": "array", "items": requirement}},
                    required=["id", "requirements"],
                ),
            },
            "kubernetesVersion": string(),
            "localDNSState": string(enum=["Enabled", "Disabled"]),
        }
    )


def _columns() -> list[dict[str, Any]]:
    return [
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": ".status.conditions[?(@.type=='Ready')].status",
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "ImageFamily", "type": "string", "jsonPath": ".spec.imageFamily", "priority": 1},
    ]


def _version(name: str, *, storage: bool) -> dict[str, Any]:
    root = obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "spec": spec_schema(),
            "status": status_schema(),
        }
    )
    root["description"] = "AKSNodeClass is the Schema for the AKSNodeClass API"
    version: dict[str, Any] = {
        "name": name,
        "served": True,
        "storage": storage,
        "additionalPrinterColumns": _columns(),
        "schema": {"openAPIV3Schema": root},
        "subresources": {"status": {}},
    }
    if not storage:
        version["deprecated"] = True
        version["deprecationWarning"] = DEPRECATION_WARNING
    return version


def aks_node_class_crd() -> dict[str, Any]:
    """The CRD: ``v1beta1`` (storage) first, then the deprecated ``v1alpha2``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": KIND.lower(),
                "shortNames": list(SHORT_NAMES),
                "categories": list(CATEGORIES),
            },
            "scope": "Cluster",
            "versions": [
                _version(API_VERSION.split("/", 1)[1], storage=True),
                _version(API_VERSION_V1ALPHA2.split("/", 1)[1], storage=False),
            ],
        },
    }
