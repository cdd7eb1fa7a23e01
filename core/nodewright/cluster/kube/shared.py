"""Equal parts of cached objects held once: what makes a cache's memory follow its objects.

A Deployment's pods differ in a few fields (name, uid, IP, node, the service-account volume,
some times) and are equal in the rest: labels, owner, containers' images and requests,
tolerations, most conditions. The cache of a read-only kind passes each object it parses
through :class:`SharedParts`, which replaces every part (a model, list, dict or datetime below
the object's own metadata, spec and status) by an equal one it already holds, as interning
does for strings. A cached pod then owns about a fifth of the memory it did.

That matters most after a scale-down. CPython's small-object allocator hands out 16 KiB pools
of 1 MiB arenas, and returns an arena only when nothing in it lives: the pods that survive a
scale-down are scattered over every pool their thousands of siblings were parsed into, so
freed pods' memory mostly stays with the process. The less each pod owns, the fewer pools
its survivors pin.

Shared parts are never changed: objects in the caches are read-only (see
:mod:`nodewright.cluster.state`), and a caller that changes an object changes a
:func:`~nodewright.cluster.mutable` copy, which copies every part.

The table remembers each part it hands out until nothing else holds it; :meth:`sweep` (run
as the table grows, and when objects were deleted) forgets those, newest first, so a part
freed by forgetting its holder is forgotten in the same sweep.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
#: Parts at this depth and below are shared; the object (0) and its metadata, spec and status
#: (1) are each object's own and not worth remembering.
SHARED_FROM_DEPTH = 2
#: Sweep when the changes since the last sweep pass this, or an eighth of the table.
SWEEP_AFTER = 256
_NONE = object()
_getrefcount = sys.getrefcount


def _token(value: Any) -> Any:
    """What stands for a (shared) part in a key: strings as themselves, other scalars with
    their type (so 1, 1.0 and True differ), anything else by identity (it is in the table,
    held by its holder, so its identity is not reused while the key exists)."""
    kind = type(value)
    if kind is str:
        return value
    if value is None:
        return _NONE
    if kind in _SCALARS:
        return (kind, value)
    return id(value)


class SharedParts:
    """A table of parts, each held once (see the module docstring). Not thread-safe: one
    cache's thread uses it."""

    def __init__(self) -> None:
        self._table: dict[Any, Any] = {}
        self._changes = 0

    def __len__(self) -> int:
        return len(self._table)

    def share(self, obj: M) -> M:
        """``obj`` (just parsed, not yet seen by anyone) with its parts replaced by equal
        ones held already; the parts it brings that are new are remembered."""
        self._part(obj, 0)
        self.changed()
        return obj

    def changed(self, count: int = 1) -> None:
        """Note objects taken in or dropped; sweep when enough changed."""
        self._changes += count
        if self._changes >= max(SWEEP_AFTER, len(self._table) // 8):
            self.sweep()

    def settle(self) -> None:
        """Sweep if anything changed since the last sweep (when the cache is quiet)."""
        if self._changes:
            self.sweep()

    def sweep(self) -> int:
        """Forget the parts nothing but the table holds; returns how many."""
        table = self._table
        forgotten = 0
        for key in reversed(list(table)):
            value = table[key]
            # references: the table's value, the local name, getrefcount's argument, and
            # the key for datetimes (a datetime is its own key)
            if _getrefcount(value) <= (4 if type(value) is datetime else 3):
                del table[key]
                forgotten += 1
            del value
        self._changes = 0
        return forgotten

    def _part(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind in _SCALARS:
            return value
        table = self._table
        if kind is datetime:
            moment = (kind, value, value.utcoffset(), type(value.tzinfo))
            return table.setdefault(moment, value)
        deeper = depth + 1
        if kind is list:
            for index, item in enumerate(value):
                if type(item) not in _SCALARS:
                    value[index] = self._part(item, deeper)
            if depth < SHARED_FROM_DEPTH:
                return value
            key: tuple[Any, ...] = (list, *map(_token, value))
        elif kind is dict:
            for name, item in value.items():
                if type(item) not in _SCALARS:
                    value[name] = self._part(item, deeper)
            if depth < SHARED_FROM_DEPTH:
                return value
            key = (dict, *value.keys(), *map(_token, value.values()))
        elif isinstance(value, BaseModel):
            fields = value.__dict__
            for name, item in fields.items():
                if type(item) not in _SCALARS:
                    fields[name] = self._part(item, deeper)
            extra = value.__pydantic_extra__
            if extra is not None:
                extra = self._part(extra, max(deeper, SHARED_FROM_DEPTH))
                object.__setattr__(value, "__pydantic_extra__", extra)
            if depth < SHARED_FROM_DEPTH or value.__pydantic_private__ is not None:
                return value
            key = (kind, _token(extra), *map(_token, fields.values()))
        else:
            return value
        found = table.get(key)
        if found is None:
            table[key] = value
            return value
        return found
