"""A ``karpenter.sh/v1alpha5`` Provisioner as a ``karpenter.sh/v1`` NodePool, with the
EC2NodeClass of its inline ``provider:`` block or of the AWSNodeTemplate it refers to."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nodewright.api.convert.batch import (
    AWS_GROUP,
    NODEPOOL_V1,
    ConversionBatch,
    converted_metadata,
    document_name,
    field_name,
    format_seconds,
)
from nodewright.api.convert.nodeclass import aws_node_template_class, ec2_node_class
from nodewright.api.convert.shape import shape_problems
from nodewright.api.excerpt import excerpt


def provisioner(batch: ConversionBatch, document: Mapping[str, Any]) -> list[dict[str, Any]]:
    spec: Mapping[str, Any] = document.get("spec") or {}
    name = document_name(document)
    template_spec: dict[str, Any] = {}
    template_metadata: dict[str, Any] = {}
    out: list[dict[str, Any]] = []

    for key in ("labels", "annotations"):
        if spec.get(key):
            template_metadata[key] = copy.deepcopy(spec[key])
    requirements = copy.deepcopy(list(spec.get("requirements") or []))
    for index, requirement in enumerate(requirements):
        if (
            isinstance(requirement, dict)
            and requirement.get("key") == "karpenter.sh/provisioner-name"
        ):
            requirement["key"] = "karpenter.sh/nodepool"
            batch.warn(
                document,
                f"spec.requirements[{index}].key",
                "karpenter.sh/provisioner-name renamed to karpenter.sh/nodepool",
            )
    template_spec["requirements"] = requirements
    for key in ("taints", "startupTaints"):
        if spec.get(key):
            template_spec[key] = copy.deepcopy(spec[key])

    node_class: dict[str, Any] | None = None
    if spec.get("provider") is not None:
        node_class = ec2_node_class(
            batch, document, "spec.provider", {"name": name}, spec["provider"]
        )
        out.append(node_class)
        template_spec["nodeClassRef"] = {
            "group": AWS_GROUP,
            "kind": "EC2NodeClass",
            "name": name,
        }
        if spec.get("providerRef") is not None:
            batch.warn(document, "spec.providerRef", "dropped: spec.provider is also set")
    elif isinstance(spec.get("providerRef"), Mapping):
        ref_name = spec["providerRef"].get("name")
        if not isinstance(ref_name, str) or not ref_name:
            batch.refuse(
                document,
                "spec.providerRef.name",
                f"must name an AWSNodeTemplate, got {excerpt(ref_name)}",
            )
            return []
        template_spec["nodeClassRef"] = {
            "group": AWS_GROUP,
            "kind": "EC2NodeClass",
            "name": ref_name,
        }
        pending = batch.ec2_from_templates.get(ref_name)
        node_class = pending[0] if pending is not None else None
        if node_class is None and ref_name in batch.templates:
            origin, template = batch.templates[ref_name]
            if not shape_problems(template):  # else refused when its turn comes
                node_class = aws_node_template_class(batch, template, origin)
    else:
        batch.refuse(
            document,
            "spec.providerRef",
            "neither provider nor providerRef is set, so nothing says which node class "
            "the NodePool uses; set one (or write the NodePool's nodeClassRef yourself)",
        )
        return []

    if spec.get("kubeletConfiguration"):
        if node_class is not None:
            node_class["spec"]["kubelet"] = copy.deepcopy(spec["kubeletConfiguration"])
        else:
            batch.warn(
                document,
                "spec.kubeletConfiguration",
                "dropped: it moves to the EC2NodeClass's spec.kubelet, which is not in "
                "these manifests",
            )

    ttl_expired = spec.get("ttlSecondsUntilExpired")
    if ttl_expired is not None:
        template_spec["expireAfter"] = format_seconds(ttl_expired)
    else:
        template_spec["expireAfter"] = "Never"  # v1alpha5 nodes never expired by default

    disruption: dict[str, Any]
    consolidation = spec.get("consolidation")
    consolidation_enabled = isinstance(consolidation, Mapping) and bool(
        consolidation.get("enabled")
    )
    ttl_empty = spec.get("ttlSecondsAfterEmpty")
    if consolidation_enabled:
        disruption = {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "0s",
        }
        if ttl_empty is not None:
            batch.warn(document, "spec.ttlSecondsAfterEmpty", "dropped: consolidation is enabled")
    elif ttl_empty is not None:
        disruption = {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": format_seconds(ttl_empty),
        }
    else:  # neither: v1alpha5 never removed nodes
        disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}

    pool_spec: dict[str, Any] = {}
    pool_template: dict[str, Any] = {}
    if template_metadata:
        pool_template["metadata"] = template_metadata
    pool_template["spec"] = template_spec
    pool_spec["template"] = pool_template
    pool_spec["disruption"] = disruption
    limits = spec.get("limits")
    if isinstance(limits, Mapping):
        if isinstance(limits.get("resources"), Mapping):
            pool_spec["limits"] = copy.deepcopy(dict(limits["resources"]))
        for key in sorted(set(limits) - {"resources"}, key=str):
            batch.warn(
                document,
                f"spec.limits.{field_name(key)}",
                "dropped: v1alpha5 limits hold only resources",
            )
    if spec.get("weight") is not None:
        pool_spec["weight"] = spec["weight"]
    pool = {
        "apiVersion": NODEPOOL_V1,
        "kind": "NodePool",
        "metadata": converted_metadata(document),
        "spec": pool_spec,
    }
    return [pool, *out]
