"""Retired NodeClasses as current ones: a v1alpha5 AWSNodeTemplate (or a Provisioner's inline
``provider:`` block) as a ``karpenter.k8s.aws/v1`` EC2NodeClass, and a
``karpenter.azure.com/v1alpha2`` AKSNodeClass as ``v1beta1``."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nodewright.api.convert.batch import (
    AKSNODECLASS_V1BETA1,
    EC2NODECLASS_V1,
    ConversionBatch,
    converted_metadata,
    document_name,
    field_name,
)
from nodewright.api.excerpt import excerpt

#: v1alpha5 AWS ``amiFamily`` → the v1 ``amiSelectorTerms`` alias that picks the same images.
_AMI_ALIASES = {
    "AL2": "al2@latest",
    "AL2023": "al2023@latest",
    "Bottlerocket": "bottlerocket@latest",
    "Windows2019": "windows2019@latest",
    "Windows2022": "windows2022@latest",
}

#: Fields of a v1alpha5 AWS provider (inline block or AWSNodeTemplate spec) copied as they are.
_AWS_SAME_FIELDS = (
    "amiFamily",
    "instanceProfile",
    "userData",
    "tags",
    "metadataOptions",
    "blockDeviceMappings",
    "detailedMonitoring",
    "associatePublicIPAddress",
)


def aws_node_template(batch: ConversionBatch, document: Mapping[str, Any]) -> list[dict[str, Any]]:
    aws_node_template_class(batch, document, batch.origin)
    return []  # emitted at the end of the batch, with kubelet settings merged in


def aws_node_template_class(
    batch: ConversionBatch, document: Mapping[str, Any], origin: int
) -> dict[str, Any]:
    name = document_name(document)
    existing = batch.ec2_from_templates.get(name)
    if existing is not None:
        return existing[0]
    current = batch.origin
    batch.origin = origin  # notes about the template name the template's own document
    node_class = ec2_node_class(
        batch, document, "spec", converted_metadata(document), document.get("spec") or {}
    )
    batch.origin = current
    batch.ec2_from_templates[name] = (node_class, origin)
    return node_class


def ec2_node_class(
    batch: ConversionBatch,
    document: Mapping[str, Any],
    where: str,
    metadata: dict[str, Any],
    provider: Mapping[str, Any],
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for key in _AWS_SAME_FIELDS:
        if key in provider:
            spec[key] = copy.deepcopy(provider[key])
    spec["subnetSelectorTerms"] = _selector_terms(provider.get("subnetSelector"), "id")
    spec["securityGroupSelectorTerms"] = _selector_terms(
        provider.get("securityGroupSelector"), "id"
    )
    for key in ("subnetSelector", "securityGroupSelector"):
        if not provider.get(key):
            batch.warn(document, f"{where}.{key}", f"is missing; EC2NodeClass needs {key}Terms")
        elif not isinstance(provider.get(key), Mapping):
            batch.refuse(
                document,
                f"{where}.{key}",
                f"must be a mapping of tags, got {excerpt(provider.get(key))}",
            )
    ami_terms = _ami_terms(provider.get("amiSelector"))
    family = str(provider.get("amiFamily", "AL2"))
    if not ami_terms:
        alias = _AMI_ALIASES.get(family)
        if alias is not None:
            ami_terms = [{"alias": alias}]
            spec.pop("amiFamily", None)  # the alias names the family
        else:
            batch.warn(
                document,
                f"{where}.amiSelector",
                f"amiFamily {excerpt(family)} needs amiSelectorTerms",
            )
    elif "amiFamily" not in spec:
        spec["amiFamily"] = family
    spec["amiSelectorTerms"] = ami_terms
    if "instanceProfile" not in spec:
        batch.warn(
            document,
            f"{where}.instanceProfile",
            "is missing (it came from the controller's settings); set spec.role or "
            "spec.instanceProfile on the EC2NodeClass",
        )
    for key in ("launchTemplate", "launchTemplateName"):
        if key in provider:
            batch.warn(
                document,
                f"{where}.{key}",
                "dropped: launch templates are not supported in v1; "
                "move its settings into the EC2NodeClass",
            )
    handled = {
        *_AWS_SAME_FIELDS,
        "subnetSelector",
        "securityGroupSelector",
        "amiSelector",
        "launchTemplate",
        "launchTemplateName",
    }
    for key in sorted(set(provider) - handled, key=str):
        batch.warn(
            document,
            f"{where}.{field_name(key)}",
            "dropped: has no equivalent in karpenter.k8s.aws/v1 EC2NodeClass",
        )
    return {
        "apiVersion": EC2NODECLASS_V1,
        "kind": "EC2NodeClass",
        "metadata": metadata,
        "spec": spec,
    }


def aks_node_class_v1alpha2(
    batch: ConversionBatch, document: Mapping[str, Any]
) -> list[dict[str, Any]]:
    result = copy.deepcopy(dict(document))
    result["apiVersion"] = AKSNODECLASS_V1BETA1
    result["metadata"] = converted_metadata(document)
    return [result]


def _selector_terms(selector: Any, id_key: str) -> list[dict[str, Any]]:
    """A v1alpha5 ``{tag: value}`` selector as v1 selector terms.

    The special key ``aws-ids`` (comma-separated IDs) becomes one ``{id}`` term per ID; every
    other key is a tag, and all tags form one term (they were ANDed).
    """
    if not isinstance(selector, Mapping):
        return []
    terms: list[dict[str, Any]] = []
    tags: dict[str, str] = {}
    for key, value in selector.items():
        if key == "aws-ids":
            terms.extend({id_key: part.strip()} for part in str(value).split(",") if part.strip())
        else:
            tags[str(key)] = str(value)
    if tags:
        terms.insert(0, {"tags": tags})
    return terms


def _ami_terms(selector: Any) -> list[dict[str, Any]]:
    if not isinstance(selector, Mapping):
        return []
    terms: list[dict[str, Any]] = []
    term: dict[str, Any] = {}
    tags: dict[str, str] = {}
    for key, value in selector.items():
        if key in ("aws-ids", "aws::ids"):
            terms.extend({"id": part.strip()} for part in str(value).split(",") if part.strip())
        elif key == "aws::name":
            term["name"] = str(value)
        elif key == "aws::owners":
            term["owner"] = str(value)
        else:
            tags[str(key)] = str(value)
    if tags:
        term["tags"] = tags
    if term:
        terms.insert(0, term)
    return terms
