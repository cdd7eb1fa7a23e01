"""Go-style duration strings (``"720h"``, ``"1m30s"``) and Karpenter's ``"Never"``."""

from __future__ import annotations

import re
from datetime import timedelta

_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
NEVER = "Never"
#: The longest duration Go (and so Karpenter) can hold: 2^63 - 1 nanoseconds, about 292 years.
MAX_SECONDS = (2**63 - 1) / 1e9


class DurationError(ValueError):
    """A string that is not a duration."""


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration such as ``"1h30m"`` or ``"0s"``."""
    stripped = text.strip()
    if stripped in ("0", ""):
        if stripped == "0":
            return timedelta(0)
        raise DurationError("empty duration")
    position = 0
    seconds = 0.0
    for match in _PART.finditer(stripped):
        if match.start() != position:
            break
        seconds += float(match[1]) * _UNIT[match[2]]
        position = match.end()
    shown = repr(text) if len(text) <= 40 else f"{text[:37]!r}..."
    if position != len(stripped):
        raise DurationError(f"{shown} is not a duration (expected forms like '30s', '5m', '720h')")
    if not seconds <= MAX_SECONDS:  # also catches inf and nan
        raise DurationError(f"{shown} is out of range (at most about 292 years)")
    return timedelta(seconds=seconds)


def parse_optional_duration(text: str) -> timedelta | None:
    """Parse a duration where ``"Never"`` means no limit (returned as ``None``)."""
    if text.strip() == NEVER:
        return None
    return parse_duration(text)


def format_duration(delta: timedelta) -> str:
    """Render a timedelta as a compact Go-style duration."""
    total = int(delta.total_seconds())
    if total == 0:
        return "0s"
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if seconds:
        parts.append(f"{seconds}s")
    return "".join(parts)
