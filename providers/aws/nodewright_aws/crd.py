"""The ``ec2nodeclasses.karpenter.k8s.aws`` CustomResourceDefinition.

Shaped as Karpenter's AWS provider ships it (v1.14): cluster-scoped, short names
``ec2nc``/``ec2ncs``, category ``karpenter``, printer columns Ready, Age and (wide) Role, one
served and stored version ``v1``, with the CEL rules the CRD carries: exactly one of ``role``
and ``instanceProfile`` (and no switching between them), ``amiFamily`` required unless an
alias term is used and then only the alias's family or Custom, the alias format and family,
an alias or an id alone, mutually exclusive selector fields, restricted tag keys, kubelet
reserved/eviction keys, one root volume. The schema is built here from this provider's model
constants and the core's building blocks, not copied.
"""

from __future__ import annotations

from typing import Any

from nodewright.api.crds import (
    QUANTITY_PATTERN,
    conditions,
    crd,
    obj,
    resolved_requirement,
    rule,
    string,
)
from nodewright_aws.labels import API_VERSION, GROUP, RESTRICTED_TAGS
from nodewright_aws.nodeclass import ALIAS_FAMILIES, AMI_FAMILIES

PLURAL = "ec2nodeclasses"
SHORT_NAMES = ("ec2nc", "ec2ncs")
KIND = "EC2NodeClass"

Schema = dict[str, Any]

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
_VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")


def cel(rules: list[dict[str, Any]]) -> dict[str, Any]:
    """Keyword arguments adding CEL rules (``x-kubernetes-validations``) to a schema."""
    return {"x-kubernetes-validations": rules}


def _int(fmt: str = "int32", minimum: int | None = None, maximum: int | None = None) -> Schema:
    schema: Schema = {"type": "integer", "format": fmt}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _bool() -> Schema:
    return {"type": "boolean"}


def _quoted(values: Any) -> str:
    return ",".join(f"'{v}'" for v in values)


def _tags(*, selector: bool) -> Schema:
    schema: Schema = {"type": "object", "additionalProperties": string()}
    if selector:
        schema["maxProperties"] = 20
        schema["x-kubernetes-validations"] = [
            rule(
                "self.all(k, k != '' && self[k] != '')", "empty tag keys or values aren't supported"
            )
        ]
    return schema


def _string_map(keys: tuple[str, ...], field: str, pattern: str, no_negative: bool) -> Schema:
    rules = [
        rule(
            f"self.all(x, x in [{_quoted(keys)}])",
            f"valid keys for {field} are [{_quoted(keys)}]",
        )
    ]
    if no_negative:
        rules.append(
            rule(
                "self.all(x, !self[x].startsWith('-'))",
                f"{field} value cannot be a negative resource quantity",
            )
        )
    return {
        "type": "object",
        "additionalProperties": string(pattern=pattern),
        "x-kubernetes-validations": rules,
    }


def _selector_terms(properties: dict[str, Schema], name: str, exclusive: tuple[str, ...]) -> Schema:
    """A list of ORed terms; each field named in ``exclusive`` may not be combined."""
    fields = list(properties)
    rules = [
        rule("self.size() != 0", f"{name} cannot be empty"),
        rule(
            "self.all(x, " + " || ".join(f"has(x.{f})" for f in fields if f != "owner") + ")",
            f"expected at least one, got none, [{_quoted(f for f in fields if f != 'owner')}]",
        ),
    ]
    for field in exclusive:
        others = " || ".join(f"has(x.{f})" for f in fields if f != field)
        rules.append(
            rule(
                f"!self.exists(x, has(x.{field}) && ({others}))",
                f"'{field}' is mutually exclusive, cannot be set with a combination of other "
                f"fields in {name}",
            )
        )
    return {
        "type": "array",
        "items": obj(properties),
        "minItems": 1,
        "maxItems": 30,
        "x-kubernetes-validations": rules,
    }


def _ami_terms() -> Schema:
    families = sorted(ALIAS_FAMILIES)
    terms = _selector_terms(
        {
            "alias": string(
                maxLength=30,
                **cel(
                    [
                        rule(
                            "self.matches('^[a-zA-Z0-9]+@.+$')",
                            "'alias' is improperly formatted, must match the format "
                            "'family@version'",
                        ),
                        rule(
                            f"self.find('^[^@]+') in [{_quoted(families)}]",
                            "family is not supported, must be one of the following: "
                            f"{_quoted(families)}",
                        ),
                        rule(
                            "self.find('^[^@]+').startsWith('windows') ? "
                            "self.find('[^@]+$') == 'latest' : true",
                            "windows families may only specify version 'latest'",
                        ),
                    ]
                ),
            ),
            "id": string(pattern="ami-[0-9a-z]+"),
            "name": string(),
            "owner": string(),
            "ssmParameter": string(),
            "tags": _tags(selector=True),
        },
        "amiSelectorTerms",
        ("id", "alias"),
    )
    terms["x-kubernetes-validations"].append(
        rule(
            "!(self.exists(x, has(x.alias)) && self.size() != 1)",
            "'alias' is mutually exclusive, cannot be set with a combination of other "
            "amiSelectorTerms",
        )
    )
    return terms


def _kubelet() -> Schema:
    eviction = {
        name: _string_map(_EVICTION_SIGNALS, name, _PERCENT_OR_QUANTITY, no_negative=False)
        for name in ("evictionHard", "evictionSoft")
    }
    grace = _string_map(_EVICTION_SIGNALS, "evictionSoftGracePeriod", ".*", no_negative=False)
    grace["additionalProperties"] = string()
    return obj(
        {
            "clusterDNS": {"type": "array", "items": string()},
            "cpuCFSQuota": _bool(),
            **eviction,
            "evictionSoftGracePeriod": grace,
            "evictionMaxPodGracePeriod": _int(),
            "imageGCHighThresholdPercent": _int(minimum=0, maximum=100),
            "imageGCLowThresholdPercent": _int(minimum=0, maximum=100),
            "kubeReserved": _string_map(
                _RESERVED_KEYS, "kubeReserved", QUANTITY_PATTERN, no_negative=True
            ),
            "systemReserved": _string_map(
                _RESERVED_KEYS, "systemReserved", QUANTITY_PATTERN, no_negative=True
            ),
            "maxPods": _int(minimum=0),
            "podsPerCore": _int(minimum=0),
        },
        **cel(
            [
                rule(
                    "has(self.imageGCHighThresholdPercent) && "
                    "has(self.imageGCLowThresholdPercent) ? self.imageGCHighThresholdPercent > "
                    "self.imageGCLowThresholdPercent : true",
                    "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
                ),
                rule(
                    "has(self.evictionSoft) ? self.evictionSoft.all(e, "
                    "(e in self.evictionSoftGracePeriod)) : true",
                    "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
                ),
                rule(
                    "has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, "
                    "(e in self.evictionSoft)) : true",
                    "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
                ),
            ]
        ),
    )


def _block_device_mappings() -> Schema:
    ebs = obj(
        {
            "deleteOnTermination": _bool(),
            "encrypted": _bool(),
            "iops": _int("int64"),
            "kmsKeyID": string(),
            "snapshotID": string(),
            "throughput": _int("int64"),
            "volumeInitializationRate": _int(minimum=100, maximum=300),
            "volumeSize": string(pattern=_VOLUME_SIZE),
            "volumeType": string(enum=list(_VOLUME_TYPES)),
        },
        **cel(
            [
                rule(
                    "has(self.snapshotID) || has(self.volumeSize)",
                    "snapshotID or volumeSize must be defined",
                )
            ]
        ),
    )
    return {
        "type": "array",
        "maxItems": 50,
        "items": obj({"deviceName": string(), "ebs": ebs, "rootVolume": _bool()}),
        "x-kubernetes-validations": [
            rule(
                "self.filter(x, has(x.rootVolume) ? x.rootVolume == true : false).size() <= 1",
                "must have only one blockDeviceMappings with rootVolume",
            )
        ],
    }


def _tags_schema() -> Schema:
    tags = _tags(selector=False)
    rules = [
        rule("self.all(k, k != '')", "empty tag keys aren't supported"),
        rule(
            "self.all(k, !k.startsWith('kubernetes.io/cluster'))",
            "tag contains a restricted tag matching kubernetes.io/cluster/",
        ),
    ]
    for key in sorted(RESTRICTED_TAGS):
        rules.append(
            rule(f"self.all(k, k != '{key}')", f"tag contains a restricted tag matching {key}")
        )
    tags["x-kubernetes-validations"] = rules
    return tags


def _spec_rules() -> list[dict[str, Any]]:
    rules = [
        rule(
            "(has(self.role) && !has(self.instanceProfile)) || "
            "(!has(self.role) && has(self.instanceProfile))",
            "must specify exactly one of ['role', 'instanceProfile']",
        ),
        rule(
            "(has(oldSelf.role) && has(self.role)) || "
            "(has(oldSelf.instanceProfile) && has(self.instanceProfile))",
            "changing from 'instanceProfile' to 'role' is not supported. You must delete and "
            "recreate this node class if you want to change this.",
        ),
    ]
    for alias, family in sorted(ALIAS_FAMILIES.items()):
        rules.append(
            rule(
                "!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
                f"x.alias.find('^[^@]+') == '{alias}') ? (self.amiFamily == 'Custom' || "
                f"self.amiFamily == '{family}') : true)",
                f"if set, amiFamily must be '{family}' or 'Custom' when using an {family} alias",
            )
        )
    rules.append(
        rule(
            "self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)",
            "must specify amiFamily if amiSelectorTerms does not contain an alias",
        )
    )
    return rules


def spec_schema() -> Schema:
    return obj(
        {
            "amiFamily": string(enum=sorted(AMI_FAMILIES)),
            "amiSelectorTerms": _ami_terms(),
            "associatePublicIPAddress": _bool(),
            "blockDeviceMappings": _block_device_mappings(),
            "capacityReservationSelectorTerms": {
                "type": "array",
                "maxItems": 30,
                "items": obj(
                    {
                        "id": string(pattern="^cr-[0-9a-z]+$"),
                        "instanceMatchCriteria": string(enum=["open", "targeted"]),
                        "ownerID": string(pattern="^[0-9]{12}$"),
                        "tags": _tags(selector=True),
                    },
                    **cel(
                        [
                            rule(
                                "has(self.tags) || has(self.id)",
                                "expected at least one, got none, ['tags', 'id']",
                            ),
                            rule(
                                "!(has(self.id) && (has(self.tags) || has(self.ownerID)))",
                                "'id' is mutually exclusive, cannot be set along with tags "
                                "or ownerID in a capacity reservation selector term",
                            ),
                        ]
                    ),
                ),
            },
            "context": string(),
            "detailedMonitoring": _bool(),
            "instanceProfile": string(
                **cel([rule("self != ''", "instanceProfile cannot be empty")])
            ),
            "instanceStorePolicy": string(enum=["RAID0"]),
            "ipPrefixCount": _int(minimum=0),
            "kubelet": _kubelet(),
            "metadataOptions": obj(
                {
                    "httpEndpoint": string(enum=["enabled", "disabled"], default="enabled"),
                    "httpProtocolIPv6": string(enum=["enabled", "disabled"], default="disabled"),
                    "httpPutResponseHopLimit": dict(_int("int64", 1, 64), default=1),
                    "httpTokens": string(enum=["required", "optional"], default="required"),
                },
                default={
                    "httpEndpoint": "enabled",
                    "httpProtocolIPv6": "disabled",
                    "httpPutResponseHopLimit": 1,
                    "httpTokens": "required",
                },
            ),
            "role": string(
                **cel(
                    [
                        rule("self != ''", "role cannot be empty"),
                        rule("self == oldSelf", "immutable field changed"),
                    ]
                )
            ),
            "securityGroupSelectorTerms": _selector_terms(
                {
                    "id": string(pattern="sg-[0-9a-z]+"),
                    "name": string(),
                    "tags": _tags(selector=True),
                },
                "securityGroupSelectorTerms",
                ("id", "name"),
            ),
            "subnetSelectorTerms": _selector_terms(
                {"id": string(pattern="subnet-[0-9a-z]+"), "tags": _tags(selector=True)},
                "subnetSelectorTerms",
                ("id",),
            ),
            "tags": _tags_schema(),
            "userData": string(),
        },
        required=["amiSelectorTerms", "securityGroupSelectorTerms", "subnetSelectorTerms"],
        **{"x-kubernetes-validations": _spec_rules()},
    )


def status_schema() -> Schema:
    requirement = resolved_requirement()
    return obj(
        {
            "amis": {
                "type": "array",
                "items": obj(
                    {
                        "id": string(),
                        "name": string(),
                        "deprecated": _bool(),
                        "requirements": {"type": "array", "items": requirement},
                    },
                    required=["id", "requirements"],
                ),
            },
            "capacityReservations": {
                "type": "array",
                "items": obj(
                    {
                        "availabilityZone": string(),
                        "endTime": string(format="date-time"),
                        "id": string(pattern="^cr-[0-9a-z]+$"),
                        "instanceMatchCriteria": string(enum=["open", "targeted"]),
                        "instanceType": string(),
                        "ownerID": string(pattern="^[0-9]{12}$"),
                        "reservationType": string(enum=["default", "capacity-block"]),
                        "state": string(enum=["active", "expiring"]),
                        "availableInstanceCount": _int(minimum=0),
                    },
                    required=["availabilityZone", "id", "instanceMatchCriteria", "instanceType"],
                ),
            },
            "conditions": conditions(),
            "instanceProfile": string(),
            "securityGroups": {
                "type": "array",
                "items": obj({"id": string(), "name": string()}, required=["id"]),
            },
            "subnets": {
                "type": "array",
                "items": obj(
                    {"id": string(), "zone": string(), "zoneID": string()},
                    required=["id", "zone"],
                ),
            },
        }
    )


def ec2_node_class_crd() -> dict[str, Any]:
    root = obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "spec": spec_schema(),
            "status": status_schema(),
        }
    )
    root["description"] = "EC2NodeClass is the Schema for the EC2NodeClass API"
    return crd(
        group=GROUP,
        kind=KIND,
        plural=PLURAL,
        version=API_VERSION.split("/", 1)[1],
        schema=root,
        columns=[
            {
                "name": "Ready",
                "type": "string",
                "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
            },
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            {"name": "Role", "type": "string", "jsonPath": ".spec.role", "priority": 1},
        ],
        short_names=SHORT_NAMES,
    )
