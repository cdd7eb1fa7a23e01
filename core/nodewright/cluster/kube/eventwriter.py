"""Events written off the controllers' thread: a bounded queue and one background writer.

:meth:`EventWriter.put` never blocks and never calls the API server. The writer thread takes
Events oldest first and writes each with one request: a create (POST) for a first occurrence, a
merge patch of the count for a repeat, falling back to a create when the repeat's Event is gone
(404), and to a read and a patch when a create finds it already there (409: a restarted
process). Nothing is read before a create.

When the queue is full the oldest Event is dropped and counted
(``nodewright_events_dropped_total``); a repeat of an Event still waiting replaces it in place,
so an Event repeated faster than it can be written costs one write. A write that fails because
the server is unreachable is retried with backoff while newer Events keep queueing; one the
server refuses is dropped and logged. Like client-go's broadcaster, events are best effort.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from nodewright import metrics
from nodewright.api.core import Event
from nodewright.cluster import AlreadyExistsError, ClusterError, NotFoundError
from nodewright.cluster.fence import NotLeaderError
from nodewright.cluster.kube.transport import ServerUnavailableError

log = logging.getLogger("nodewright.cluster.kube")

#: Events waiting to be written at most (client-go's broadcaster queues 1,000).
QUEUE_LIMIT = 1000
#: Attempts at one Event while the server is unreachable (client-go: 12, 10 s apart).
MAX_ATTEMPTS = 12
RETRY_BASE = 0.5
RETRY_MAX = 10.0
#: How long :meth:`EventWriter.close` lets the writer finish what is queued.
CLOSE_GRACE = 0.5

#: (namespace, name) of an Event.
EventKey = tuple[str, str]


class EventWriter:
    """The queue and the thread that writes what is in it (see the module docstring)."""

    def __init__(
        self,
        create: Callable[[Event], object],
        patch: Callable[[Event], object],
        read: Callable[[Event], Event | None],
        *,
        limit: int = QUEUE_LIMIT,
        sleep_until: Callable[[threading.Event, float], bool] | None = None,
    ) -> None:
        self._create = create
        self._patch = patch
        self._read = read
        self._limit = limit
        #: Waiting Events, oldest first (a dict keeps insertion order; a repeat keeps its place).
        self._queue: dict[EventKey, Event] = {}
        self._lock = threading.Condition()
        self._busy = False
        self._stop = threading.Event()
        self._wait = sleep_until or (lambda stop, seconds: stop.wait(seconds))
        self._thread: threading.Thread | None = None
        #: Events written, and dropped (queue full, refused, retries spent, shutdown).
        self.written = 0
        self.dropped = 0

    def put(self, event: Event) -> None:
        """Queue ``event``; drops the oldest waiting one when the queue is full."""
        key = (event.metadata.namespace or "default", event.metadata.name)
        with self._lock:
            if self._stop.is_set():
                self._drop("shutdown")
                return
            if key in self._queue:
                # A repeat of an Event not written yet: the latest count is written once (as
                # a create if the first one never reached the server: see _write_once).
                self._queue[key] = event
            else:
                self._queue[key] = event
                if len(self._queue) > self._limit:
                    del self._queue[next(iter(self._queue))]
                    self._drop("queue_full")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="event-writer", daemon=True)
                self._thread.start()
            self._lock.notify_all()

    def pending(self) -> int:
        with self._lock:
            return len(self._queue) + (1 if self._busy else 0)

    def flush(self, timeout: float) -> bool:
        """Wait until every queued Event is written or dropped; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._queue or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
        return True

    def close(self, grace: float = CLOSE_GRACE) -> None:
        """Let the writer finish what is queued for ``grace`` seconds, then drop the rest."""
        self.flush(grace)
        with self._lock:
            self._stop.set()
            left = len(self._queue)
            self._queue.clear()
            self._lock.notify_all()
        for _ in range(left):
            self._drop("shutdown")
        if left:
            log.info("dropped %d Event(s) not written before shutdown", left)
        if self._thread is not None:
            self._thread.join(grace)

    # -- the writer ------------------------------------------------------------------------------

    def _drop(self, reason: str) -> None:
        self.dropped += 1
        metrics.events_dropped.labels(reason).inc()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stop.is_set():
                    self._lock.wait()
                if self._stop.is_set():
                    self._busy = False
                    self._lock.notify_all()
                    return
                key = next(iter(self._queue))
                event = self._queue.pop(key)
                self._busy = True
            try:
                self._write(event)
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _write(self, event: Event) -> None:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                self._write_once(event)
            except ServerUnavailableError as error:
                if attempt == MAX_ATTEMPTS or self._stop.is_set():
                    log.warning("could not write Event %s: %s", event.name, error)
                    self._drop("unavailable")
                    return
                delay = min(RETRY_BASE * 2 ** (attempt - 1), RETRY_MAX)
                # the first delay is random so that replicas do not retry in step
                if attempt == 1:
                    delay *= random.random()
                if self._wait(self._stop, delay):
                    self._drop("shutdown")
                    return
            except NotLeaderError:
                self._drop("not_leading")
                return
            except ClusterError as error:
                log.warning(
                    "the API server refused Event %s (%s on %s): %s",
                    event.name,
                    event.reason,
                    event.involved_object.name,
                    error,
                )
                self._drop("refused")
                return
            else:
                self.written += 1
                return

    def _write_once(self, event: Event) -> None:
        if event.count > 1:
            try:
                self._patch(event)
            except NotFoundError:
                self._create(event)
            return
        try:
            self._create(event)
        except AlreadyExistsError:
            # Written before and forgotten (a restart, a memory full): count on from it.
            existing = self._read(event)
            count = 1 if existing is None else existing.count
            self._patch(event.model_copy(update={"count": count + 1}))
