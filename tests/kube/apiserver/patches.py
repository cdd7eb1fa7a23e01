"""Patches as the API server applies them: JSON patch (RFC 6902) with its ``test`` semantics
and its bare 422 for any operation that cannot apply (:data:`NOT_APPLIED`), and JSON merge
patch (RFC 7386)."""

from __future__ import annotations

import copy
from typing import Any

from tests.kube.apiserver.status import Reply, failure

#: What a real API server answers to any JSON patch it cannot apply (a failed ``test``, a
#: missing path, an unknown operation): 422 with this message and empty ``details``.
NOT_APPLIED: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server rejected our request due to an error in our request",
    "reason": "Invalid",
    "details": {},
    "code": 422,
}


def _unpointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise Reply(422, NOT_APPLIED)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise Reply(422, NOT_APPLIED)
    return node


def apply_json_patch(document: dict[str, Any], ops: list[Any]) -> Any:
    """RFC 6902 as the API server applies it (evanphx/json-patch): a ``test`` of null passes
    on a missing member, a ``replace`` of a missing member adds it, and every operation that
    does not apply is the same bare 422 (:data:`NOT_APPLIED`), whatever went wrong."""
    doc = copy.deepcopy(document)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise Reply(400, failure(400, "BadRequest", f"malformed patch operation {op!r}"))
        kind, path = op["op"], op["path"]
        parts = _unpointer(path)
        if not parts:
            raise Reply(422, NOT_APPLIED)
        parent = _parent(doc, parts)
        last = parts[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last) if last.isdigit() else -1
            present = 0 <= index < len(parent)
            current = parent[index] if present else None
        elif isinstance(parent, dict):
            present = last in parent
            current = parent.get(last)
        else:
            raise Reply(422, NOT_APPLIED)
        if kind == "test":
            if current != op.get("value") or (isinstance(parent, list) and not present):
                raise Reply(422, NOT_APPLIED)
        elif kind == "remove":
            if not present:
                raise Reply(422, NOT_APPLIED)
            del parent[index if isinstance(parent, list) else last]
        elif kind == "replace":
            if isinstance(parent, list) and not present:
                raise Reply(422, NOT_APPLIED)
            parent[index if isinstance(parent, list) else last] = op.get("value")
        elif kind == "add":
            if isinstance(parent, list):
                if not 0 <= index <= len(parent):
                    raise Reply(422, NOT_APPLIED)
                parent.insert(index, op.get("value"))
            else:
                parent[last] = op.get("value")
        else:
            raise Reply(422, NOT_APPLIED)
    return doc


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge key by key, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result
