"""JSON patches (RFC 6902) of what a caller changed, guarded by ``test`` operations, and how
a failed precondition is recognised in the server's answer."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

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


#: Words in the API server's 422 answer when a JSON patch's ``test`` (or a path it needs)
#: failed: the object changed under us, not an invalid request.
_PRECONDITION_FAILED = ("test failed", "testing value", "missing path", "missing value")


def precondition_failed(answer: Answer) -> bool:
    message = answer.message.lower()
    return answer.status == 422 and any(word in message for word in _PRECONDITION_FAILED)


def spec_and_metadata(data: Mapping[str, Any]) -> dict[str, Any]:
    """An object's dict without status and server-owned metadata: what ``update`` writes."""
    body = {k: v for k, v in data.items() if k not in ("status", "apiVersion", "kind")}
    meta = body.get("metadata") or {}
    body["metadata"] = {k: v for k, v in meta.items() if k not in _SERVER_OWNED_METADATA}
    return body
