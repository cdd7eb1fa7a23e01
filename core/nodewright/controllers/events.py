"""Kubernetes Events with Karpenter's reasons, decided on the controller's thread and handed to
the cluster adapter (:meth:`~nodewright.cluster.Cluster.record_event`), which never blocks: the
Kubernetes adapter queues them for a background writer, so a reconcile never waits for one.

What reaches the adapter follows Karpenter's recorder on top of client-go's:

* **dedupe** (Karpenter): an event whose reason and dedupe values (Karpenter's ``DedupeValues``)
  were published within their window (5 minutes unless the caller says otherwise) is not
  written again. A caller that names no values dedupes on the object and the message; Karpenter's
  disruption events name the object's UID alone (``Unconsolidatable``, ``DisruptionBlocked``),
  so a node gets one such event a window whatever its message;
* **count** (client-go's correlator): a repeat after the window is the same Event (same name)
  with ``count`` one higher, which the adapter writes as a patch. The recorder remembers what it
  wrote, so nothing is read from the API server first;
* **combine** (client-go's aggregator): once one object has had events of one reason and type
  with 10 different messages within 10 minutes, further ones count into a single
  "(combined from similar events): ..." Event;
* **spam filter** (client-go): at most 25 events about one object at once, refilled at one
  every 5 minutes;
* **Nominated** events share one token bucket, 5 a second with a burst of 10, as Karpenter's
  ``PodNominationRateLimiter``.

Every memory the recorder keeps is bounded and forgets an entry once it no longer changes an
outcome, so what it holds follows the objects that had events lately, not every object ever
seen.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from nodewright.api.core import Event, EventSource
from nodewright.api.meta import KubeObject, ObjectMeta
from nodewright.clock import Clock
from nodewright.cluster import Cluster

NORMAL = "Normal"
WARNING = "Warning"
COMPONENT = "karpenter"

#: How long an event published again is not written again, unless the caller says otherwise.
DEFAULT_DEDUPE = timedelta(minutes=5)
#: Karpenter's recorder's window for an event that names its dedupe values but no window
#: (``defaultDedupeTimeout``).
KARPENTER_DEDUPE = timedelta(minutes=2)
#: client-go's aggregation: this many different messages of one reason about one object ...
SIMILAR_MESSAGES = 10
#: ... within this long, and further ones are combined into one Event.
SIMILAR_WINDOW = timedelta(minutes=10)
COMBINED_PREFIX = "(combined from similar events): "
#: client-go's spam filter: events about one object at once, and the refill rate (per second).
OBJECT_BURST = 25
OBJECT_REFILL = 1 / 300
#: Karpenter's PodNominationRateLimiter: Nominated events a second, and their burst.
NOMINATED_QPS = 5.0
NOMINATED_BURST = 10
#: Entries each of the recorder's memories holds at most (client-go's LRU size).
CACHE_ENTRIES = 4096
#: What the recorder wrote is remembered this long after its dedupe window ends, so a repeat
#: soon after counts into the same Event.
REMEMBER_WRITTEN = timedelta(minutes=10)
#: How often (clock time) the recorder forgets entries that no longer matter.
SWEEP_EVERY = timedelta(minutes=1)


@dataclass
class _Written:
    """An Event the recorder handed to the adapter."""

    count: int
    first: datetime
    last: datetime
    window: timedelta


@dataclass
class _Similar:
    """The messages of one object's events of one reason and type, for combining."""

    messages: set[str] = field(default_factory=set)
    last: datetime | None = None


class TokenBucket:
    """``rate`` tokens a second up to ``burst``, on the injected clock; never waits."""

    def __init__(self, rate: float, burst: int, now: datetime) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp = now

    def _refill(self, now: datetime) -> None:
        elapsed = max(0.0, (now - self.stamp).total_seconds())
        self.tokens = min(self.burst, self.tokens + elapsed * self.rate)
        self.stamp = now

    def try_take(self, now: datetime) -> bool:
        self._refill(now)
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def full(self, now: datetime) -> bool:
        self._refill(now)
        return self.tokens >= self.burst


_K = TypeVar("_K")
_V = TypeVar("_V")


def _touch(cache: dict[_K, _V], key: _K, value: _V) -> None:
    """Store ``value`` as the most recently used entry, dropping the least recent over the cap."""
    cache.pop(key, None)
    cache[key] = value
    if len(cache) > CACHE_ENTRIES:
        del cache[next(iter(cache))]


def _digest(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:16]


def _subject(obj: KubeObject) -> str:
    return f"{obj.kind}/{obj.namespace}/{obj.name}"


def identity(obj: KubeObject) -> str:
    """The object's UID as Karpenter's dedupe values name it (its kind, namespace and name when it
    has none, as an object only a simulation made may not)."""
    return obj.metadata.uid or _subject(obj)


class EventRecorder:
    def __init__(self, cluster: Cluster, clock: Clock, dedupe: timedelta = DEFAULT_DEDUPE):
        self._cluster = cluster
        self._clock = clock
        self._dedupe = dedupe
        #: Event name -> what was written under it.
        self._written: dict[str, _Written] = {}
        #: Dedupe key -> until when an event under it is not written again.
        self._deduped: dict[tuple[str, ...], datetime] = {}
        #: (object, type, reason) -> the different messages seen lately.
        self._similar: dict[tuple[str, str, str], _Similar] = {}
        #: (object, type) -> its spam-filter bucket.
        self._spam: dict[tuple[str, str], TokenBucket] = {}
        #: (object, reason, message) -> the Event's name (a digest): a controller that repeats
        #: an event every pass asks for the same names again. Kept while the recorder
        #: remembers the Event.
        self._names: dict[tuple[str, str, str], str] = {}
        now = clock.now()
        self._nominated = TokenBucket(NOMINATED_QPS, NOMINATED_BURST, now)
        self._next_sweep = now + SWEEP_EVERY
        #: Events not written because a rate limit or the spam filter held them back.
        self.suppressed = 0

    def publish(
        self,
        obj: KubeObject,
        reason: str,
        message: str,
        kind: str = NORMAL,
        *,
        dedupe: timedelta | None = None,
        dedupe_on: tuple[str, ...] | None = None,
    ) -> datetime | None:
        """Record an event about ``obj``; never raises and never waits (events are best effort).

        ``dedupe_on`` are the values it is deduped on besides its reason (None: the object and
        the message). Returns when publishing under the same key would next be recorded, so a
        caller that repeats an event every pass may skip the calls that would change nothing.
        """
        now = self._clock.now()
        if now >= self._next_sweep:
            self._sweep(now)
        window = self._dedupe if dedupe is None else dedupe
        subject = _subject(obj)
        named = (subject, reason, message)
        name = self._names.get(named)
        if name is None:
            if len(self._names) >= 2 * CACHE_ENTRIES:
                self._names = {}
            name = self._names[named] = f"{obj.name}.{_digest(subject, reason, message)}"
        key = self._key(obj, reason, message, dedupe_on)
        until = self._deduped.get(key)
        if until is not None and now < until:
            return until
        # Karpenter's dedupe remembers the event even when a rate limit drops it.
        _touch(self._deduped, key, now + window)
        seen = self._written.get(name)
        entry = _Written(0, now, now, window) if seen is None else seen
        entry.last, entry.window = now, window
        _touch(self._written, name, entry)
        if reason == "Nominated" and not self._nominated.try_take(now):
            self.suppressed += 1
            return now + window
        combined = self._combined(subject, kind, reason, message, now)
        if combined is not None:
            name, message = combined
            entry = self._written.get(name) or _Written(0, now, now, window)
            entry.last = now
            _touch(self._written, name, entry)
        bucket = self._spam.get((subject, kind)) or TokenBucket(OBJECT_REFILL, OBJECT_BURST, now)
        _touch(self._spam, (subject, kind), bucket)
        if not bucket.try_take(now):
            self.suppressed += 1
            return now + window
        entry.count += 1
        self._cluster.record_event(
            Event(
                metadata=ObjectMeta(name=name, namespace=obj.metadata.namespace or "default"),
                involved_object=obj.reference(),
                reason=reason,
                message=message,
                type=kind,
                count=entry.count,
                first_timestamp=entry.first,
                last_timestamp=now,
                source=EventSource(component=COMPONENT),
            )
        )
        return now + window

    def dropped(self) -> None:
        """What publishing an event the dedupe drops does: only the recorder's housekeeping,
        which must run when it would have (what it forgets decides later counts)."""
        now = self._clock.now()
        if now >= self._next_sweep:
            self._sweep(now)

    def would_record(self, obj: KubeObject, reason: str, dedupe_on: tuple[str, ...]) -> bool:
        """Whether an event about ``obj`` deduped on ``dedupe_on`` published now would get past
        the dedupe (rate limits aside). Publishes nothing."""
        until = self._deduped.get(self._key(obj, reason, "", dedupe_on))
        return until is None or self._clock.now() >= until

    @staticmethod
    def _key(
        obj: KubeObject, reason: str, message: str, dedupe_on: tuple[str, ...] | None
    ) -> tuple[str, ...]:
        if dedupe_on is None:
            return ("", _subject(obj), reason, message)
        return (reason, *dedupe_on)

    def _combined(
        self, subject: str, kind: str, reason: str, message: str, now: datetime
    ) -> tuple[str, str] | None:
        """The combined Event's name and message when this message is one too many similar
        ones (client-go's aggregator), else None."""
        key = (subject, kind, reason)
        similar = self._similar.get(key)
        if similar is None or similar.last is None or now - similar.last > SIMILAR_WINDOW:
            similar = _Similar()
        similar.messages.add(message)
        similar.last = now
        _touch(self._similar, key, similar)
        if len(similar.messages) < SIMILAR_MESSAGES:
            return None
        similar.messages.discard(message)  # the set never grows past the threshold
        name = subject.rsplit("/", 1)[-1] + "." + _digest(subject, kind, reason, "combined")
        return name, COMBINED_PREFIX + message

    def _sweep(self, now: datetime) -> None:
        """Forget what no longer changes an outcome."""
        self._next_sweep = now + SWEEP_EVERY
        self._written = {
            name: w
            for name, w in self._written.items()
            if now < w.last + w.window + REMEMBER_WRITTEN
        }
        self._deduped = {key: until for key, until in self._deduped.items() if now < until}
        self._similar = {
            key: s
            for key, s in self._similar.items()
            if s.last is not None and now - s.last <= SIMILAR_WINDOW
        }
        self._spam = {key: b for key, b in self._spam.items() if not b.full(now)}
        self._names = {key: n for key, n in self._names.items() if n in self._written}

    def remembered(self) -> int:
        """Entries held in the recorder's memories (for tests of what it keeps)."""
        return len(self._written) + len(self._deduped) + len(self._similar) + len(self._spam)
