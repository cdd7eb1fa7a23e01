"""The ``karpenter.sh/v1`` CRDs: NodePool and NodeClaim, with the pieces they share (the
requirements, taints and nodeClassRef of a NodeClaim's spec, and Karpenter's reserved label
keys as CEL rules)."""

from __future__ import annotations

from typing import Any

from nodewright.api.core import TAINT_EFFECTS
from nodewright.api.crds.schema import (
    DURATION_OR_NEVER_PATTERN,
    DURATION_PATTERN,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    Schema,
    age_column,
    column,
    conditions,
    crd,
    label_path,
    obj,
    quantity,
    ready_column,
    root,
    rule,
    string,
)
from nodewright.api.karpenter import (
    API_VERSION,
    CONDITION_DRIFTED,
    CONSOLIDATION_POLICIES,
    DISRUPTION_REASONS,
    REQUIREMENT_OPERATORS,
)

GROUP = API_VERSION.split("/", 1)[0]
VERSION = API_VERSION.split("/", 1)[1]


def restricted_key_rules(
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
        key["x-kubernetes-validations"] = restricted_key_rules("self", quantified=False)
    return obj(
        {
            "key": key,
            "operator": string(enum=list(REQUIREMENT_OPERATORS)),
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
        "x-kubernetes-validations": restricted_key_rules("x", quantified=True),
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
            "reasons": {"type": "array", "items": string(enum=list(DISRUPTION_REASONS))},
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
        column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        column("Nodes", ".status.resources.nodes"),
        ready_column(),
        age_column(),
        column("Weight", ".spec.weight", "integer", priority=1),
        column("CPU", ".status.resources.cpu", priority=1),
        column("Memory", ".status.resources.memory", priority=1),
    ]
    return crd(
        group=GROUP,
        kind="NodePool",
        plural="nodepools",
        version=VERSION,
        schema=root(
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
        column("Type", label_path("node.kubernetes.io/instance-type")),
        column("Capacity", label_path("karpenter.sh/capacity-type")),
        column("Zone", label_path("topology.kubernetes.io/zone")),
        column("Node", ".status.nodeName"),
        ready_column(),
        age_column(),
        column("ImageID", ".status.imageID", priority=1),
        column("ID", ".status.providerID", priority=1),
        column("NodePool", label_path("karpenter.sh/nodepool"), priority=1),
        column("NodeClass", ".spec.nodeClassRef.name", priority=1),
        column(
            "Drifted", f'.status.conditions[?(@.type=="{CONDITION_DRIFTED}")].status', priority=1
        ),
    ]
    return crd(
        group=GROUP,
        kind="NodeClaim",
        plural="nodeclaims",
        version=VERSION,
        schema=root(
            "NodeClaim is the Schema for the NodeClaims API", spec, status, required=["spec"]
        ),
        columns=columns,
    )
