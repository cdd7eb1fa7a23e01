"""The one source of time for every controller.

Core logic asks a :class:`Clock` for the time and never sleeps: controllers return how long
they want to wait and the runner decides how to wait. In a real cluster the runner sleeps on
the wall clock; in ``nodewright simulate`` it jumps a :class:`SimulatedClock` forward, so ten
simulated minutes cost only the work done in them.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

#: The instant every simulation starts at, so reports are reproducible.
SIMULATION_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class Clock(Protocol):
    """Tells the time. Implementations must return timezone-aware UTC datetimes."""

    def now(self) -> datetime: ...


class Poll(timedelta):
    """A wait after which a controller only looks again, a periodic poll or resync: until
    then nothing it would do depends on the time, only on what changes in the cluster, except
    what falls due after :attr:`deadline` (None: nothing). A simulation in which nothing
    changes may jump over polls to the next deadline; a real cluster, where changes come from
    outside, waits out a poll as any other wait."""

    deadline: timedelta | None

    def __new__(cls, period: timedelta, deadline: timedelta | None = None) -> Poll:
        poll = super().__new__(
            cls, days=period.days, seconds=period.seconds, microseconds=period.microseconds
        )
        poll.deadline = deadline
        return poll


def next_deadline(wait: timedelta | None) -> timedelta | None:
    """When something falls due by time alone after a controller asked for ``wait``: the
    wait itself, or a :class:`Poll`'s deadline."""
    return wait.deadline if isinstance(wait, Poll) else wait


class SystemClock:
    """Wall-clock time, for ``nodewright run``."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        """Block the runner (never core logic) until ``seconds`` have passed."""
        time.sleep(max(0.0, seconds))


class SimulatedClock:
    """Time that moves only when the simulation runner moves it."""

    def __init__(self, start: datetime = SIMULATION_EPOCH) -> None:
        if start.tzinfo is None:
            raise ValueError("SimulatedClock needs a timezone-aware start time")
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        if delta < timedelta(0):
            raise ValueError(f"time cannot move backwards (asked to advance by {delta})")
        self._now += delta

    def advance_to(self, instant: datetime) -> None:
        self._now = max(self._now, instant)
