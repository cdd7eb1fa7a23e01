"""Disruption-budget schedules: parsing, next hit, and whether a budget window is open."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nodewright.api.cron import CronError, parse_cron


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        ("@hourly", "2025-03-10T10:15:00", "2025-03-10T11:00:00"),
        ("@daily", "2025-03-10T10:15:00", "2025-03-11T00:00:00"),
        ("@midnight", "2025-03-10T23:59:59", "2025-03-11T00:00:00"),
        ("@weekly", "2025-03-10T10:15:00", "2025-03-16T00:00:00"),  # next Sunday
        ("@monthly", "2025-03-10T10:15:00", "2025-04-01T00:00:00"),
        ("@yearly", "2025-03-10T10:15:00", "2026-01-01T00:00:00"),
        ("@annually", "2025-03-10T10:15:00", "2026-01-01T00:00:00"),
        ("0 9 * * mon-fri", "2025-03-14T09:00:00", "2025-03-17T09:00:00"),  # Fri -> Mon
        ("*/15 * * * *", "2025-03-10T10:16:00", "2025-03-10T10:30:00"),
        ("5/20 * * * *", "2025-03-10T10:26:00", "2025-03-10T10:45:00"),
        ("0 0 29 2 *", "2025-03-01T00:00:00", "2028-02-29T00:00:00"),
        ("30 2 1,15 JAN-MAR ?", "2025-03-02T00:00:00", "2025-03-15T02:30:00"),
        # both day fields restricted: either may match
        ("0 0 13 * fri", "2025-03-10T00:00:00", "2025-03-13T00:00:00"),
        ("0 0 13 * fri", "2025-03-13T00:00:00", "2025-03-14T00:00:00"),
        # a day field that is '*' means both must match
        ("0 0 * * sun", "2025-03-10T00:00:00", "2025-03-16T00:00:00"),
    ],
)
def test_next_hit(schedule: str, after: str, expected: str) -> None:
    assert parse_cron(schedule).next_after(at(after)) == at(expected)


def test_next_hit_is_strictly_after_the_moment() -> None:
    assert parse_cron("0 * * * *").next_after(at("2025-03-10T10:00:00")) == at(
        "2025-03-10T11:00:00"
    )


def test_schedule_that_never_fires_has_no_next_hit() -> None:
    assert parse_cron("0 0 30 2 *").next_after(at("2025-01-01T00:00:00")) is None


def test_naive_datetimes_are_read_as_utc() -> None:
    assert parse_cron("@daily").next_after(datetime(2025, 3, 10, 12)) == at("2025-03-11T00:00:00")


def test_budget_window_is_open_for_its_duration_after_each_hit() -> None:
    business_hours = parse_cron("0 9 * * 1-5")
    window = timedelta(hours=8)
    assert business_hours.is_active(at("2025-03-10T09:00:00"), window)  # Monday 09:00
    assert business_hours.is_active(at("2025-03-10T16:59:00"), window)
    assert not business_hours.is_active(at("2025-03-10T17:00:00"), window)  # window is [9, 17)
    assert not business_hours.is_active(at("2025-03-10T08:59:00"), window)
    assert not business_hours.is_active(at("2025-03-15T10:00:00"), window)  # Saturday


@pytest.mark.parametrize(
    ("schedule", "words"),
    [
        ("0 9 * *", "expected 5 fields"),
        ("0 9 * * * *", "got 6"),
        ("60 * * * *", "minute"),
        ("0 24 * * *", "hour"),
        ("0 0 0 * *", "day of month"),
        ("0 0 * 13 *", "month"),
        ("0 0 * * 7", "day of week"),
        ("0 0 * * funday", "day of week"),
        ("5-1 * * * *", "range starts after it ends"),
        ("*/0 * * * *", "step must be a positive number"),
        ("*/x * * * *", "step"),
        ("1-2-3 * * * *", "more than one '-'"),
        ("@every 5m", "unknown descriptor"),
        ("@Daily", "unknown descriptor"),
        ("TZ=Europe/Paris 0 9 * * *", "time zones"),
        ("", "expected 5 fields"),
    ],
)
def test_invalid_schedules(schedule: str, words: str) -> None:
    with pytest.raises(CronError, match=words):
        parse_cron(schedule)
