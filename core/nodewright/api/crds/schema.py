"""The building blocks of CRD schemas: OpenAPI types, CEL rules, conditions, printer columns
and the CustomResourceDefinition around a schema.

Every CRD nodewright prints is made of these, the core's (:mod:`nodewright.api.crds`) and the
NodeClass CRDs providers generate from their models (:mod:`nodewright.plugin.crd`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.api.karpenter import CONDITION_READY

Schema = dict[str, Any]

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


def column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


def label_path(label: str) -> str:
    return ".metadata.labels." + label.replace(".", "\\.")


def ready_column() -> dict[str, Any]:
    return column("Ready", f'.status.conditions[?(@.type=="{CONDITION_READY}")].status')


def age_column() -> dict[str, Any]:
    return column("Age", ".metadata.creationTimestamp", "date")


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


def root(description: str, spec: Schema, status: Schema, **extra: Any) -> Schema:
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
