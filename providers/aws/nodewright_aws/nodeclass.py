"""EC2NodeClass (``karpenter.k8s.aws/v1``): the NodeClass of the AWS provider.

The model follows the released v1.14.1 schema and keeps fields it does not know (a newer
Karpenter's additions, the open ``kubelet`` map on main), so a manifest written for
Karpenter loads unchanged. The CRD's CEL rules are checked here and name the field.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from nodewright.api.karpenter import NodeClass, NodeClassStatus
from nodewright.api.meta import Model
from nodewright_aws.labels import API_VERSION, CLUSTER_TAG_PREFIX, RESTRICTED_TAGS

ALIAS_FAMILIES = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
AMI_FAMILIES = frozenset({*ALIAS_FAMILIES.values(), "Custom"})
_SUBNET_ID = re.compile(r"^subnet-[0-9a-z]+$")
_SG_ID = re.compile(r"^sg-[0-9a-z]+$")
_CR_ID = re.compile(r"^cr-[0-9a-z]+$")
_OWNER_ID = re.compile(r"^[0-9]{12}$")


class _Open(Model):
    """Spec parts keep unknown fields (forward compatibility with newer Karpenter)."""

    model_config = ConfigDict(extra="allow")


def _check_tags(tags: dict[str, str], where: str) -> None:
    if len(tags) > 20:
        raise ValueError(f"{where}.tags: at most 20 tags")
    for key, value in tags.items():
        if not key or not value:
            raise ValueError(f"{where}.tags: keys and values must be non-empty ({key!r})")


class SubnetSelectorTerm(_Open):
    tags: dict[str, str] = Field(default_factory=dict)
    id: str | None = None

    @model_validator(mode="after")
    def _check(self) -> SubnetSelectorTerm:
        if self.id is not None:
            if self.tags:
                raise ValueError("subnetSelectorTerms: 'id' is mutually exclusive with 'tags'")
            if not _SUBNET_ID.match(self.id):
                raise ValueError(f"subnetSelectorTerms.id {self.id!r} must match subnet-[0-9a-z]+")
        elif not self.tags:
            raise ValueError("subnetSelectorTerms: a term needs 'tags' or 'id'")
        _check_tags(self.tags, "subnetSelectorTerms")
        return self


class SecurityGroupSelectorTerm(_Open):
    tags: dict[str, str] = Field(default_factory=dict)
    id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _check(self) -> SecurityGroupSelectorTerm:
        set_fields = [f for f in ("tags", "id", "name") if getattr(self, f)]
        if len(set_fields) != 1:
            raise ValueError(
                "securityGroupSelectorTerms: a term needs exactly one of 'tags', 'id' or 'name'"
            )
        if self.id is not None and not _SG_ID.match(self.id):
            raise ValueError(f"securityGroupSelectorTerms.id {self.id!r} must match sg-[0-9a-z]+")
        _check_tags(self.tags, "securityGroupSelectorTerms")
        return self


class CapacityReservationSelectorTerm(_Open):
    tags: dict[str, str] = Field(default_factory=dict)
    id: str | None = None
    owner_id: str | None = Field(default=None, alias="ownerID")
    instance_match_criteria: Literal["open", "targeted"] | None = None

    @model_validator(mode="after")
    def _check(self) -> CapacityReservationSelectorTerm:
        if self.id is not None and (self.tags or self.owner_id):
            raise ValueError("capacityReservationSelectorTerms: 'id' is exclusive")
        if self.id is not None and not _CR_ID.match(self.id):
            raise ValueError(f"capacityReservationSelectorTerms.id {self.id!r} must match cr-…")
        if self.owner_id is not None and not _OWNER_ID.match(self.owner_id):
            raise ValueError("capacityReservationSelectorTerms.ownerID must be 12 digits")
        return self


class AMISelectorTerm(_Open):
    alias: str | None = None
    id: str | None = None
    name: str | None = None
    owner: str | None = None
    ssm_parameter: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> AMISelectorTerm:
        others = [f for f in ("id", "name", "owner", "ssm_parameter", "tags") if getattr(self, f)]
        if self.alias is not None:
            if others:
                raise ValueError("amiSelectorTerms: 'alias' must be alone in its term")
            family, _, version = self.alias.partition("@")
            if family not in ALIAS_FAMILIES or not version or len(self.alias) > 30:
                raise ValueError(
                    f"amiSelectorTerms.alias {self.alias!r} must be <family>@<version> with "
                    f"family one of {', '.join(sorted(ALIAS_FAMILIES))}"
                )
            if family.startswith("windows") and version != "latest":
                raise ValueError(f"amiSelectorTerms.alias {self.alias!r}: Windows allows @latest")
        elif not others:
            raise ValueError(
                "amiSelectorTerms: a term needs one of alias, id, name, ssmParameter or tags"
            )
        if self.id is not None and len(others) > 1:
            raise ValueError("amiSelectorTerms: 'id' is mutually exclusive with other fields")
        return self

    def alias_family(self) -> str | None:
        return ALIAS_FAMILIES[self.alias.partition("@")[0]] if self.alias else None

    def alias_version(self) -> str | None:
        return self.alias.partition("@")[2] if self.alias else None


class EBS(_Open):
    delete_on_termination: bool | None = None
    encrypted: bool | None = None
    iops: int | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: int | None = None
    volume_initialization_rate: int | None = None
    volume_size: str | None = None
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = None

    @field_validator("volume_size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value


class BlockDeviceMapping(_Open):
    device_name: str | None = None
    ebs: EBS | None = None
    root_volume: bool = False

    @model_validator(mode="after")
    def _check(self) -> BlockDeviceMapping:
        if self.ebs is not None and not (self.ebs.snapshot_id or self.ebs.volume_size):
            raise ValueError("blockDeviceMappings.ebs needs snapshotID or volumeSize")
        return self


class MetadataOptions(_Open):
    http_endpoint: Literal["enabled", "disabled"] = "enabled"
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field(
        default="disabled", alias="httpProtocolIPv6"
    )
    http_put_response_hop_limit: int = Field(default=1, ge=1, le=64)
    http_tokens: Literal["required", "optional"] = "required"


class KubeletConfiguration(_Open):
    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: int | None = Field(default=None, ge=0)
    pods_per_core: int | None = Field(default=None, ge=0)
    system_reserved: dict[str, str] | None = None
    kube_reserved: dict[str, str] | None = None
    eviction_hard: dict[str, str] | None = None
    eviction_soft: dict[str, str] | None = None
    eviction_soft_grace_period: dict[str, str] | None = None
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = Field(
        default=None, alias="imageGCHighThresholdPercent", ge=0, le=100
    )
    image_gc_low_threshold_percent: int | None = Field(
        default=None, alias="imageGCLowThresholdPercent", ge=0, le=100
    )
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")

    @model_validator(mode="after")
    def _check(self) -> KubeletConfiguration:
        high, low = self.image_gc_high_threshold_percent, self.image_gc_low_threshold_percent
        if high is not None and low is not None and high <= low:
            raise ValueError(
                "kubelet.imageGCHighThresholdPercent must be greater than "
                "imageGCLowThresholdPercent"
            )
        if set(self.eviction_soft or {}) != set(self.eviction_soft_grace_period or {}):
            raise ValueError(
                "kubelet.evictionSoft and evictionSoftGracePeriod must have the same keys"
            )
        return self


class EC2NodeClassSpec(_Open):
    subnet_selector_terms: list[SubnetSelectorTerm] = Field(min_length=1, max_length=30)
    security_group_selector_terms: list[SecurityGroupSelectorTerm] = Field(
        min_length=1, max_length=30
    )
    ami_selector_terms: list[AMISelectorTerm] = Field(min_length=1, max_length=30)
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] = Field(
        default_factory=list, max_length=30
    )
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    ami_family: str | None = None
    user_data: str | None = None
    role: str | None = None
    instance_profile: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    kubelet: KubeletConfiguration | None = None
    block_device_mappings: list[BlockDeviceMapping] = Field(default_factory=list, max_length=50)
    instance_store_policy: Literal["RAID0"] | None = None
    detailed_monitoring: bool | None = None
    metadata_options: MetadataOptions = Field(default_factory=MetadataOptions)
    context: str | None = None

    @model_validator(mode="after")
    def _check(self) -> EC2NodeClassSpec:
        # The CRD requires exactly one; "neither" is accepted here so that converted v1alpha5
        # manifests (whose profile was a controller setting) load, and is reported by the
        # status unless --provider-option aws.default-instance-profile is set.
        if self.role is not None and self.instance_profile is not None:
            raise ValueError("spec: exactly one of 'role' or 'instanceProfile' must be set")
        if self.role == "" or self.instance_profile == "":
            raise ValueError("spec.role / spec.instanceProfile must be non-empty")
        aliases = [t for t in self.ami_selector_terms if t.alias]
        if aliases and len(self.ami_selector_terms) > 1:
            raise ValueError("spec.amiSelectorTerms: an 'alias' term must be the only term")
        if self.ami_family is not None and self.ami_family not in AMI_FAMILIES:
            raise ValueError(
                f"spec.amiFamily {self.ami_family!r} must be one of "
                f"{', '.join(sorted(AMI_FAMILIES))}"
            )
        if not aliases and self.ami_family is None:
            raise ValueError("spec.amiFamily is required unless amiSelectorTerms has an alias")
        if aliases and self.ami_family not in (None, "Custom", aliases[0].alias_family()):
            raise ValueError(
                f"spec.amiFamily {self.ami_family!r} must match the alias's family or be Custom"
            )
        for key in self.tags:
            if not key:
                raise ValueError("spec.tags: keys must be non-empty")
            if key in RESTRICTED_TAGS or key.startswith(CLUSTER_TAG_PREFIX.rstrip("/")):
                raise ValueError(f"spec.tags: tag {key!r} is restricted (Karpenter sets it)")
        if sum(1 for m in self.block_device_mappings if m.root_volume) > 1:
            raise ValueError("spec.blockDeviceMappings: at most one rootVolume")
        return self

    def effective_ami_family(self) -> str:
        """The family from the alias when ``amiFamily`` is unset (Karpenter's rule)."""
        alias = next((t.alias_family() for t in self.ami_selector_terms if t.alias), None)
        if self.ami_family is not None and self.ami_family != "Custom":
            return self.ami_family
        return self.ami_family or alias or "Custom"


class EC2NodeClassStatus(NodeClassStatus):
    model_config = ConfigDict(extra="allow")

    subnets: list[dict[str, Any]] = Field(default_factory=list)
    security_groups: list[dict[str, Any]] = Field(default_factory=list)
    amis: list[dict[str, Any]] = Field(default_factory=list)
    capacity_reservations: list[dict[str, Any]] = Field(default_factory=list)
    instance_profile: str | None = None


class EC2NodeClass(NodeClass):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "EC2NodeClass"

    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus = Field(default_factory=EC2NodeClassStatus)
