"""``karpenter.sh/v1beta1`` NodePools and NodeClaims as ``karpenter.sh/v1``: the
``nodeClassRef`` as a group and kind (inferred, with a warning, when the old one leaves them
out), the kubelet settings moved to the NodeClass, ``expireAfter`` moved to the template."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nodewright.api.convert.batch import (
    AWS_GROUP,
    AZURE_GROUP,
    NODEPOOL_V1,
    ConversionBatch,
    converted_metadata,
    field_name,
)
from nodewright.api.excerpt import excerpt

#: The NodeClass kind of each provider group Karpenter's v1beta1 manifests refer to.
_KNOWN_NODE_CLASSES = {
    AWS_GROUP: "EC2NodeClass",
    AZURE_GROUP: "AKSNodeClass",
    "karpenter.kwok.sh": "KWOKNodeClass",
}


def _node_class_ref(
    batch: ConversionBatch,
    document: Mapping[str, Any],
    where: str,
    ref: Mapping[str, Any],
    requirements: list[Any],
) -> dict[str, Any] | None:
    """A v1beta1 ``{apiVersion, kind, name}`` reference as a v1 ``{group, kind, name}``.

    What the reference leaves out is inferred from the NodeClasses in the batch or from
    the provider labels the requirements use, with a warning; with nothing to infer it
    from, the document cannot be converted.
    """
    for key in sorted(set(ref) - {"apiVersion", "kind", "name"}, key=str):
        batch.warn(
            document,
            f"{where}.{field_name(key)}",
            "dropped: has no equivalent in v1 nodeClassRef",
        )
    api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
    for key, value in (("apiVersion", api_version), ("kind", kind), ("name", name)):
        if value is not None and not isinstance(value, str):
            batch.refuse(document, f"{where}.{key}", f"must be a string, got {excerpt(value)}")
            return None
    group = api_version.split("/", 1)[0] if api_version else ""
    if group and kind:
        return {"group": group, "kind": kind, "name": name or ""}
    candidates = sorted(batch.node_class_kinds)
    if group:
        of_group = [k for g, k in candidates if g == group] or (
            [_KNOWN_NODE_CLASSES[group]] if group in _KNOWN_NODE_CLASSES else []
        )
        if len(of_group) == 1:
            batch.warn(
                document,
                f"{where}.kind",
                f"not set; {of_group[0]} inferred from apiVersion {excerpt(api_version)}",
            )
            return {"group": group, "kind": of_group[0], "name": name or ""}
    elif kind:
        of_kind = {g for g, k in candidates if k == kind} | {
            g for g, k in _KNOWN_NODE_CLASSES.items() if k == kind
        }
        if len(of_kind) == 1:
            (only,) = of_kind
            batch.warn(
                document,
                f"{where}.apiVersion",
                f"not set; group {only} inferred from kind {excerpt(kind)}",
            )
            return {"group": only, "kind": kind, "name": name or ""}
    else:
        if len(candidates) == 1:
            ((only_group, only_kind),) = candidates
            batch.warn(
                document,
                f"{where}.kind",
                f"not set; {only_kind} ({only_group}) inferred from the only NodeClass kind "
                "in these manifests",
            )
            return {"group": only_group, "kind": only_kind, "name": name or ""}
        keys = " ".join(str(r.get("key", "")) for r in requirements if isinstance(r, Mapping))
        hinted = [(g, k) for g, k in _KNOWN_NODE_CLASSES.items() if f"{g}/" in keys]
        if len(hinted) == 1:
            ((hint_group, hint_kind),) = hinted
            batch.warn(
                document,
                f"{where}.kind",
                f"not set; {hint_kind} ({hint_group}) inferred from the {hint_group} "
                "labels in the requirements",
            )
            return {"group": hint_group, "kind": hint_kind, "name": name or ""}
    batch.refuse(
        document,
        where,
        "does not say which NodeClass it names (no apiVersion and kind) and nothing in "
        "these manifests tells; add apiVersion and kind (e.g. karpenter.k8s.aws/v1beta1 "
        "EC2NodeClass), or convert it together with its NodeClass",
    )
    return None


def _template_spec(
    batch: ConversionBatch, document: Mapping[str, Any], where: str, spec: Mapping[str, Any]
) -> dict[str, Any] | None:
    out = copy.deepcopy(dict(spec))
    requirements = list(out.get("requirements") or [])
    ref = out.get("nodeClassRef")
    if isinstance(ref, Mapping):
        converted = _node_class_ref(batch, document, f"{where}.nodeClassRef", ref, requirements)
        if converted is None:
            return None
        out["nodeClassRef"] = converted
    if "kubelet" in out:
        out.pop("kubelet")
        batch.warn(
            document,
            f"{where}.kubelet",
            "moved to the NodeClass in v1 (EC2NodeClass/AKSNodeClass spec.kubelet); set it there",
        )
    if "resources" in out and where.endswith("template.spec"):
        out.pop("resources")
        batch.warn(document, f"{where}.resources", "dropped: removed in v1; it had no effect")
    return out


def node_pool_v1beta1(batch: ConversionBatch, document: Mapping[str, Any]) -> list[dict[str, Any]]:
    result = copy.deepcopy(dict(document))
    result["apiVersion"] = NODEPOOL_V1
    result["metadata"] = converted_metadata(document)
    spec: dict[str, Any] = result.setdefault("spec", None) or {}
    result["spec"] = spec
    template = spec.get("template") or {}
    spec["template"] = template
    template_spec = _template_spec(
        batch, document, "spec.template.spec", template.get("spec") or {}
    )
    if template_spec is None:
        return []
    disruption: dict[str, Any] = spec.get("disruption") or {}
    spec["disruption"] = disruption
    if "expireAfter" in disruption:
        template_spec["expireAfter"] = disruption.pop("expireAfter")
    else:
        template_spec.setdefault("expireAfter", "720h")
    template["spec"] = template_spec
    policy = disruption.get("consolidationPolicy", "WhenUnderutilized")
    if policy == "WhenUnderutilized":
        disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
    disruption.setdefault("consolidateAfter", "0s")
    return [result]


def node_claim_v1beta1(batch: ConversionBatch, document: Mapping[str, Any]) -> list[dict[str, Any]]:
    result = copy.deepcopy(dict(document))
    result["apiVersion"] = NODEPOOL_V1
    result["metadata"] = converted_metadata(document)
    spec = _template_spec(batch, document, "spec", document.get("spec") or {})
    if spec is None:
        return []
    result["spec"] = spec
    return [result]
