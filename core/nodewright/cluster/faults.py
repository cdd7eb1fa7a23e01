"""Fault points for crash-consistency tests: a :class:`FaultPoint` armed with
:meth:`~nodewright.cluster.memory.MemoryCluster.crash_at` raises :class:`Crash` just before or
just after a matching write, stopping the writer there as if its process had died (the store
itself stays consistent)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from nodewright.api.meta import KubeObject


class Crash(BaseException):
    """The writer "dies" at an armed fault point.

    A BaseException, like SystemExit, so that no ``except Exception`` in a controller survives
    it: the call stack unwinds to the test that armed the point.
    """


#: The writes a fault point can stop at.
WriteVerb = Literal["create", "update", "update_status", "delete", "evict", "bind"]


@dataclass(frozen=True)
class FaultPoint:
    """One write to crash at: ``verb`` on ``kind``, ``before`` or after it is stored.

    ``match`` narrows it down; it receives the stored object before the write (None for a
    create) and the object as written (None for a delete that removes it) and answers whether
    this is the write to crash at.
    """

    name: str
    verb: WriteVerb
    kind: type[KubeObject]
    before: bool = True
    match: Callable[[KubeObject | None, KubeObject | None], bool] | None = None

    def matches(
        self,
        verb: str,
        kind: type[KubeObject],
        before: bool,
        old: KubeObject | None,
        new: KubeObject | None,
    ) -> bool:
        return (
            verb == self.verb
            and kind is self.kind
            and before == self.before
            and (self.match is None or self.match(old, new))
        )
