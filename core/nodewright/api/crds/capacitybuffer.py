"""The ``capacitybuffers.autoscaling.x-k8s.io`` CRD."""

from __future__ import annotations

from typing import Any

from nodewright.api.capacitybuffer import ACTIVE_CAPACITY as BUFFER_ACTIVE_CAPACITY
from nodewright.api.capacitybuffer import API_VERSION as BUFFER_API_VERSION
from nodewright.api.crds.schema import (
    age_column,
    column,
    conditions,
    crd,
    obj,
    quantity,
    root,
    rule,
    string,
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
        schema=root(
            "CapacityBuffer is the configuration that an autoscaler can use to provision buffer "
            "capacity within a cluster",
            spec,
            status,
            required=["spec"],
        ),
        columns=[
            column("Strategy", ".spec.provisioningStrategy"),
            column("PodTemplate", ".status.podTemplateRef.name"),
            column("Replicas", ".status.replicas", "integer"),
            column("ConditionsType", ".status.conditions[*].type"),
            column("ConditionsStatus", ".status.conditions[*].status"),
            column("ConditionsReason", ".status.conditions[*].reason"),
            age_column(),
        ],
        short_names=["cb"],
        categories=["autoscaling"],
        scope="Namespaced",
    )
