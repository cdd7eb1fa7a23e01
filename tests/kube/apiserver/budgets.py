"""PodDisruptionBudgets as the eviction subresource reads them: which pods a budget selects
and how many disruptions it still allows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Label-selector semantics as policy/v1 evictions apply them: a budget without a selector
    selects nothing, an empty selector (``selector: {}``) every pod of its namespace."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        has = expression["key"] in labels
        values = expression.get("values") or []
        op = expression["operator"]
        if (
            (op == "In" and labels.get(expression["key"]) not in values)
            or (op == "NotIn" and labels.get(expression["key"]) in values)
            or (op == "Exists" and not has)
            or (op == "DoesNotExist" and has)
        ):
            return False
    return True


def disruptions_allowed(
    objects: Mapping[tuple[tuple[str, str, str], str, str], dict[str, Any]],
    pdb: dict[str, Any],
    ns: str,
) -> int:
    """How many more of the budget's pods may go now; at 0 or below an eviction gets 429."""
    selector = pdb.get("spec", {}).get("selector")
    pods = [
        o
        for (g, n, _), o in objects.items()
        if g[2] == "pods"
        and n == ns
        and selector_matches(selector, o["metadata"].get("labels") or {})
        and o.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]
    healthy = sum(
        1
        for o in pods
        if o.get("status", {}).get("phase") == "Running"
        and not o["metadata"].get("deletionTimestamp")
    )
    spec = pdb.get("spec", {})
    if spec.get("maxUnavailable") is not None:
        return healthy - max(0, len(pods) - int(spec["maxUnavailable"]))
    if spec.get("minAvailable") is not None:
        return healthy - int(spec["minAvailable"])
    return healthy - len(pods)
