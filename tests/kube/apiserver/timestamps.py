"""Timestamps as a real API server writes them: creation and deletion times to the second,
and ``null`` for every unset Go timestamp (:data:`NULL_TIMESTAMPS`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.kube.apiserver.routing import Resource

#: Timestamps a real API server stores as ``null`` when a writer leaves them out (Go's
#: ``metav1.Time`` is a struct, so omitempty never drops it): by resource, the item lists
#: under ``status`` and, in each item, the timestamp fields (dotted for nested structs).
NULL_TIMESTAMPS: dict[str, dict[str, tuple[str, ...]]] = {
    "pods": {
        "conditions": ("lastProbeTime", "lastTransitionTime"),
        **{
            statuses: tuple(
                f"{state}.{phase}.{stamp}"
                for state in ("state", "lastState")
                for phase, stamp in (
                    ("running", "startedAt"),
                    ("terminated", "startedAt"),
                    ("terminated", "finishedAt"),
                )
            )
            for statuses in (
                "containerStatuses",
                "initContainerStatuses",
                "ephemeralContainerStatuses",
            )
        },
    },
    "nodes": {"conditions": ("lastHeartbeatTime", "lastTransitionTime")},
    "persistentvolumeclaims": {"conditions": ("lastProbeTime", "lastTransitionTime")},
}


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def store_like_go(r: Resource, obj: dict[str, Any]) -> None:
    """Fill the timestamps a real server stores as null (:data:`NULL_TIMESTAMPS`)."""
    if r.group != "":
        return
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    for list_name, fields in NULL_TIMESTAMPS.get(r.plural, {}).items():
        for item in status.get(list_name) or []:
            for dotted in fields:
                *parents, last = dotted.split(".")
                node = item
                for part in parents:
                    node = node.get(part) if isinstance(node, dict) else None
                if isinstance(node, dict):
                    node.setdefault(last, None)
