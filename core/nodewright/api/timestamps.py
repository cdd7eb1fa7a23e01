"""RFC 3339 timestamps as Kubernetes writes them in annotations (``2026-01-01T00:00:00Z``)."""

from __future__ import annotations

from datetime import UTC, datetime


def format_timestamp(instant: datetime) -> str:
    """RFC 3339 in UTC with seconds, as Kubernetes writes timestamps."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime:
    """Read an RFC 3339 timestamp (``2026-01-01T00:00:00Z``); raises ValueError."""
    parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no time zone")
    return parsed
