"""How the fake API server reads a request's path: the resource it names, the discovery
documents of API groups, and label-selector queries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Resource:
    group: str
    version: str
    plural: str
    namespace: str | None
    name: str | None
    sub: str | None

    @property
    def gvr(self) -> tuple[str, str, str]:
        return (self.group, self.version, self.plural)


def parse_path(path: str) -> Resource | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    return Resource(
        group,
        version,
        rest[0],
        namespace,
        rest[1] if len(rest) > 1 else None,
        rest[2] if len(rest) > 2 else None,
    )


def discovery(parts: list[str]) -> dict[str, Any]:
    group_version = "/".join(parts[1:])
    resources = []
    if group_version == "events.k8s.io/v1":
        resources.append(
            {
                "name": "events",
                "namespaced": True,
                "kind": "Event",
                "verbs": ["create", "get", "list", "patch", "update", "delete", "watch"],
            }
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def label_query(text: str) -> list[tuple[str, str]]:
    pairs = []
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        pairs.append((key, value))
    return pairs
