"""The shape a retired document must have to be converted: known fields, and mappings and
lists where the old CRD had them. A value of another shape cannot be moved faithfully, so
the document is refused with an error naming the field."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.api.convert.batch import document_kind, document_name, field_name
from nodewright.api.excerpt import excerpt
from nodewright.api.fielderror import FieldError, FieldErrors

#: Every field of a v1alpha5 ProvisionerSpec; anything else is a typo the old CRD refused.
_PROVISIONER_FIELDS = (
    "requirements", "labels", "annotations", "taints", "startupTaints",
    "kubeletConfiguration", "limits", "ttlSecondsAfterEmpty", "ttlSecondsUntilExpired",
    "consolidation", "weight", "provider", "providerRef",
)  # fmt: skip

#: v1beta1 NodePool fields, and where they are (a typo there is refused, not carried over
#: beside the default conversion adds).
_V1BETA1_POOL_FIELDS = ("template", "disruption", "limits", "weight")
_V1BETA1_DISRUPTION_FIELDS = ("consolidationPolicy", "consolidateAfter", "expireAfter", "budgets")

#: For each retired kind, mappings whose every field is known (paths in the old document).
_FIELDS: dict[str, tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]] = {
    "Provisioner": ((("spec",), _PROVISIONER_FIELDS),),
    "NodePool": (
        (("spec",), _V1BETA1_POOL_FIELDS),
        (("spec", "disruption"), _V1BETA1_DISRUPTION_FIELDS),
    ),
}

_TOP_LEVEL_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
_METADATA_FIELDS = (
    "name", "generateName", "namespace", "labels", "annotations", "uid", "resourceVersion",
    "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
    "ownerReferences", "finalizers", "managedFields", "selfLink",
)  # fmt: skip


def _is_whole_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: For each retired kind, the fields that must be mappings or lists when present (paths in
#: the old document). A value of another type cannot be moved faithfully.
_MAPPINGS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Provisioner": (
        ("spec",), ("spec", "labels"), ("spec", "annotations"), ("spec", "limits"),
        ("spec", "limits", "resources"), ("spec", "provider"), ("spec", "providerRef"),
        ("spec", "consolidation"), ("spec", "kubeletConfiguration"),
    ),
    "AWSNodeTemplate": (("spec",),),
    "NodePool": (
        ("spec",), ("spec", "template"), ("spec", "template", "spec"),
        ("spec", "template", "metadata"), ("spec", "disruption"),
        ("spec", "template", "spec", "nodeClassRef"),
    ),
    "NodeClaim": (("spec",), ("spec", "nodeClassRef")),
    "AKSNodeClass": (("spec",),),
}  # fmt: skip
_LISTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Provisioner": (("spec", "requirements"), ("spec", "taints"), ("spec", "startupTaints")),
    "NodePool": (("spec", "template", "spec", "requirements"),),
    "NodeClaim": (("spec", "requirements"),),
}


def shape_problems(document: Mapping[str, Any]) -> list[FieldError]:
    kind = document_kind(document)
    report = FieldErrors(kind, document_name(document))
    for key in document:
        if key not in _TOP_LEVEL_FIELDS:
            if key in _METADATA_FIELDS:
                report.add(
                    str(key), f"unknown field {key!r} at the top level; indent it under metadata"
                )
            else:
                report.add(field_name(key), _unknown_message(key, _TOP_LEVEL_FIELDS))
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping):
        report.add("metadata", f"must be a mapping with a name, got {excerpt(metadata)}")
    elif not isinstance(metadata.get("name"), str) or not metadata.get("name"):
        report.add(
            "metadata.name", f"must be a non-empty string, got {excerpt(metadata.get('name'))}"
        )
    for path in _MAPPINGS.get(kind, ()):
        value = _get(document, path)
        if value is not None and not isinstance(value, Mapping):
            report.add(".".join(path), f"must be a mapping, got {excerpt(value)}")
    for path in _LISTS.get(kind, ()):
        value = _get(document, path)
        if value is not None and not isinstance(value, list):
            report.add(".".join(path), f"must be a list, got {excerpt(value)}")
    spec = document.get("spec")
    for path, known in _FIELDS.get(kind, ()):
        value = _get(document, path)
        if isinstance(value, Mapping):
            for key in value:
                if key not in known:
                    report.add(f"{'.'.join(path)}.{field_name(key)}", _unknown_message(key, known))
    if kind == "Provisioner" and isinstance(spec, Mapping):
        for key, what in (
            ("ttlSecondsAfterEmpty", "a whole number of seconds"),
            ("ttlSecondsUntilExpired", "a whole number of seconds"),
            ("weight", "a whole number"),
        ):
            value = spec.get(key)
            if value is not None and not (_is_whole_number(value) and value >= 0):
                report.add(f"spec.{key}", f"must be {what}, got {excerpt(value)}")
        consolidation = spec.get("consolidation")
        if isinstance(consolidation, Mapping):
            enabled = consolidation.get("enabled")
            if enabled is not None and not isinstance(enabled, bool):
                report.add(
                    "spec.consolidation.enabled", f"must be true or false, got {excerpt(enabled)}"
                )
    return report.errors


def _unknown_message(key: object, known: Sequence[str]) -> str:
    message = f"unknown field {excerpt(key)} in this version"
    close = difflib.get_close_matches(str(key)[:100], known, n=1, cutoff=0.6)
    return f"{message}; did you mean {close[0]!r}?" if close else message


def _get(document: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = document
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value
