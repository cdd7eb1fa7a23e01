"""A controller's work: the keys whose objects changed, and the keys that asked to come back.

controller-runtime gives every Karpenter controller a queue fed by watch events and by
``RequeueAfter``; this is nodewright's. A controller drains its change feed into the queue,
reconciles the keys that are ready, and tells the operator when the next one falls due, so an
idle cluster costs nothing however many objects it holds.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from nodewright import metrics
from nodewright.clock import Poll

K = TypeVar("K", bound=Hashable)

#: Controllers that work off change feeds look at every object this often anyway, as an
#: informer's resync does; it must find nothing the feeds missed.
RESYNC_PERIOD = timedelta(minutes=10)


class Resync:
    """When a controller next looks at every object anyway: on its first pass, then every
    ``period`` (as an informer's resync), and on the pass after :meth:`reset` (the
    controller's ``resync``)."""

    def __init__(self, period: timedelta = RESYNC_PERIOD) -> None:
        self.period = period
        #: When the next resync falls due (None: on the next pass).
        self.at: datetime | None = None

    def due(self, now: datetime) -> bool:
        """Whether this pass resyncs; if it does, the next resync is ``period`` away."""
        if self.at is not None and now < self.at:
            return False
        self.at = now + self.period
        return True

    def reset(self) -> None:
        """Resync on the next pass."""
        self.at = None


def wait_until(now: datetime, due: datetime | None, resync_at: datetime | None) -> timedelta | None:
    """How long a controller waits for its queue's next key (``due``) or its resync
    (``resync_at``), whichever comes first. A resync only looks again, so waiting for it is a
    :class:`~nodewright.clock.Poll` whose deadline is the queue's key."""
    deadline = None if due is None else max(due - now, timedelta(0))
    if resync_at is None:
        return deadline
    resync = max(resync_at - now, timedelta(0))
    if deadline is not None and deadline <= resync:
        return deadline
    return Poll(resync, deadline)


class WorkQueue(Generic[K]):
    """Keys to reconcile now (``add``) or at a given time (``add_at``), each at most once."""

    def __init__(self, name: str = "") -> None:
        #: The controller it feeds; a named queue exports its depth (``workqueue_depth``).
        self._depth = metrics.workqueue_depth.labels(name, name, "") if name else None
        self._ready: set[K] = set()
        #: key -> when it is due; the heap may hold stale entries, skipped when popped.
        self._due: dict[K, datetime] = {}
        self._heap: list[tuple[datetime, int, K]] = []
        self._order = 0

    def add(self, key: K) -> None:
        """Reconcile ``key`` on the next pass."""
        self._ready.add(key)
        self._due.pop(key, None)
        if self._depth is not None:
            self._depth.set(len(self._ready))

    def add_at(self, key: K, when: datetime) -> None:
        """Reconcile ``key`` at ``when`` (or earlier, if it was already due earlier)."""
        if key in self._ready:
            return
        current = self._due.get(key)
        if current is not None and current <= when:
            return
        self._due[key] = when
        self._order += 1
        heapq.heappush(self._heap, (when, self._order, key))

    def forget(self, key: K) -> None:
        """Drop ``key`` (its object is gone)."""
        self._ready.discard(key)
        self._due.pop(key, None)

    def pop_ready(self, now: datetime) -> set[K]:
        """Every key to reconcile now: the ones added and the ones that fell due."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            when, _, key = heapq.heappop(heap)
            if self._due.get(key) == when:
                del self._due[key]
                self._ready.add(key)
        ready, self._ready = self._ready, set()
        if self._depth is not None:
            self._depth.set(0)  # taken: being reconciled, as controller-runtime counts it
        return ready

    def next_due(self) -> datetime | None:
        """When the earliest scheduled key falls due (None when nothing is scheduled)."""
        if self._ready:
            return datetime.min
        heap = self._heap
        while heap and self._due.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def __len__(self) -> int:
        return len(self._ready) + len(self._due)
