"""AKSNodeClass (``karpenter.azure.com/v1beta1``; ``v1alpha2`` is served too, the same schema).

The fields that drive launches are modelled and validated as the CRD validates them; fields
this provider does not act on (``localDNS``, ``linuxOSConfig``, ...) and fields added by newer
CRDs are kept as written, so a manifest round-trips.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from nodewright.api.karpenter import NodeClass, NodeClassStatus
from nodewright.api.meta import Model
from nodewright_azure.labels import GROUP

API_VERSION = f"{GROUP}/v1beta1"
API_VERSION_V1ALPHA2 = f"{GROUP}/v1alpha2"
KIND = "AKSNodeClass"

IMAGE_FAMILIES = ("Ubuntu", "Ubuntu2204", "Ubuntu2404", "AzureLinux")
DEFAULT_IMAGE_FAMILY = "Ubuntu"
DEFAULT_OS_DISK_SIZE_GB = 128

_SUBNET_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/"
    r"virtualNetworks/[^/]+/subnets/[^/]+$",
    re.IGNORECASE,
)
_TAG_KEY_FORBIDDEN = re.compile(r"[<>%&?\\]")


class AKSKubeletConfiguration(Model):
    """The kubelet settings AKS lets users change (AKS CustomKubeletConfig)."""

    cpu_manager_policy: Literal["none", "static"] | None = None
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")
    cpu_cfs_quota_period: str | None = Field(default=None, alias="cpuCFSQuotaPeriod")
    image_gc_high_threshold_percent: int | None = Field(
        default=None, alias="imageGCHighThresholdPercent", ge=0, le=100
    )
    image_gc_low_threshold_percent: int | None = Field(
        default=None, alias="imageGCLowThresholdPercent", ge=0, le=100
    )
    topology_manager_policy: (
        Literal["restricted", "best-effort", "none", "single-numa-node"] | None
    ) = None
    allowed_unsafe_sysctls: list[str] | None = None
    container_log_max_size: str | None = None
    container_log_max_files: int | None = Field(default=None, ge=2)
    pod_pids_limit: int | None = Field(default=None, alias="podPidsLimit")
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
    mode: Literal["Driver", "None"] | None = None


class ArtifactStreaming(Model):
    enabled: bool | None = None


class AKSNodeClassSpec(Model):
    """The spec; unknown fields are kept (``extra="allow"``)."""

    model_config = ConfigDict(extra="allow")

    vnet_subnet_id: str | None = Field(default=None, alias="vnetSubnetID")
    os_disk_size_gb: int = Field(
        default=DEFAULT_OS_DISK_SIZE_GB, alias="osDiskSizeGB", ge=30, le=2048
    )
    image_family: Literal["Ubuntu", "Ubuntu2204", "Ubuntu2404", "AzureLinux"] = "Ubuntu"
    fips_mode: Literal["FIPS", "Disabled"] | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    kubelet: AKSKubeletConfiguration | None = None
    max_pods: int | None = Field(default=None, ge=10, le=250)
    security: AKSSecurity | None = None
    gpu: AKSGPU | None = None
    artifact_streaming: ArtifactStreaming | None = None

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


class AKSNodeClassStatus(NodeClassStatus):
    images: list[dict[str, object]] | None = None
    kubernetes_version: str | None = None


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
