"""Replacing an object the caches keep trimmed (:data:`.slim.READ_ONLY`: pods and the
workloads nodewright only reads) without losing what was trimmed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nodewright.api.meta import KubeObject
from nodewright.cluster import ConflictError
from nodewright.cluster.kube.patch import apply_ops, as_stored, json_patch
from nodewright.cluster.kube.routing import object_path
from nodewright.cluster.kube.slim import slimmed
from nodewright.cluster.kube.transport import Answer, Transport, model_of, raise_for


def replace_from_server(
    api: Transport,
    obj: KubeObject,
    path: str,
    part: Callable[[Mapping[str, Any]], dict[str, Any]],
) -> Answer:
    """Read the server's copy of ``obj``, apply the caller's changes to ``part`` of it (what
    the caller read, as the cache trimmed it, against what it wrote) and write that back to
    ``path`` with the resourceVersion read. A copy that moved on since the caller read it is
    a :class:`ConflictError`, as a replace would be."""
    kind = type(obj)
    current = api.call("GET", object_path(kind, obj.name, obj.namespace))
    raise_for(current, kind, obj.name, obj.namespace)
    server = current.body
    version = (server.get("metadata") or {}).get("resourceVersion")
    if version != obj.metadata.resource_version:
        raise ConflictError(
            f"{kind.KIND} {obj.key}: the object has been modified; please apply your changes "
            "to the latest version and try again"
        )
    read = model_of(kind, slimmed(kind, server))
    ops, _ = json_patch(part(as_stored(kind, read.to_dict())), part(as_stored(kind, obj.to_dict())))
    return api.call("PUT", path, body=apply_ops(server, ops))
