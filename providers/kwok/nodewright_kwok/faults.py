"""Faults a test or scenario can inject into the fake cloud.

Each fault mimics something real clouds do to Karpenter: offerings that run out of capacity,
an account quota, a throttled API, instances that are slow to boot. Faults are plain state
on a :class:`Faults` object; :meth:`Faults.configure` sets them from provider options so a
scenario file can set them too (see the README for the option syntax).

Crash points are for crash-consistency tests: :meth:`Faults.crash_at` arms a named point in
the provider's code, and reaching it raises :class:`Crash`, which no controller catches, so
the calling process stops there as if it had died.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from nodewright.plugin import CAPACITY_TYPES, DurationError, TemporaryProviderError, parse_duration

#: Matches any instance type, zone or capacity type in an insufficient-capacity pattern.
ANY = "*"

#: Where :meth:`Faults.crash_at` can stop the provider: before and after an instance is
#: recorded (``launch``), before and after one is terminated (``delete``), and before and
#: after its Node is created in the cluster (``register``, the fake kubelet's work).
CRASH_POINTS = (
    "launch.before",
    "launch.after",
    "delete.before",
    "delete.after",
    "register.before",
    "register.after",
)

#: Hooks whose next calls can be made to fail (``fail_next("launch", 2)``).
FAILABLE_HOOKS = ("instance_types", "offerings", "launch", "get", "list", "delete")

#: Option names, as given to ``--provider-option kwok.<name>=<value>``.
OPTION_INSUFFICIENT_CAPACITY = "fault-insufficient-capacity"
OPTION_INSTANCE_QUOTA = "fault-instance-quota"
OPTION_API_ERRORS = "fault-api-errors"
OPTION_LATENCY = "fault-latency"
OPTION_RATE = "fault-rate"
OPTIONS = (
    OPTION_INSUFFICIENT_CAPACITY,
    OPTION_INSTANCE_QUOTA,
    OPTION_API_ERRORS,
    OPTION_LATENCY,
    OPTION_RATE,
)

#: What ``fault-rate`` can make fail at random: a hook's calls, an offering tried at launch
#: (``capacity``: insufficient capacity), an instance's registration (``latency``: it takes
#: ``fault-latency`` longer).
RATED = (*FAILABLE_HOOKS, "capacity", "latency")


class Crash(BaseException):
    """The process "dies" at an armed crash point.

    A BaseException, like SystemExit, so that no ``except Exception`` in the core or in a
    controller survives it: the call stack unwinds to the test that armed the point.
    """


@dataclass(frozen=True)
class CapacityPattern:
    """Offerings without capacity: each part is a value or ``*`` for any."""

    instance_type: str = ANY
    zone: str = ANY
    capacity_type: str = ANY

    def matches(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return (
            self.instance_type in (ANY, instance_type)
            and self.zone in (ANY, zone)
            and self.capacity_type in (ANY, capacity_type)
        )

    def __str__(self) -> str:
        return f"{self.instance_type}/{self.zone}/{self.capacity_type}"


@dataclass
class Faults:
    """The faults in force. Mutate through the methods; :meth:`reset` clears everything."""

    insufficient_capacity: list[CapacityPattern] = field(default_factory=list)
    #: Most instances that may run at once (pending and running); None for no quota.
    instance_quota: int | None = None
    #: Hook name → how many of its next calls fail.
    api_errors: dict[str, int] = field(default_factory=dict)
    #: Added to every instance's registration delay.
    latency: timedelta = timedelta(0)
    #: Crash points armed by :meth:`crash_at`; each fires once.
    crashes: set[str] = field(default_factory=set)
    #: What fails at random (see :data:`RATED`) → the chance it does, from 0 to 1.
    rates: dict[str, float] = field(default_factory=dict)
    #: The draws behind ``rates``: seeded by the run's seed, so a chaos run can be repeated.
    chance: random.Random = field(default_factory=lambda: random.Random(_seed(0)))

    def reset(self) -> None:
        """Remove every fault."""
        self.insufficient_capacity.clear()
        self.instance_quota = None
        self.api_errors.clear()
        self.latency = timedelta(0)
        self.crashes.clear()
        self.rates.clear()

    # -- setting faults ---------------------------------------------------------------------

    def add_insufficient_capacity(
        self, instance_type: str = ANY, zone: str = ANY, capacity_type: str = ANY
    ) -> None:
        """Make matching offerings fail to launch (``capacity_type="spot"``: all spot)."""
        if capacity_type != ANY and capacity_type not in CAPACITY_TYPES:
            raise ValueError(
                f"capacity type {capacity_type!r} is not one of {', '.join(CAPACITY_TYPES)}"
            )
        self.insufficient_capacity.append(CapacityPattern(instance_type, zone, capacity_type))

    def fail_next(self, hook: str, count: int = 1) -> None:
        """Make the next ``count`` calls of ``hook`` raise TemporaryProviderError."""
        if hook not in FAILABLE_HOOKS:
            raise ValueError(f"hook {hook!r} cannot fail; choose from {', '.join(FAILABLE_HOOKS)}")
        if count < 0:
            raise ValueError(f"count must not be negative, got {count}")
        self.api_errors[hook] = self.api_errors.get(hook, 0) + count

    def crash_at(self, point: str) -> None:
        """Raise :class:`Crash` the next time the provider reaches ``point``."""
        if point not in CRASH_POINTS:
            raise ValueError(
                f"crash point {point!r} does not exist; choose from {', '.join(CRASH_POINTS)}"
            )
        self.crashes.add(point)

    # -- consulting faults ------------------------------------------------------------------

    def crash_point(self, point: str) -> None:
        """Raise :class:`Crash` if ``point`` is armed (and disarm it)."""
        if point in self.crashes:
            self.crashes.discard(point)
            raise Crash(f"kwok: crashed at {point}")

    def lacks_capacity(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return any(
            pattern.matches(instance_type, zone, capacity_type)
            for pattern in self.insufficient_capacity
        )

    def launch_lacks_capacity(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        """Whether the offering a launch tries has no capacity: a pattern, or the draw."""
        return self.lacks_capacity(instance_type, zone, capacity_type) or self._draw("capacity")

    def registration_latency(self) -> timedelta:
        """What to add to a new instance's registration delay (every one, or a drawn share)."""
        if "latency" not in self.rates:
            return self.latency
        return self.latency if self._draw("latency") else timedelta(0)

    def check_api(self, hook: str) -> None:
        """Raise TemporaryProviderError if a failure of ``hook`` is due; counts it down."""
        remaining = self.api_errors.get(hook, 0)
        if remaining <= 0:
            if self._draw(hook):
                raise TemporaryProviderError(
                    f"kwok: injected API error in {hook} (rate {self.rates[hook]:g})"
                )
            return
        self.api_errors[hook] = remaining - 1
        raise TemporaryProviderError(f"kwok: injected API error in {hook} ({remaining - 1} left)")

    def _draw(self, what: str) -> bool:
        rate = self.rates.get(what, 0.0)
        return rate > 0 and self.chance.random() < rate

    # -- options ----------------------------------------------------------------------------

    def configure(self, options: Mapping[str, str], seed: int = 0) -> None:
        """Replace the faults with those the provider options name; errors name the option.

        ``seed`` seeds the draws of ``fault-rate``: the same seed, the same faults.
        """
        self.reset()
        self.chance = random.Random(_seed(seed))
        if text := options.get(OPTION_RATE, "").strip():
            for item in _items(text):
                self._add_rate(item)
        if text := options.get(OPTION_INSUFFICIENT_CAPACITY, "").strip():
            for item in _items(text):
                self._add_pattern(item)
        if text := options.get(OPTION_INSTANCE_QUOTA, "").strip():
            try:
                quota = int(text)
            except ValueError:
                quota = -1
            if quota < 0:
                raise ValueError(
                    f"{OPTION_INSTANCE_QUOTA}: {text!r} is not a non-negative whole number"
                )
            self.instance_quota = quota
        if text := options.get(OPTION_API_ERRORS, "").strip():
            for item in _items(text):
                hook, _, count = item.partition("=")
                try:
                    self.fail_next(hook.strip(), int(count) if count.strip() else 1)
                except ValueError as error:
                    raise ValueError(
                        f"{OPTION_API_ERRORS}: {item!r}: {error} (expected e.g. 'launch=2,get')"
                    ) from error
        if text := options.get(OPTION_LATENCY, "").strip():
            try:
                self.latency = parse_duration(text)
            except DurationError as error:
                raise ValueError(f"{OPTION_LATENCY}: {error}") from error
        if "latency" in self.rates and not self.latency:
            raise ValueError(
                f"{OPTION_RATE}: 'latency' needs {OPTION_LATENCY}: how much longer the drawn "
                "instances take to register (e.g. kwok.fault-latency=2m)"
            )

    def _add_rate(self, item: str) -> None:
        what, sep, value = (part.strip() for part in item.partition(":"))
        expected = f"(expected e.g. 'launch:0.2,get:0.1'; one of {', '.join(RATED)})"
        if not sep or what not in RATED:
            raise ValueError(f"{OPTION_RATE}: {item!r}: not WHAT:RATE {expected}")
        try:
            rate = float(value)
        except ValueError:
            rate = -1.0
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"{OPTION_RATE}: {item!r}: the rate must be from 0 to 1")
        self.rates[what] = rate

    def _add_pattern(self, item: str) -> None:
        parts = [part.strip() or ANY for part in item.split("/")]
        if len(parts) == 1 and parts[0] in CAPACITY_TYPES:
            parts = [ANY, ANY, parts[0]]  # "spot": every spot offering
        if len(parts) != 3:
            raise ValueError(
                f"{OPTION_INSUFFICIENT_CAPACITY}: {item!r} must be 'spot', 'on-demand' or "
                "'<instance-type>/<zone>/<capacity-type>' with '*' for any"
            )
        try:
            self.add_insufficient_capacity(*parts)
        except ValueError as error:
            raise ValueError(f"{OPTION_INSUFFICIENT_CAPACITY}: {item!r}: {error}") from error


def _seed(seed: int) -> str:
    """The draws' seed: the run's seed, kept apart from anything else seeded by it."""
    return f"kwok-faults:{seed}"


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]
