"""Where each kind lives on the API server: its REST plural and paths."""

from __future__ import annotations

from urllib.parse import quote

from nodewright.api.meta import KubeObject
from nodewright.cluster.memory import DEFAULT_NAMESPACE

Key = tuple[str, str]

#: Plurals that the simple English rules below get wrong.
IRREGULAR_PLURALS: dict[str, str] = {"Endpoints": "endpoints"}


def plural_of(kind: str) -> str:
    """The REST resource name of a kind, as the API server and CRDs spell it."""
    if kind in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[kind]
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def collection_path(kind: type[KubeObject], namespace: str | None) -> str:
    """``/api/v1/namespaces/NS/pods``, ``/apis/karpenter.sh/v1/nodepools`` ..."""
    api_version = kind.API_VERSION
    prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    plural = plural_of(kind.KIND)
    if kind.NAMESPACED and namespace:
        return f"{prefix}/namespaces/{quote(namespace, safe='')}/{plural}"
    return f"{prefix}/{plural}"


def object_path(kind: type[KubeObject], name: str, namespace: str) -> str:
    ns = (namespace or DEFAULT_NAMESPACE) if kind.NAMESPACED else None
    return f"{collection_path(kind, ns)}/{quote(name, safe='')}"
