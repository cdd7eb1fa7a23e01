"""AKSNodeClass (``karpenter.azure.com/v1beta1``; ``v1alpha2`` is served too, the same schema).

The fields that drive launches are modelled and validated as the CRD validates them (and
``linuxOSConfig`` in :mod:`nodewright_azure.linuxosconfig`); fields this provider does not act
on (``localDNS``, ...) and fields added by newer CRDs are kept as written, so a manifest
round-trips.

The CRD (:mod:`nodewright_azure.crd`) is generated from these models: its CEL rules
(:class:`~nodewright.plugin.Rule`), defaults the API server applies and keywords only it
checks (:class:`~nodewright.plugin.Schema`) are declared beside the fields; the shapes of the
fields kept as written are the ``SchemaFrom`` models below.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from nodewright.plugin import (
    Int32,
    Int64,
    Model,
    NodeClass,
    NodeClassStatus,
    ResolvedRequirement,
    Rule,
    Schema,
    SchemaFrom,
    validations,
)
from nodewright_azure.labels import GROUP
from nodewright_azure.linuxosconfig import SIZE_PATTERN, LinuxOSConfig

API_VERSION = f"{GROUP}/v1beta1"
API_VERSION_V1ALPHA2 = f"{GROUP}/v1alpha2"
KIND = "AKSNodeClass"

DEFAULT_OS_DISK_SIZE_GB = 128

_SUBNET_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/"
    r"virtualNetworks/[^/]+/subnets/[^/]+$",
    re.IGNORECASE,
)
_TAG_KEY_FORBIDDEN = re.compile(r"[<>%&?\\]")

# The CRD's own patterns (the API server checks them before the model sees a manifest).
_SUBNET_PATTERN = (
    r"(?i)^\/subscriptions\/[^\/]+\/resourceGroups\/[a-zA-Z0-9_\-().]{0,89}[a-zA-Z0-9_\-()]"
    r"\/providers\/Microsoft\.Network\/virtualNetworks\/[^\/]+\/subnets\/[^\/]+$"
)
_DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
_DNS_ZONE_PATTERN = (
    r"^(\.|[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*\.?)$"
)


class AKSKubeletConfiguration(Model):
    """The kubelet settings AKS lets users change (AKS CustomKubeletConfig).

    The model leaves unset what the user did not set; the CRD's defaults are what AKS applies.
    """

    model_config = ConfigDict(
        json_schema_extra=validations(
            Rule(
                "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) "
                "? self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent : true",
                "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            )
        )
    )

    cpu_manager_policy: Annotated[Literal["none", "static"] | None, Schema(default="none")] = None
    cpu_cfs_quota: Annotated[bool | None, Schema(default=True)] = Field(
        default=None, alias="cpuCFSQuota"
    )
    cpu_cfs_quota_period: Annotated[str | None, Schema(default="100ms")] = Field(
        default=None, alias="cpuCFSQuotaPeriod"
    )
    image_gc_high_threshold_percent: Int32 | None = Field(
        default=None, alias="imageGCHighThresholdPercent", ge=0, le=100
    )
    image_gc_low_threshold_percent: Int32 | None = Field(
        default=None, alias="imageGCLowThresholdPercent", ge=0, le=100
    )
    topology_manager_policy: Annotated[
        Literal["restricted", "best-effort", "none", "single-numa-node"] | None,
        Schema(default="none"),
    ] = None
    allowed_unsafe_sysctls: list[str] | None = None
    container_log_max_size: Annotated[str | None, Schema(pattern=SIZE_PATTERN, default="50Mi")] = (
        None
    )
    container_log_max_files: Annotated[Int32 | None, Schema(default=5)] = Field(default=None, ge=2)
    pod_pids_limit: Int64 | None = Field(default=None, alias="podPidsLimit")
    fail_swap_on: bool | None = None

    @model_validator(mode="after")
    def _high_above_low(self) -> AKSKubeletConfiguration:
        high, low = self.image_gc_high_threshold_percent, self.image_gc_low_threshold_percent
        if high is not None and low is not None and high <= low:
            raise ValueError(
                "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"
            )
        return self


class TrustedLaunch(Model):
    vtpm: bool | None = None
    secure_boot: bool | None = None


class AKSSecurity(Model):
    encryption_at_host: bool | None = None
    trusted_launch: TrustedLaunch | None = None


class AKSGPU(Model):
    mode: Annotated[Literal["Driver", "None"] | None, Schema(default="Driver")] = None


class ArtifactStreaming(Model):
    enabled: bool | None = None


class DNSOverride(Model):
    """The shape of one ``localDNS`` zone override (kept as written)."""

    model_config = ConfigDict(
        json_schema_extra=validations(
            Rule(
                "!(self.zone.endsWith('cluster.local') && self.forwardDestination == 'VnetDNS')",
                "'cluster.local' cannot be forwarded to VnetDNS",
            ),
            Rule(
                "!(self.serveStale == 'Verify' && self.protocol == 'ForceTCP')",
                "serveStale Verify cannot be used with protocol ForceTCP",
            ),
        )
    )

    zone: Annotated[str, Schema(minLength=1, maxLength=254, pattern=_DNS_ZONE_PATTERN)]
    query_logging: Literal["Error", "Log"]
    protocol: Literal["PreferUDP", "ForceTCP"]
    forward_destination: Literal["ClusterCoreDNS", "VnetDNS"]
    forward_policy: Literal["Sequential", "RoundRobin", "Random"]
    max_concurrent: Annotated[Int32, Schema(minimum=0)]
    cache_duration: Annotated[str, Schema(pattern=_DURATION_PATTERN)]
    serve_stale_duration: Annotated[str, Schema(pattern=_DURATION_PATTERN)]
    serve_stale: Literal["Verify", "Immediate", "Disable"]


_REQUIRED_ZONES = Rule(
    "['.', 'cluster.local'].all(z, self.exists(x, x.zone == z))",
    "must contain required zones '.' and 'cluster.local'",
)
#: A list of overrides keyed by zone.
_OVERRIDES = Schema({"maxItems": 100, "x-kubernetes-list-type": "map"})
_BY_ZONE = Schema({"x-kubernetes-list-map-keys": ["zone"]})


class LocalDNS(Model):
    mode: Literal["Preferred", "Required", "Disabled"]
    vnet_dns_overrides: Annotated[
        list[DNSOverride],
        _OVERRIDES,
        _BY_ZONE,
        _REQUIRED_ZONES,
        Rule(
            "!self.exists(x, x.zone == '.' && x.forwardDestination == 'ClusterCoreDNS')",
            "root zone '.' cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",
        ),
        Rule(
            "!self.exists(x, x.zone != '.' && !x.zone.endsWith('cluster.local') && "
            "x.forwardDestination == 'ClusterCoreDNS')",
            "external domains cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",
        ),
    ] = Field(alias="vnetDNSOverrides")
    kube_dns_overrides: Annotated[list[DNSOverride], _OVERRIDES, _BY_ZONE, _REQUIRED_ZONES] = Field(
        alias="kubeDNSOverrides"
    )


def _spec_rules() -> dict[str, Any]:
    return validations(
        Rule(
            "has(self.fipsMode) && self.fipsMode == 'FIPS' ? "
            "(!has(self.imageFamily) || self.imageFamily != 'Ubuntu2404') : true",
            "FIPS is not supported for Ubuntu2404",
        ),
        Rule(
            "has(self.fipsMode) && self.fipsMode == 'FIPS' && has(self.imageFamily) && "
            "self.imageFamily == 'Ubuntu2204' ? (has(self.security) && "
            "has(self.security.trustedLaunch) && "
            "((has(self.security.trustedLaunch.vtpm) && self.security.trustedLaunch.vtpm) || "
            "(has(self.security.trustedLaunch.secureBoot) && "
            "self.security.trustedLaunch.secureBoot))) : true",
            "FIPS on Ubuntu2204 requires security.trustedLaunch (vtpm or secureBoot)",
        ),
        Rule(
            "!has(self.linuxOSConfig) || !has(self.linuxOSConfig.swapFileSize) || "
            "(has(self.kubelet) && has(self.kubelet.failSwapOn) && "
            "self.kubelet.failSwapOn == false)",
            "kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize is specified",
        ),
    )


_TAG_RULES = validations(
    Rule("self.all(k, size(k) <= 512)", "tags keys must be less than 512 characters"),
    Rule(
        "self.all(k, !k.matches('[<>%&?]'))",
        "tags keys must not contain '<', '>', '%', '&', or '?'",
    ),
    Rule("self.all(k, !k.contains('\\\\'))", "tags keys must not contain '\\'"),
    Rule("self.all(k, size(self[k]) <= 256)", "tags values must be less than 256 characters"),
)


class AKSNodeClassSpec(Model):
    """The spec; unknown fields are kept (``extra="allow"``)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_spec_rules())

    vnet_subnet_id: Annotated[str | None, Schema(pattern=_SUBNET_PATTERN)] = Field(
        default=None, alias="vnetSubnetID"
    )
    os_disk_size_gb: Int32 = Field(
        default=DEFAULT_OS_DISK_SIZE_GB, alias="osDiskSizeGB", ge=30, le=2048
    )
    image_family: Literal["Ubuntu", "Ubuntu2204", "Ubuntu2404", "AzureLinux"] = "Ubuntu"
    fips_mode: Literal["FIPS", "Disabled"] | None = None
    tags: dict[str, str] = Field(default_factory=dict, json_schema_extra=_TAG_RULES)
    kubelet: AKSKubeletConfiguration | None = None
    max_pods: Int32 | None = Field(default=None, ge=10, le=250)
    security: AKSSecurity | None = None
    local_dns: Annotated[dict[str, Any] | None, SchemaFrom(LocalDNS)] = Field(
        default=None, alias="localDNS"
    )
    gpu: AKSGPU | None = None
    artifact_streaming: ArtifactStreaming | None = None
    linux_os_config: LinuxOSConfig | None = Field(default=None, alias="linuxOSConfig")

    @field_validator("vnet_subnet_id")
    @classmethod
    def _check_subnet(cls, value: str | None) -> str | None:
        if value is not None and not _SUBNET_ID.match(value):
            raise ValueError(
                f"{value!r} is not a subnet resource ID (/subscriptions/<id>/resourceGroups/"
                "<rg>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>)"
            )
        return value

    @field_validator("tags")
    @classmethod
    def _check_tags(cls, value: dict[str, str]) -> dict[str, str]:
        for key, tag in value.items():
            if len(key) > 512 or _TAG_KEY_FORBIDDEN.search(key):
                raise ValueError(f"tag key {key!r}: at most 512 characters, none of <>%&?\\")
            if len(tag) > 256:
                raise ValueError(f"tag {key!r}: the value is longer than 256 characters")
        return value

    @model_validator(mode="after")
    def _check_swap(self) -> AKSNodeClassSpec:
        config = self.linux_os_config
        if config is not None and config.swap_file_size is not None:
            kubelet = self.kubelet
            if kubelet is None or kubelet.fail_swap_on is not False:
                raise ValueError(
                    "kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize "
                    "is specified"
                )
        return self

    @model_validator(mode="after")
    def _check_fips(self) -> AKSNodeClassSpec:
        if self.fips_mode == "FIPS" and self.image_family == "Ubuntu2404":
            raise ValueError("fipsMode: FIPS is not supported on imageFamily Ubuntu2404")
        if self.fips_mode == "FIPS" and self.image_family == "Ubuntu2204":
            trusted = self.security.trusted_launch if self.security else None
            if trusted is None or not (trusted.vtpm or trusted.secure_boot):
                raise ValueError(
                    "fipsMode: FIPS on imageFamily Ubuntu2204 requires "
                    "security.trustedLaunch (vtpm or secureBoot)"
                )
        return self

    @property
    def os_sku(self) -> str:
        """The ``kubernetes.azure.com/os-sku`` label value."""
        return "AzureLinux" if self.image_family == "AzureLinux" else "Ubuntu"


class ImageStatus(Model):
    """The shape of a ``status.images`` entry (the status keeps entries as written)."""

    id: str
    requirements: list[ResolvedRequirement]


class AKSNodeClassStatus(NodeClassStatus):
    images: list[Annotated[dict[str, object], SchemaFrom(ImageStatus)]] | None = None
    kubernetes_version: str | None = None
    local_dns_state: Annotated[str | None, Schema(enum=["Enabled", "Disabled"])] = Field(
        default=None, alias="localDNSState"
    )


class AKSNodeClass(NodeClass):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = KIND

    spec: AKSNodeClassSpec = Field(default_factory=AKSNodeClassSpec)
    status: AKSNodeClassStatus = Field(default_factory=AKSNodeClassStatus)


#: NodeClaim annotations of the hash of the NodeClass spec the node was launched from.
HASH_ANNOTATION = f"{GROUP}/aksnodeclass-hash"
HASH_VERSION_ANNOTATION = f"{GROUP}/aksnodeclass-hash-version"
#: Bumped when what the hash covers changes, so old NodeClaims are not all seen as drifted.
#: Not Karpenter Azure's ``v3``: its hash is a different function of the spec, so NodeClaims it
#: annotated (a cluster moving to nodewright) must not be compared with nodewright's hash;
#: with different versions neither side reports their nodes drifted.
HASH_VERSION = "nodewright-v1"


def spec_hash(spec: AKSNodeClassSpec) -> str:
    """A stable hash of the fields that shape a node; ``tags`` are left out (they are patched
    in place, not a reason to replace nodes). A decimal uint64, as Karpenter writes it."""
    fields = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    fields.pop("tags", None)
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).digest()
    return str(int.from_bytes(digest[:8], "big"))
