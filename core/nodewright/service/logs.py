"""Log output of ``nodewright run``: JSON lines (Karpenter's keys) or text, with secrets
masked as a last line of defence (the adapter never logs credentials in the first place)."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TextIO

_SECRETS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"),
    re.compile(r"(?i)((?:token|password|secret|client[-_]?key)[\"']?\s*[:=]\s*[\"']?)[^\s,\"'}]+"),
)

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}


def redact(text: str) -> str:
    for pattern in _SECRETS:
        text = pattern.sub(r"\1[redacted]", text)
    return text


def _stamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class JSONFormatter(logging.Formatter):
    """``{"level":"INFO","time":"...","logger":"provisioner","message":"..."}`` per line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "level": record.levelname,
            "time": _stamp(record),
            "logger": record.name.removeprefix("nodewright."),
            "message": redact(record.getMessage()),
        }
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            entry["error"] = redact(f"{type(error).__name__}: {error}")
            entry["stacktrace"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """``TIME LEVEL logger message``, as ``nodewright simulate`` prints."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_stamp(record)}\t{record.levelname}\t{record.name.removeprefix('nodewright.')}"
        line += f"\t{record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line += f": {type(error).__name__}: {error}"
        return redact(line)


def _handler(path: str) -> logging.Handler:
    """``stdout``, ``stderr`` or a file (appended to), as Karpenter's LOG_OUTPUT_PATHS."""
    if path == "stdout":
        return logging.StreamHandler(sys.stdout)
    if path == "stderr":
        return logging.StreamHandler(sys.stderr)
    return logging.FileHandler(path, encoding="utf-8")


def configure(
    level: str,
    format: str,
    stream: TextIO | None = None,
    output_paths: Sequence[str] = ("stderr",),
) -> None:
    """Log at ``level`` in ``format`` to ``stream``, else to each of ``output_paths``; a file
    that cannot be opened raises OSError before anything changes."""
    handlers: list[logging.Handler] = [logging.StreamHandler(stream)] if stream else []
    try:
        for path in () if stream else output_paths:
            handlers.append(_handler(path))
    except OSError:
        for handler in handlers:
            handler.close()
        raise
    for handler in handlers:
        handler.setFormatter(JSONFormatter() if format == "json" else TextFormatter())
    root = logging.getLogger("nodewright")
    root.handlers[:] = handlers
    root.setLevel(LEVELS.get(level, logging.INFO))
    root.propagate = False
