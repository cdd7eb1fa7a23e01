"""Rebuild ``core/nodewright/api/kubeschema.json``: the fields of the Kubernetes kinds
nodewright reads from manifests, from the Kubernetes OpenAPI schema that the
``kubernetes-validate`` dev dependency ships.

    uv run --frozen python scripts/generate_kube_schema.py

The table keeps only what loading checks: each type's field names and value types (nested
types by name, lists as ``[]T``, maps as ``{}T``), and its required fields. Descriptions are
left out. ``tests/api/test_kube_schema.py`` fails when the table and the schema disagree.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate

KUBERNETES_VERSION = "1.37.0"
TABLE = Path(__file__).resolve().parent.parent / "core" / "nodewright" / "api" / "kubeschema.json"

#: The built-in kinds manifests may hold (``nodewright.api.manifests.kinds.CORE_KINDS`` less
#: Karpenter's own kinds, which have their own models and CRDs).
KINDS = (
    ("v1", "Namespace"),
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "PersistentVolume"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"),
    ("policy/v1", "PodDisruptionBudget"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSINode"),
    ("resource.k8s.io/v1", "DeviceClass"),
    ("resource.k8s.io/v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    ("resource.k8s.io/v1", "ResourceSlice"),
)

#: Types with a text form of their own, checked as such rather than by their schema.
_SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "time",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "any",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "any",
}
_PREFIXES = ("io.k8s.api.", "io.k8s.apimachinery.pkg.apis.")


def schema_definitions() -> Mapping[str, Any]:
    folder = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    path = folder / f"v{KUBERNETES_VERSION}-local-strict" / "_definitions.json"
    return dict(json.loads(path.read_text(encoding="utf-8"))["$defs"])


def short_name(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    return name


def _types_of(schema: Mapping[str, Any]) -> set[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    return {t for t in declared or () if t != "null"}


def expression(schema: Mapping[str, Any], found: set[str]) -> str:
    """A property's value type: a scalar name, a type name, ``[]T`` or ``{}T``."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        special = _SPECIAL.get(name)
        if special is not None:
            return special
        found.add(name)
        return short_name(name)
    types = _types_of(schema)
    if "array" in types:
        return "[]" + expression(schema.get("items") or {}, found)
    if "object" in types:
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return "{}" + expression(extra, found)
        return "any"
    if "string" in types:
        return "time" if schema.get("format") == "date-time" else "string"
    if "integer" in types:
        return "int32" if schema.get("format") == "int32" else "int64"
    if "number" in types:
        return "number"
    if "boolean" in types:
        return "boolean"
    return "any"


def build_table(definitions: Mapping[str, Any], kinds: Iterable[tuple[str, str]]) -> dict[str, Any]:
    roots: dict[str, str] = {}
    for api_version, kind in kinds:
        group, _, version = api_version.rpartition("/")
        for name, schema in definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or ():
                if (gvk.get("group", ""), gvk["version"], gvk["kind"]) == (group, version, kind):
                    roots[f"{api_version}/{kind}"] = name
        if f"{api_version}/{kind}" not in roots:
            raise SystemExit(f"{api_version} {kind} is not in the schema")
    types: dict[str, Any] = {}
    pending = list(roots.values())
    while pending:
        name = pending.pop()
        if short_name(name) in types:
            continue
        schema = definitions[name]
        found: set[str] = set()
        fields = {
            field: expression(value, found)
            for field, value in sorted((schema.get("properties") or {}).items())
        }
        entry: dict[str, Any] = {"fields": fields}
        required = sorted(schema.get("required") or ())
        if required:
            entry["required"] = required
        types[short_name(name)] = entry
        pending.extend(sorted(found))
    return {
        "kubernetes": KUBERNETES_VERSION,
        "kinds": {key: short_name(name) for key, name in sorted(roots.items())},
        "types": dict(sorted(types.items())),
    }


def render(table: Mapping[str, Any]) -> str:
    return json.dumps(table, indent=1, sort_keys=False) + "\n"


def main() -> int:
    TABLE.write_text(render(build_table(schema_definitions(), KINDS)), encoding="utf-8")
    print(f"wrote {TABLE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
