"""EC2NodeClass (``karpenter.k8s.aws/v1``): the NodeClass of the AWS provider.

The model follows the released v1.14.1 schema and keeps fields it does not know (a newer
Karpenter's additions, the open ``kubelet`` map on main), so a manifest written for
Karpenter loads unchanged. The CRD's CEL rules are checked here and name the field.

The status models are in :mod:`nodewright_aws.nodeclassstatus`. The CRD
(:mod:`nodewright_aws.crd`) is generated from the models: its CEL rules
(:class:`~nodewright.plugin.Rule`) and the keywords only the API server checks
(:class:`~nodewright.plugin.Schema`) are declared beside the fields they constrain.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from nodewright.plugin import (
    QUANTITY_PATTERN,
    Int32,
    Int64,
    Model,
    NodeClass,
    Rule,
    Schema,
    validations,
)
from nodewright_aws.labels import API_VERSION, CLUSTER_TAG_PREFIX, RESTRICTED_TAGS
from nodewright_aws.launchoptions import (
    NETWORK_INTERFACE_RULES,
    ConnectionTracking,
    CPUOptions,
    NetworkInterface,
    PlacementGroupSelector,
    check_network_interfaces,
)
from nodewright_aws.nodeclassstatus import CAPACITY_RESERVATION_ID, OWNER_ID, EC2NodeClassStatus

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

# What the CRD checks beyond the model (the API server rejects these before the model sees
# them): Karpenter's patterns, eviction signals and reserved-resource keys.
_EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
_RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")
_PERCENT_OR_QUANTITY = (
    r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||"
    + QUANTITY_PATTERN.removeprefix("^").removesuffix("$")
    + ")$"
)
_VOLUME_SIZE = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|"
    r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|"
    r"([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)


def _quoted(values: Any) -> str:
    return ",".join(f"'{v}'" for v in values)


#: Tags in a selector term: at most 20, no empty key or value.
SelectorTags = Annotated[
    dict[str, str],
    Schema(maxProperties=20),
    Rule("self.all(k, k != '' && self[k] != '')", "empty tag keys or values aren't supported"),
]


def _keys_in(keys: tuple[str, ...], field: str) -> Rule:
    return Rule(
        f"self.all(x, x in [{_quoted(keys)}])", f"valid keys for {field} are [{_quoted(keys)}]"
    )


def _not_negative(field: str) -> Rule:
    return Rule(
        "self.all(x, !self[x].startsWith('-'))",
        f"{field} value cannot be a negative resource quantity",
    )


def _selector_rules(
    name: str, fields: tuple[str, ...], exclusive: tuple[str, ...], *more: Rule
) -> dict[str, Any]:
    """``json_schema_extra`` of a list of ORed selector terms: not empty, each term names one
    of ``fields`` (``owner`` alone is not enough), each of ``exclusive`` stands alone, and
    ``more``."""
    named = [f for f in fields if f != "owner"]
    rules = [
        Rule("self.size() != 0", f"{name} cannot be empty"),
        Rule(
            "self.all(x, " + " || ".join(f"has(x.{f})" for f in named) + ")",
            f"expected at least one, got none, [{_quoted(named)}]",
        ),
    ]
    for field in exclusive:
        others = " || ".join(f"has(x.{f})" for f in fields if f != field)
        rules.append(
            Rule(
                f"!self.exists(x, has(x.{field}) && ({others}))",
                f"'{field}' is mutually exclusive, cannot be set with a combination of other "
                f"fields in {name}",
            )
        )
    return validations(*rules, *more)


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
    tags: SelectorTags = Field(default_factory=dict)
    id: Annotated[str | None, Schema(pattern="subnet-[0-9a-z]+")] = None

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
    tags: SelectorTags = Field(default_factory=dict)
    id: Annotated[str | None, Schema(pattern="sg-[0-9a-z]+")] = None
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
    model_config = ConfigDict(
        json_schema_extra=validations(
            Rule(
                "has(self.tags) || has(self.id)", "expected at least one, got none, ['tags', 'id']"
            ),
            Rule(
                "!(has(self.id) && (has(self.tags) || has(self.ownerID)))",
                "'id' is mutually exclusive, cannot be set along with tags or ownerID in a "
                "capacity reservation selector term",
            ),
        )
    )

    tags: SelectorTags = Field(default_factory=dict)
    id: Annotated[str | None, Schema(pattern=CAPACITY_RESERVATION_ID.pattern)] = None
    owner_id: Annotated[str | None, Schema(pattern=OWNER_ID.pattern)] = Field(
        default=None, alias="ownerID"
    )
    instance_match_criteria: Literal["open", "targeted"] | None = None

    @model_validator(mode="after")
    def _check(self) -> CapacityReservationSelectorTerm:
        if self.id is not None and (self.tags or self.owner_id):
            raise ValueError("capacityReservationSelectorTerms: 'id' is exclusive")
        if self.id is not None and not CAPACITY_RESERVATION_ID.match(self.id):
            raise ValueError(f"capacityReservationSelectorTerms.id {self.id!r} must match cr-…")
        if self.owner_id is not None and not OWNER_ID.match(self.owner_id):
            raise ValueError("capacityReservationSelectorTerms.ownerID must be 12 digits")
        return self


class AMISelectorTerm(_Open):
    alias: Annotated[
        str | None,
        Schema(maxLength=30),
        Rule(
            "self.matches('^[a-zA-Z0-9]+@.+$')",
            "'alias' is improperly formatted, must match the format 'family@version'",
        ),
        Rule(
            f"self.find('^[^@]+') in [{_quoted(sorted(ALIAS_FAMILIES))}]",
            "family is not supported, must be one of the following: "
            f"{_quoted(sorted(ALIAS_FAMILIES))}",
        ),
        Rule(
            "self.find('^[^@]+').startsWith('windows') ? self.find('[^@]+$') == 'latest' : true",
            "windows families may only specify version 'latest'",
        ),
    ] = None
    id: Annotated[str | None, Schema(pattern="ami-[0-9a-z]+")] = None
    name: str | None = None
    owner: str | None = None
    ssm_parameter: str | None = None
    tags: SelectorTags = Field(default_factory=dict)

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
    model_config = ConfigDict(
        json_schema_extra=validations(
            Rule(
                "has(self.snapshotID) || has(self.volumeSize)",
                "snapshotID or volumeSize must be defined",
            )
        )
    )

    delete_on_termination: bool | None = None
    encrypted: bool | None = None
    iops: Int64 | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: Int64 | None = None
    volume_initialization_rate: Annotated[Int32 | None, Schema(minimum=100, maximum=300)] = None
    volume_size: Annotated[str | None, Schema(pattern=_VOLUME_SIZE)] = None
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = None

    @field_validator("volume_size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value


class BlockDeviceMapping(_Open):
    device_name: str | None = None
    ebs: EBS | None = None
    root_volume: Annotated[bool, Schema(default=None)] = False

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
    http_put_response_hop_limit: Int64 = Field(default=1, ge=1, le=64)
    http_tokens: Literal["required", "optional"] = "required"


class KubeletConfiguration(_Open):
    model_config = ConfigDict(
        json_schema_extra=validations(
            Rule(
                "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) "
                "? self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent : true",
                "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            ),
            Rule(
                "has(self.evictionSoft) ? self.evictionSoft.all(e, "
                "(e in self.evictionSoftGracePeriod)) : true",
                "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
            ),
            Rule(
                "has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, "
                "(e in self.evictionSoft)) : true",
                "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
            ),
        )
    )

    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: Int32 | None = Field(default=None, ge=0)
    pods_per_core: Int32 | None = Field(default=None, ge=0)
    system_reserved: Annotated[
        dict[str, Annotated[str, Schema(pattern=QUANTITY_PATTERN)]] | None,
        _keys_in(_RESERVED_KEYS, "systemReserved"),
        _not_negative("systemReserved"),
    ] = None
    kube_reserved: Annotated[
        dict[str, Annotated[str, Schema(pattern=QUANTITY_PATTERN)]] | None,
        _keys_in(_RESERVED_KEYS, "kubeReserved"),
        _not_negative("kubeReserved"),
    ] = None
    eviction_hard: Annotated[
        dict[str, Annotated[str, Schema(pattern=_PERCENT_OR_QUANTITY)]] | None,
        _keys_in(_EVICTION_SIGNALS, "evictionHard"),
    ] = None
    eviction_soft: Annotated[
        dict[str, Annotated[str, Schema(pattern=_PERCENT_OR_QUANTITY)]] | None,
        _keys_in(_EVICTION_SIGNALS, "evictionSoft"),
    ] = None
    eviction_soft_grace_period: Annotated[
        dict[str, str] | None, _keys_in(_EVICTION_SIGNALS, "evictionSoftGracePeriod")
    ] = None
    eviction_max_pod_grace_period: Int32 | None = None
    image_gc_high_threshold_percent: Int32 | None = Field(
        default=None, alias="imageGCHighThresholdPercent", ge=0, le=100
    )
    image_gc_low_threshold_percent: Int32 | None = Field(
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


def _spec_rules() -> dict[str, Any]:
    rules = [
        Rule(
            "(has(self.role) && !has(self.instanceProfile)) || "
            "(!has(self.role) && has(self.instanceProfile))",
            "must specify exactly one of ['role', 'instanceProfile']",
        ),
        Rule(
            "(has(oldSelf.role) && has(self.role)) || "
            "(has(oldSelf.instanceProfile) && has(self.instanceProfile))",
            "changing from 'instanceProfile' to 'role' is not supported. You must delete and "
            "recreate this node class if you want to change this.",
        ),
    ]
    for alias, family in sorted(ALIAS_FAMILIES.items()):
        rules.append(
            Rule(
                "!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
                f"x.alias.find('^[^@]+') == '{alias}') ? (self.amiFamily == 'Custom' || "
                f"self.amiFamily == '{family}') : true)",
                f"if set, amiFamily must be '{family}' or 'Custom' when using an {family} alias",
            )
        )
    rules.append(
        Rule(
            "self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)",
            "must specify amiFamily if amiSelectorTerms does not contain an alias",
        )
    )
    return validations(*rules)


def _tag_rules() -> dict[str, Any]:
    rules = [
        Rule("self.all(k, k != '')", "empty tag keys aren't supported"),
        Rule(
            f"self.all(k, !k.startsWith('{CLUSTER_TAG_PREFIX.rstrip('/')}'))",
            f"tag contains a restricted tag matching {CLUSTER_TAG_PREFIX}",
        ),
    ]
    rules += [
        Rule(f"self.all(k, k != '{key}')", f"tag contains a restricted tag matching {key}")
        for key in sorted(RESTRICTED_TAGS)
    ]
    return validations(*rules)


class EC2NodeClassSpec(_Open):
    model_config = ConfigDict(json_schema_extra=_spec_rules())

    subnet_selector_terms: list[SubnetSelectorTerm] = Field(
        min_length=1,
        max_length=30,
        json_schema_extra=_selector_rules("subnetSelectorTerms", ("id", "tags"), ("id",)),
    )
    security_group_selector_terms: list[SecurityGroupSelectorTerm] = Field(
        min_length=1,
        max_length=30,
        json_schema_extra=_selector_rules(
            "securityGroupSelectorTerms", ("id", "name", "tags"), ("id", "name")
        ),
    )
    ami_selector_terms: list[AMISelectorTerm] = Field(
        min_length=1,
        max_length=30,
        json_schema_extra=_selector_rules(
            "amiSelectorTerms",
            ("alias", "id", "name", "owner", "ssmParameter", "tags"),
            ("id", "alias"),
            Rule(
                "!(self.exists(x, has(x.alias)) && self.size() != 1)",
                "'alias' is mutually exclusive, cannot be set with a combination of other "
                "amiSelectorTerms",
            ),
        ),
    )
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] = Field(
        default_factory=list, max_length=30
    )
    placement_group_selector: PlacementGroupSelector | None = None
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    ami_family: Annotated[str | None, Schema(enum=sorted(AMI_FAMILIES))] = None
    user_data: str | None = None
    role: Annotated[
        str | None,
        Rule("self != ''", "role cannot be empty"),
        Rule("self == oldSelf", "immutable field changed"),
    ] = None
    instance_profile: Annotated[
        str | None, Rule("self != ''", "instanceProfile cannot be empty")
    ] = None
    tags: dict[str, str] = Field(default_factory=dict, json_schema_extra=_tag_rules())
    kubelet: KubeletConfiguration | None = None
    block_device_mappings: list[BlockDeviceMapping] = Field(
        default_factory=list,
        max_length=50,
        json_schema_extra=validations(
            Rule(
                "self.filter(x, has(x.rootVolume) ? x.rootVolume == true : false).size() <= 1",
                "must have only one blockDeviceMappings with rootVolume",
            )
        ),
    )
    instance_store_policy: Literal["RAID0"] | None = None
    network_interfaces: list[NetworkInterface] | None = Field(
        default=None, max_length=150, json_schema_extra=NETWORK_INTERFACE_RULES
    )
    ip_prefix_count: Annotated[Int32 | None, Schema(minimum=0)] = None
    detailed_monitoring: bool | None = None
    metadata_options: Annotated[MetadataOptions, Schema(default=MetadataOptions().to_dict())] = (
        Field(default_factory=MetadataOptions)
    )
    connection_tracking: ConnectionTracking | None = None
    context: str | None = None
    cpu_options: CPUOptions | None = None

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
        check_network_interfaces(self.network_interfaces or [])
        return self

    def nested_virtualization(self) -> bool:
        """``cpuOptions.nestedVirtualization: enabled``."""
        options = self.cpu_options
        return options is not None and options.nested_virtualization == "enabled"

    def effective_ami_family(self) -> str:
        """The family from the alias when ``amiFamily`` is unset (Karpenter's rule)."""
        alias = next((t.alias_family() for t in self.ami_selector_terms if t.alias), None)
        if self.ami_family is not None and self.ami_family != "Custom":
            return self.ami_family
        return self.ami_family or alias or "Custom"


class EC2NodeClass(NodeClass):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "EC2NodeClass"

    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus = Field(default_factory=EC2NodeClassStatus)
