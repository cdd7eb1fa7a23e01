"""CustomResourceDefinitions for NodePool, NodeClaim, NodeOverlay and provider NodeClasses, as
plain dicts.

The schemas follow Karpenter's ``karpenter.sh/v1`` CRDs field for field, with the same
printer columns, categories, subresources and CEL rules (``x-kubernetes-validations``), so
manifests and ``kubectl get`` behave as they do with Karpenter. They are built from the
definitions in this module and the constants the models use (condition and label names,
enumerations), not copied text. Providers generate their NodeClass CRD from their model with
:func:`nodewright.plugin.node_class_crd` and hand it to the core through ``NodeClassKind.crd``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.api.capacitybuffer import ACTIVE_CAPACITY as BUFFER_ACTIVE_CAPACITY
from nodewright.api.capacitybuffer import API_VERSION as BUFFER_API_VERSION
from nodewright.api.karpenter import API_VERSION, CONDITION_DRIFTED, CONDITION_READY
from nodewright.api.nodeoverlay import API_VERSION as OVERLAY_API_VERSION
from nodewright.api.nodeoverlay import (
    PRICE_ADJUSTMENT_PATTERN,
    PRICE_PATTERN,
    RESTRICTED_CAPACITY,
    WEIGHT_RANGE,
)

Schema = dict[str, Any]

GROUP = API_VERSION.split("/", 1)[0]
VERSION = API_VERSION.split("/", 1)[1]

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
DURATION_OR_NEVER_PATTERN = r"^(([0-9]+(s|m|h))+|Never)$"
LABEL_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
BUDGET_REASONS = ("Underutilized", "Empty", "Drifted")

# --- building blocks ---------------------------------------------------------------------------


def string(**extra: Any) -> Schema:
    return {"type": "string", **extra}


def obj(properties: Mapping[str, Schema], required: Sequence[str] = (), **extra: Any) -> Schema:
    schema: Schema = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def quantity() -> Schema:
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }


def rule(expression: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"rule": expression, "message": message, **extra}


def _restricted_key_rules(
    var: str, *, quantified: bool, allow_nodepool: bool = False
) -> list[dict[str, Any]]:
    """Karpenter's label-domain restrictions, for one key (``self``) or every map key.

    Only ``karpenter.sh`` (but its well-known labels) and ``kubernetes.io/hostname`` are
    reserved: Karpenter no longer restricts the ``kubernetes.io`` and ``k8s.io`` domains.
    A NodeOverlay may select ``karpenter.sh/nodepool`` (``allow_nodepool``); a NodePool may not.
    """

    def wrap(expression: str) -> str:
        return f"self.all(x, {expression})" if quantified else expression

    def within(*domains: str) -> str:
        # the key's prefix is one of ``domains`` or a subdomain of one ("example-kubernetes.io"
        # is not in "kubernetes.io"); one regular expression keeps the rule's cost low
        alternatives = "|".join(d.replace(".", r"\\.") for d in domains)
        return f'{var}.matches("^([^/]*\\\\.)?({alternatives})/")'

    if allow_nodepool:
        allowed = '["karpenter.sh/capacity-type", "karpenter.sh/nodepool"]'
        nodepool = []
    else:
        allowed = '["karpenter.sh/capacity-type"]'
        nodepool = [
            rule(
                wrap(f'{var} != "karpenter.sh/nodepool"'),
                'label "karpenter.sh/nodepool" is restricted',
            )
        ]
    return [
        rule(
            wrap(f"{var} in {allowed} || !{within('karpenter.sh')}"),
            'label domain "karpenter.sh" is restricted',
        ),
        *nodepool,
        rule(
            wrap(f'{var} != "kubernetes.io/hostname"'),
            'label "kubernetes.io/hostname" is restricted',
        ),
    ]


def taint() -> Schema:
    return obj(
        {
            "key": string(minLength=1, pattern=LABEL_KEY_PATTERN),
            "value": string(pattern=LABEL_VALUE_PATTERN),
            "effect": string(enum=list(TAINT_EFFECTS)),
            "timeAdded": string(format="date-time"),
        },
        required=["key", "effect"],
    )


def requirement(*, restricted: bool) -> Schema:
    key = string(maxLength=316, pattern=LABEL_KEY_PATTERN)
    if restricted:
        key["x-kubernetes-validations"] = _restricted_key_rules("self", quantified=False)
    return obj(
        {
            "key": key,
            "operator": string(enum=list(OPERATORS)),
            "values": {
                "type": "array",
                "items": string(maxLength=63, pattern=LABEL_VALUE_PATTERN),
                "x-kubernetes-list-type": "atomic",
            },
            "minValues": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        required=["key", "operator"],
        maxProperties=4,
        **{
            "x-kubernetes-validations": [
                rule(
                    "self.operator == 'In' ? self.values.size() != 0 : true",
                    "requirements with operator 'In' must have a value defined",
                ),
                rule(
                    "(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) ? "
                    "(self.values.size() == 1 && int(self.values[0]) >= 0) : true",
                    "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                    "positive integer value",
                ),
                rule(
                    "(self.operator == 'In' && has(self.minValues)) ? "
                    "self.values.size() >= self.minValues : true",
                    "requirements with 'minValues' must have at least that many values "
                    "specified in the 'values' field",
                ),
            ]
        },
    )


def node_class_ref(*, immutable_kind: bool) -> Schema:
    schema = obj(
        {
            "group": string(
                minLength=1,
                **{"x-kubernetes-validations": [rule("self != ''", "group may not be empty")]},
            ),
            "kind": string(
                minLength=1,
                **{"x-kubernetes-validations": [rule("self != ''", "kind may not be empty")]},
            ),
            "name": string(
                minLength=1,
                **{"x-kubernetes-validations": [rule("self != ''", "name may not be empty")]},
            ),
        },
        required=["group", "kind", "name"],
    )
    if immutable_kind:
        schema["x-kubernetes-validations"] = [
            rule("self.group == oldSelf.group", "nodeClassRef.group is immutable"),
            rule("self.kind == oldSelf.kind", "nodeClassRef.kind is immutable"),
        ]
    return schema


def condition() -> Schema:
    return obj(
        {
            "type": string(
                maxLength=316,
                pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
            ),
            "status": string(enum=["True", "False", "Unknown"]),
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": string(format="date-time"),
            "reason": string(maxLength=1024),
            "message": string(maxLength=32768),
        },
        required=["type", "status", "lastTransitionTime"],
    )


def conditions() -> Schema:
    return {
        "type": "array",
        "items": condition(),
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    }


def _column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


def _label_path(label: str) -> str:
    return ".metadata.labels." + label.replace(".", "\\.")


def _ready_column() -> dict[str, Any]:
    return _column("Ready", f'.status.conditions[?(@.type=="{CONDITION_READY}")].status')


def _age_column() -> dict[str, Any]:
    return _column("Age", ".metadata.creationTimestamp", "date")


def crd(
    *,
    group: str,
    kind: str,
    plural: str,
    version: str,
    schema: Schema,
    columns: Sequence[Mapping[str, Any]],
    short_names: Sequence[str] = (),
    categories: Sequence[str] = ("karpenter",),
    subresources: Mapping[str, Any] | None = None,
    scope: str = "Cluster",
) -> dict[str, Any]:
    """One single-version CustomResourceDefinition (cluster-scoped unless ``scope`` says)."""
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = list(short_names)
    if categories:
        names["categories"] = list(categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": scope,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": [dict(c) for c in columns],
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": dict(subresources or {"status": {}}),
                }
            ],
        },
    }


def _root(description: str, spec: Schema, status: Schema, **extra: Any) -> Schema:
    root = obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        **extra,
    )
    root["description"] = description
    return root


# --- karpenter.sh -------------------------------------------------------------------------------


def _claim_spec_properties(*, restricted: bool, immutable_kind: bool) -> dict[str, Schema]:
    return {
        "taints": {"type": "array", "items": taint()},
        "startupTaints": {"type": "array", "items": taint()},
        "requirements": {
            "type": "array",
            "items": requirement(restricted=restricted),
            "maxItems": 100,
            "x-kubernetes-validations": [
                rule(
                    "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
                    "requirements with operator 'In' must have a value defined",
                )
            ],
        },
        "nodeClassRef": node_class_ref(immutable_kind=immutable_kind),
        "expireAfter": string(pattern=DURATION_OR_NEVER_PATTERN, default="720h"),
        "terminationGracePeriod": string(pattern=DURATION_PATTERN),
    }


def node_pool_crd() -> dict[str, Any]:
    """The ``nodepools.karpenter.sh`` CRD."""
    template_spec = obj(
        _claim_spec_properties(restricted=True, immutable_kind=True),
        required=["nodeClassRef", "requirements"],
    )
    labels = {
        "type": "object",
        "additionalProperties": string(maxLength=63, pattern=LABEL_VALUE_PATTERN),
        "maxProperties": 100,
        "x-kubernetes-validations": _restricted_key_rules("x", quantified=True),
    }
    template = obj(
        {
            "metadata": obj(
                {
                    "labels": labels,
                    "annotations": {"type": "object", "additionalProperties": string()},
                }
            ),
            "spec": template_spec,
        },
        required=["spec"],
    )
    budget = obj(
        {
            "nodes": string(default="10%", pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$"),
            "schedule": string(
                pattern=r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|"
                r"((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
            ),
            "duration": string(pattern=r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"),
            "reasons": {"type": "array", "items": string(enum=list(BUDGET_REASONS))},
        },
        required=["nodes"],
    )
    disruption = obj(
        {
            "consolidationPolicy": string(
                enum=list(CONSOLIDATION_POLICIES), default="WhenEmptyOrUnderutilized"
            ),
            "consolidateAfter": string(pattern=DURATION_OR_NEVER_PATTERN, default="0s"),
            "budgets": {
                "type": "array",
                "items": budget,
                "maxItems": 50,
                "default": [{"nodes": "10%"}],
                "x-kubernetes-validations": [
                    rule(
                        "self.all(x, has(x.schedule) == has(x.duration))",
                        "'schedule' must be set with 'duration'",
                    )
                ],
            },
        },
        default={"consolidateAfter": "0s"},
    )
    spec = obj(
        {
            "template": template,
            "disruption": disruption,
            "limits": {"type": "object", "additionalProperties": quantity()},
            "weight": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 100},
            "replicas": {"type": "integer", "format": "int64", "minimum": 0},
        },
        required=["template"],
        **{
            "x-kubernetes-validations": [
                rule(
                    "has(self.replicas) == has(oldSelf.replicas)",
                    "Cannot transition NodePool between static (replicas set) and dynamic "
                    "(replicas unset) provisioning modes",
                ),
                rule(
                    "!has(self.replicas) || !has(self.limits) || "
                    "self.limits.all(key, key == 'nodes')",
                    "only 'limits.nodes' is supported on static NodePools",
                ),
                rule(
                    "!has(self.replicas) || !has(self.weight)",
                    "'weight' is not supported on static NodePools",
                ),
            ]
        },
    )
    status = obj(
        {
            "resources": {"type": "object", "additionalProperties": quantity()},
            "nodes": {"type": "integer", "format": "int64", "default": 0},
            "nodeClassObservedGeneration": {"type": "integer", "format": "int64"},
            "conditions": conditions(),
        }
    )
    columns = [
        _column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        _column("Nodes", ".status.resources.nodes"),
        _ready_column(),
        _age_column(),
        _column("Weight", ".spec.weight", "integer", priority=1),
        _column("CPU", ".status.resources.cpu", priority=1),
        _column("Memory", ".status.resources.memory", priority=1),
    ]
    return crd(
        group=GROUP,
        kind="NodePool",
        plural="nodepools",
        version=VERSION,
        schema=_root(
            "NodePool is the Schema for the NodePools API", spec, status, required=["spec"]
        ),
        columns=columns,
        subresources={
            "status": {},
            "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.nodes"},
        },
    )


def node_claim_crd() -> dict[str, Any]:
    """The ``nodeclaims.karpenter.sh`` CRD."""
    properties = _claim_spec_properties(restricted=False, immutable_kind=False)
    properties["resources"] = obj(
        {"requests": {"type": "object", "additionalProperties": quantity()}}
    )
    spec = obj(
        properties,
        required=["nodeClassRef", "requirements"],
        **{"x-kubernetes-validations": [rule("self == oldSelf", "spec is immutable")]},
    )
    status = obj(
        {
            "nodeName": string(),
            "providerID": string(),
            "imageID": string(),
            "capacity": {"type": "object", "additionalProperties": quantity()},
            "allocatable": {"type": "object", "additionalProperties": quantity()},
            "conditions": conditions(),
            "lastPodEventTime": string(format="date-time"),
        }
    )
    columns = [
        _column("Type", _label_path("node.kubernetes.io/instance-type")),
        _column("Capacity", _label_path("karpenter.sh/capacity-type")),
        _column("Zone", _label_path("topology.kubernetes.io/zone")),
        _column("Node", ".status.nodeName"),
        _ready_column(),
        _age_column(),
        _column("ImageID", ".status.imageID", priority=1),
        _column("ID", ".status.providerID", priority=1),
        _column("NodePool", _label_path("karpenter.sh/nodepool"), priority=1),
        _column("NodeClass", ".spec.nodeClassRef.name", priority=1),
        _column(
            "Drifted", f'.status.conditions[?(@.type=="{CONDITION_DRIFTED}")].status', priority=1
        ),
    ]
    return crd(
        group=GROUP,
        kind="NodeClaim",
        plural="nodeclaims",
        version=VERSION,
        schema=_root(
            "NodeClaim is the Schema for the NodeClaims API", spec, status, required=["spec"]
        ),
        columns=columns,
    )


def node_overlay_crd() -> dict[str, Any]:
    """The ``nodeoverlays.karpenter.sh`` CRD (``v1alpha1``, feature gate ``NodeOverlay``)."""
    key = string(
        maxLength=316,
        pattern=LABEL_KEY_PATTERN,
        **{
            "x-kubernetes-validations": _restricted_key_rules(
                "self", quantified=False, allow_nodepool=True
            )
        },
    )
    requirement = obj(
        {
            "key": key,
            "operator": string(enum=list(OPERATORS)),
            "values": {
                "type": "array",
                "items": string(maxLength=63, pattern=LABEL_VALUE_PATTERN),
                "x-kubernetes-list-type": "atomic",
            },
        },
        required=["key", "operator"],
    )
    restricted = ", ".join(f"'{r}'" for r in sorted(RESTRICTED_CAPACITY))
    spec = obj(
        {
            "requirements": {
                "type": "array",
                "items": requirement,
                "maxItems": 100,
                "x-kubernetes-list-type": "atomic",
                "x-kubernetes-validations": [
                    rule(
                        "self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)",
                        "requirements with operator 'NotIn' must have a value defined",
                    ),
                    rule(
                        "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
                        "requirements with operator 'In' must have a value defined",
                    ),
                    rule(
                        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || "
                        "x.operator == 'Gte' || x.operator == 'Lte') ? "
                        "(x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
                        "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                        "positive integer value",
                    ),
                ],
            },
            "priceAdjustment": string(pattern=PRICE_ADJUSTMENT_PATTERN),
            "price": string(pattern=PRICE_PATTERN),
            "capacity": {
                "type": "object",
                "additionalProperties": quantity(),
                "x-kubernetes-validations": [
                    rule(f"self.all(x, !(x in [{restricted}]))", "invalid resource restricted")
                ],
            },
            "weight": {
                "type": "integer",
                "format": "int32",
                "minimum": WEIGHT_RANGE[0],
                "maximum": WEIGHT_RANGE[1],
            },
        },
        required=["requirements"],
        **{
            "x-kubernetes-validations": [
                rule(
                    "!has(self.price) || !has(self.priceAdjustment)",
                    "cannot set both 'price' and 'priceAdjustment'",
                )
            ]
        },
    )
    status = obj({"conditions": conditions()})
    group, version = OVERLAY_API_VERSION.split("/", 1)
    return crd(
        group=group,
        kind="NodeOverlay",
        plural="nodeoverlays",
        version=version,
        schema=_root(
            "NodeOverlay is the Schema for the NodeOverlays API", spec, status, required=["spec"]
        ),
        columns=[
            _ready_column(),
            _age_column(),
            _column("Weight", ".spec.weight", "integer", priority=1),
        ],
        short_names=["overlays"],
    )


def capacity_buffer_crd() -> dict[str, Any]:
    """The ``capacitybuffers.autoscaling.x-k8s.io`` CRD (``v1beta1``, namespaced, feature gate
    ``CapacityBuffer``), as SIG Autoscaling defines it and Karpenter ships it."""
    name = string(minLength=1)
    local_ref = obj({"name": name}, required=["name"])
    count = {"type": "integer", "format": "int32", "minimum": 0}
    spec = obj(
        {
            "provisioningStrategy": string(default=BUFFER_ACTIVE_CAPACITY),
            "podTemplateRef": local_ref,
            "scalableRef": obj(
                {"apiGroup": string(), "kind": name, "name": name}, required=["kind", "name"]
            ),
            "replicas": count,
            "percentage": count,
            "limits": {"type": "object", "additionalProperties": quantity()},
        },
        (),
        **{
            "x-kubernetes-validations": [
                rule(
                    "!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",
                    "If podTemplateRef is set, replicas or limits must also be set",
                ),
                rule(
                    "!(has(self.podTemplateRef) && has(self.scalableRef))",
                    "You must define either PodTemplateRef or ScalableRef, but not both",
                ),
            ]
        },
    )
    status = obj(
        {
            "podTemplateRef": local_ref,
            "replicas": {"type": "integer", "format": "int32"},
            "podTemplateGeneration": {"type": "integer", "format": "int64"},
            "conditions": conditions(),
            "provisioningStrategy": string(),
        }
    )
    group, version = BUFFER_API_VERSION.split("/", 1)
    return crd(
        group=group,
        kind="CapacityBuffer",
        plural="capacitybuffers",
        version=version,
        schema=_root(
            "CapacityBuffer is the configuration that an autoscaler can use to provision buffer "
            "capacity within a cluster",
            spec,
            status,
            required=["spec"],
        ),
        columns=[
            _column("Strategy", ".spec.provisioningStrategy"),
            _column("PodTemplate", ".status.podTemplateRef.name"),
            _column("Replicas", ".status.replicas", "integer"),
            _column("ConditionsType", ".status.conditions[*].type"),
            _column("ConditionsStatus", ".status.conditions[*].status"),
            _column("ConditionsReason", ".status.conditions[*].reason"),
            _age_column(),
        ],
        short_names=["cb"],
        categories=["autoscaling"],
        scope="Namespaced",
    )


def core_crds() -> list[dict[str, Any]]:
    return [node_pool_crd(), node_claim_crd(), node_overlay_crd(), capacity_buffer_crd()]
