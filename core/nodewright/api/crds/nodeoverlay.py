"""The ``nodeoverlays.karpenter.sh`` CRD."""

from __future__ import annotations

from typing import Any

from nodewright.api.crds.karpenter import restricted_key_rules
from nodewright.api.crds.schema import (
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    age_column,
    column,
    conditions,
    crd,
    obj,
    quantity,
    ready_column,
    root,
    rule,
    string,
)
from nodewright.api.karpenter import REQUIREMENT_OPERATORS
from nodewright.api.nodeoverlay import API_VERSION as OVERLAY_API_VERSION
from nodewright.api.nodeoverlay import (
    PRICE_ADJUSTMENT_PATTERN,
    PRICE_PATTERN,
    RESTRICTED_CAPACITY,
    WEIGHT_RANGE,
)


def node_overlay_crd() -> dict[str, Any]:
    """The ``nodeoverlays.karpenter.sh`` CRD (``v1alpha1``, feature gate ``NodeOverlay``)."""
    key = string(
        maxLength=316,
        pattern=LABEL_KEY_PATTERN,
        **{
            "x-kubernetes-validations": restricted_key_rules(
                "self", quantified=False, allow_nodepool=True
            )
        },
    )
    requirement = obj(
        {
            "key": key,
            "operator": string(enum=list(REQUIREMENT_OPERATORS)),
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
        schema=root(
            "NodeOverlay is the Schema for the NodeOverlays API", spec, status, required=["spec"]
        ),
        columns=[
            ready_column(),
            age_column(),
            column("Weight", ".spec.weight", "integer", priority=1),
        ],
        short_names=["overlays"],
    )
