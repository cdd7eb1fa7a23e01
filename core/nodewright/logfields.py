"""Structured log lines, as Karpenter v1 writes them.

Karpenter logs a short lower-case message (``found provisionable pod(s)``) and puts everything
else in keys (``Pods``, ``NodeClaim``, ``duration`` ...), which log pipelines and alerts match
on. A nodewright line that Karpenter also writes carries the same message and keys: the caller
passes them with ``extra=fields(...)``; the JSON formatter writes them as keys, the text and
simulate formatters as readable ``key=value`` pairs after the message.

Values follow Karpenter's encodings: an object reference is ``{"name": ..., "namespace": ...}``
(:func:`ref`), a list is shortened to a few items and "and N other(s)" (:func:`shortened`), a
duration is Go's ``time.Duration`` string (:func:`duration`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from datetime import timedelta

#: The attribute of a log record that holds its keys.
FIELDS = "nodewright_fields"

#: zap's level names, by Python level.
ZAP_LEVELS = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARN",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "FATAL",
}


def fields(values: Mapping[str, object] | None = None, /, **more: object) -> dict[str, object]:
    """``extra=`` for a logging call: these keys, in this order."""
    return {FIELDS: {**(values or {}), **more}}


def record_fields(record: logging.LogRecord) -> Mapping[str, object]:
    found = getattr(record, FIELDS, None)
    return found if isinstance(found, Mapping) else {}


def level_name(record: logging.LogRecord) -> str:
    """``WARN``, not ``WARNING``: zap's names, which Karpenter's logs carry."""
    return ZAP_LEVELS.get(record.levelno, record.levelname)


def ref(name: str, namespace: str | None = None) -> dict[str, str]:
    """An object reference as Karpenter logs one (``klog.KObj``)."""
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def shortened(items: Iterable[object], most: int = 5) -> str:
    """``a, b, c and 7 other(s)``: at most ``most`` items, as Karpenter lists pods and types."""
    listed = list(items)
    text = ", ".join(str(item) for item in listed[:most])
    if len(listed) > most:
        text += f" and {len(listed) - most} other(s)"
    return text


def duration(value: timedelta | float) -> str:
    """Go's ``time.Duration`` string: ``36.578541ms``, ``1m30s``, ``2h0m0s``, ``0s``."""
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_decimal(nanos, 1_000)}µs"
    if nanos < 1_000_000_000:
        return f"{sign}{_decimal(nanos, 1_000_000)}ms"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{_decimal(rest, 1_000_000_000)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{fraction:0{digits}d}".rstrip("0")


def as_text(values: Mapping[str, object]) -> str:
    """``key=value`` pairs for people: references by name, strings bare unless they hold
    spaces, anything else as compact JSON."""
    return " ".join(f"{key}={_readable(value)}" for key, value in values.items())


def _readable(value: object) -> str:
    if isinstance(value, Mapping) and set(value) <= {"name", "namespace"} and "name" in value:
        namespace = value.get("namespace")
        return f"{namespace}/{value['name']}" if namespace else str(value["name"])
    if isinstance(value, str):
        return json.dumps(value) if (" " in value or not value) else value
    return json.dumps(value, separators=(",", ":"), default=str)
