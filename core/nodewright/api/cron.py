"""Cron schedules for disruption budgets, read the way Karpenter reads them.

Karpenter parses ``budgets[].schedule`` with robfig/cron's standard parser in UTC: five fields
(minute, hour, day of month, month, day of week) or one of the ``@yearly``-style descriptors.
Fields take ``*``/``?``, numbers, month and weekday names, ranges ``a-b``, steps ``/n`` and
comma lists. As in classic cron, when both day fields are restricted a day matches if *either*
matches; when one of them is ``*`` both must match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

#: Descriptors the NodePool CRD accepts, with the five-field schedule each stands for.
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_WEEKDAYS = {
    name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
}
_NUMBER = re.compile(r"[0-9]+")
#: robfig/cron gives up looking for the next hit after five years.
_SEARCH_YEARS = 5


class CronError(ValueError):
    """A string that is not a schedule Karpenter would accept."""


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    low: int
    high: int
    names: dict[str, int]


_FIELDS = (
    _FieldSpec("minute", 0, 59, {}),
    _FieldSpec("hour", 0, 23, {}),
    _FieldSpec("day of month", 1, 31, {}),
    _FieldSpec("month", 1, 12, _MONTHS),
    _FieldSpec("day of week", 0, 6, _WEEKDAYS),
)


@dataclass(frozen=True)
class CronSchedule:
    """A parsed schedule: the allowed values of each field, in UTC."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]  # 0 = Sunday
    day_of_month_is_star: bool
    day_of_week_is_star: bool

    def matches_day(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days_of_month
        dow = (day.isoweekday() % 7) in self.days_of_week
        if self.day_of_month_is_star or self.day_of_week_is_star:
            return dom and dow
        return dom or dow

    def matches(self, moment: datetime) -> bool:
        moment = _utc(moment)
        return (
            self.matches_day(moment) and moment.hour in self.hours and moment.minute in self.minutes
        )

    def next_after(self, moment: datetime) -> datetime | None:
        """The first minute boundary strictly after ``moment`` that the schedule hits.

        ``None`` when nothing matches within five years (e.g. ``0 0 30 2 *``).
        """
        start = _utc(moment).replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.replace(hour=0, minute=0)
        limit = day + timedelta(days=366 * _SEARCH_YEARS)
        while day < limit:
            if self.matches_day(day):
                for hour in sorted(self.hours):
                    for minute in sorted(self.minutes):
                        candidate = day.replace(hour=hour, minute=minute)
                        if candidate >= start:
                            return candidate
            day += timedelta(days=1)
        return None

    def is_active(self, now: datetime, duration: timedelta) -> bool:
        """Whether a budget window of ``duration`` opened by this schedule contains ``now``.

        Karpenter walks back ``duration`` from now and asks for the next hit: the window is
        open when that hit is not later than now.
        """
        now = _utc(now)
        hit = self.next_after(now - duration)
        return hit is not None and hit <= now


def parse_cron(text: str) -> CronSchedule:
    """Parse a five-field schedule or a descriptor such as ``@daily``."""
    stripped = text.strip()
    if stripped.startswith("@"):
        expanded = DESCRIPTORS.get(stripped)
        if expanded is None:
            raise CronError(
                f"unknown descriptor {stripped!r}; expected one of {', '.join(DESCRIPTORS)}"
            )
        fields = expanded.split()
    else:
        fields = stripped.split()
        if stripped.upper().startswith(("TZ=", "CRON_TZ=")):
            raise CronError("time zones are not supported; schedules are always UTC")
        if len(fields) != len(_FIELDS):
            raise CronError(
                f"expected 5 fields (minute hour day-of-month month day-of-week), "
                f"got {len(fields)} in {text!r}"
            )
    parsed = [_parse_field(field, spec) for field, spec in zip(fields, _FIELDS, strict=True)]
    return CronSchedule(
        text=text,
        minutes=parsed[0][0],
        hours=parsed[1][0],
        days_of_month=parsed[2][0],
        months=parsed[3][0],
        days_of_week=parsed[4][0],
        day_of_month_is_star=parsed[2][1],
        day_of_week_is_star=parsed[4][1],
    )


def _parse_field(text: str, spec: _FieldSpec) -> tuple[frozenset[int], bool]:
    values: set[int] = set()
    star = False
    for part in text.split(","):
        part_values, part_star = _parse_range(part, spec)
        values |= part_values
        star = star or part_star
    return frozenset(values), star


def _parse_range(text: str, spec: _FieldSpec) -> tuple[set[int], bool]:
    range_text, slash, step_text = text.partition("/")
    if "/" in step_text:
        raise CronError(f"{spec.name} {text!r} has more than one '/'")
    bounds = range_text.split("-")
    star = False
    if bounds[0] in ("*", "?"):
        if len(bounds) != 1:
            raise CronError(f"{spec.name} {text!r}: '*' cannot start a range")
        low, high = spec.low, spec.high
        star = True
    elif len(bounds) == 1:
        low = high = _parse_value(bounds[0], spec)
    elif len(bounds) == 2:
        low, high = _parse_value(bounds[0], spec), _parse_value(bounds[1], spec)
    else:
        raise CronError(f"{spec.name} {text!r} has more than one '-'")
    step = 1
    if slash:
        if not _NUMBER.fullmatch(step_text):
            raise CronError(f"{spec.name} step {step_text!r} is not a number")
        step = int(step_text)
        if len(bounds) == 1 and not star:
            high = spec.high  # "5/15" means "5-max/15"
        if step > 1:
            star = False
    if low < spec.low or high > spec.high:
        raise CronError(f"{spec.name} {text!r} is out of range; expected {spec.low} to {spec.high}")
    if low > high:
        raise CronError(f"{spec.name} {text!r}: range starts after it ends")
    if step == 0:
        raise CronError(f"{spec.name} {text!r}: step must be a positive number")
    return set(range(low, high + 1, step)), star


def _parse_value(text: str, spec: _FieldSpec) -> int:
    named = spec.names.get(text.lower())
    if named is not None:
        return named
    if not _NUMBER.fullmatch(text):
        raise CronError(f"{spec.name} {text!r} is not a number" + _names_hint(spec))
    return int(text)


def _names_hint(spec: _FieldSpec) -> str:
    if not spec.names:
        return ""
    return f" or one of {', '.join(name.upper() for name in spec.names)}"


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
