"""JSON patches (RFC 6902) of what a caller changed, guarded by ``test`` operations, and how
a failed precondition is recognised in the server's answer."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

from nodewright.api.meta import KubeObject
from nodewright.cluster.kube.transport import Answer

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"

#: Metadata the server owns; never part of a patch.
_SERVER_OWNED_METADATA = frozenset(
    {
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "managedFields",
        "selfLink",
        "namespace",
        "name",
    }
)


def _pointer(parts: Iterable[str]) -> str:
    """A JSON pointer (RFC 6901) to ``parts``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _ambiguous(value: Any) -> bool:
    """Empty and zero values (and maps of nothing else): the server may store them or leave
    the field out, so a ``test`` against them, or a path through them, could fail for no
    reason."""
    if isinstance(value, dict):
        return all(_ambiguous(v) for v in value.values())
    return value is None or value is False or value in ("", 0, [])


def json_patch(
    old: Mapping[str, Any], new: Mapping[str, Any], prefix: tuple[str, ...] = ()
) -> tuple[builtins.list[dict[str, Any]], bool]:
    """The JSON patch (RFC 6902) turning ``old`` into ``new``, with a ``test`` of the old
    value before every change to a value that was set (a list such as finalizers or taints is
    one value). Keys only ``new`` has are added without a test, like a merge patch.

    Returns the operations and whether some old value was empty or zero and could not be
    tested: the caller then adds a whole-object resourceVersion precondition.
    """
    ops: list[dict[str, Any]] = []
    untestable = _diff(dict(old), dict(new), prefix, ops, whole=True)
    return ops, untestable


def _diff(
    old: Any,
    new: Any,
    path: tuple[str, ...],
    ops: builtins.list[dict[str, Any]],
    *,
    whole: bool = False,
) -> bool:
    if old == new:
        return False
    if isinstance(old, dict) and isinstance(new, dict) and (whole or not _ambiguous(old)):
        untestable = False
        for key in sorted(set(old) | set(new)):
            where = (*path, key)
            if key not in new:
                if _ambiguous(old[key]):
                    continue  # empty before, gone now: nothing a reader could tell apart
                ops.append({"op": "test", "path": _pointer(where), "value": old[key]})
                ops.append({"op": "remove", "path": _pointer(where)})
            elif key not in old:
                ops.append({"op": "add", "path": _pointer(where), "value": new[key]})
            else:
                # metadata always exists on the server, however empty our copy looks
                inner = whole and key == "metadata"
                untestable |= _diff(old[key], new[key], where, ops, whole=inner)
        return untestable
    if _ambiguous(old):
        # "add" sets a member whether or not the server has it.
        ops.append({"op": "add", "path": _pointer(path), "value": new})
        return True
    ops.append({"op": "test", "path": _pointer(path), "value": old})
    ops.append({"op": "replace", "path": _pointer(path), "value": new})
    return False


def apply_ops(document: dict[str, Any], ops: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``document`` with the ``add``, ``replace`` and ``remove`` operations of a patch
    :func:`json_patch` built applied in place (its ``test`` operations are skipped: the caller
    checked the document's resourceVersion instead). Paths go through objects only, as
    :func:`json_patch` writes them."""
    for op in ops:
        if op["op"] == "test":
            continue
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = document
        for part in parts[:-1]:
            parent = parent.setdefault(part, {})
        if op["op"] == "remove":
            parent.pop(parts[-1], None)
        else:
            parent[parts[-1]] = op["value"]
    return document


#: The patch library's own words, which some servers (and proxies) pass on.
_PATCH_LIBRARY_WORDS = ("test failed", "testing value", "missing path", "missing value")


def precondition_failed(answer: Answer) -> bool:
    """True when the server could not apply a JSON patch we built: the object changed under
    us (a ``test`` failed, or a path it needs is gone), not an invalid request.

    A real API server answers this with a bare 422 (the message ``the server rejected our
    request due to an error in our request``, empty ``details``, the patch library's words
    dropped); a 422 for an object that would be invalid names it in ``details`` and lists
    the fields at fault as ``causes``. The caller then falls back to a replace carrying the
    resourceVersion it read, which is a 409 (ConflictError) when someone else wrote first.
    """
    if answer.status != 422:
        return False
    details = answer.body.get("details") or {}
    if not details.get("causes") and not details.get("name"):
        return True
    message = " ".join(
        [answer.message] + [str(c.get("message", "")) for c in details.get("causes") or []]
    ).lower()
    return any(word in message for word in _PATCH_LIBRARY_WORDS)


def _timestamps_of_container_states() -> tuple[tuple[str, ...], ...]:
    return tuple(
        ("status", statuses, "*", state, phase, stamp)
        for statuses in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
        for state in ("state", "lastState")
        for phase, stamp in (("running", "startedAt"), ("terminated", "startedAt"),
                             ("terminated", "finishedAt"))
    )  # fmt: skip


#: Fields the API server stores as ``null`` when a writer leaves them out: Go ``metav1.Time``
#: values, which serialise as null even with omitempty (``"lastProbeTime": null`` in every
#: PodCondition). Our dicts leave nulls out, so a ``test`` of a value holding one of these
#: would never match; :func:`as_stored` puts them back. By (apiVersion, kind); ``*`` is every
#: item of a list. Custom resources (NodeClaims, NodePools, NodeClasses) are stored as written.
STORED_AS_NULL: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("v1", "Pod"): (
        ("status", "conditions", "*", "lastProbeTime"),
        ("status", "conditions", "*", "lastTransitionTime"),
        *_timestamps_of_container_states(),
    ),
    ("v1", "Node"): (
        ("status", "conditions", "*", "lastHeartbeatTime"),
        ("status", "conditions", "*", "lastTransitionTime"),
    ),
    ("v1", "PersistentVolumeClaim"): (
        ("status", "conditions", "*", "lastProbeTime"),
        ("status", "conditions", "*", "lastTransitionTime"),
    ),
}


def as_stored(kind: type[KubeObject], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (an object's dict, changed in place) with the nulls the server would store
    in it (:data:`STORED_AS_NULL`), so a patch's ``test`` compares like with like."""
    for path in STORED_AS_NULL.get((kind.API_VERSION, kind.KIND), ()):
        _fill_null(data, path)
    return data


def _fill_null(node: Any, path: tuple[str, ...]) -> None:
    head, rest = path[0], path[1:]
    if head == "*":
        for item in node if isinstance(node, list) else ():
            _fill_null(item, rest)
    elif isinstance(node, dict):
        if not rest:
            node.setdefault(head, None)
        elif head in node:
            _fill_null(node[head], rest)


def spec_and_metadata(data: Mapping[str, Any]) -> dict[str, Any]:
    """An object's dict without status and server-owned metadata: what ``update`` writes."""
    body = {k: v for k, v in data.items() if k not in ("status", "apiVersion", "kind")}
    meta = body.get("metadata") or {}
    body["metadata"] = {k: v for k, v in meta.items() if k not in _SERVER_OWNED_METADATA}
    return body


def status_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """An object's dict with only its status: what ``update_status`` writes."""
    return {"status": data.get("status", {})}
