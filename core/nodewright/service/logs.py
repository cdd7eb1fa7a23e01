"""Log lines of the commands: ``nodewright run`` writes JSON lines as Karpenter v1 writes them,
or text; ``nodewright simulate`` writes the same text lines stamped with the simulated clock.
Both mask secrets as a last line of defence (the adapter never logs credentials in the first
place).

A JSON line has zap's level name (``WARN``, not ``WARNING``), the time, the logger (``controller``
while a controller's pass runs, as controller-runtime names Karpenter's), the message, the
``controller`` key, and then the line's own keys (:mod:`nodewright.logfields`). A text line puts
the same keys after the message as ``key=value``.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TextIO

from nodewright import metrics
from nodewright.clock import Clock
from nodewright.logfields import as_text, level_name, record_fields

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


#: Keys of log lines measured on the wall clock, which a simulation's lines leave out: its
#: output must not differ from run to run.
WALL_CLOCK_KEYS = frozenset({"duration"})


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _created(record: logging.LogRecord) -> str:
    return _stamp(datetime.fromtimestamp(record.created, UTC))


class JSONFormatter(logging.Formatter):
    """``{"level":"INFO","time":"...","logger":"controller","message":"found provisionable
    pod(s)","controller":"provisioner","Pods":"...","duration":"..."}`` per line."""

    def format(self, record: logging.LogRecord) -> str:
        controller = metrics.current_controller.get()
        entry: dict[str, object] = {
            "level": level_name(record),
            "time": _created(record),
            "logger": "controller" if controller else record.name.removeprefix("nodewright."),
            "message": record.getMessage(),
        }
        if controller:
            entry["controller"] = controller
        entry.update(record_fields(record))
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            entry["error"] = f"{type(error).__name__}: {error}"
            entry["stacktrace"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, separators=(",", ":"), default=str))


class TextFormatter(logging.Formatter):
    """``TIME LEVEL logger message key=value ...``.

    ``nodewright run``'s lines are stamped with the time they were logged; a simulation's
    (:meth:`simulated`) with its clock, without the wall-clock keys, and with the traceback of
    a logged exception when ``verbose``. Both are masked: a simulation reads the same
    manifests and plugins a cluster does, so a secret can reach its lines too.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        left_out: frozenset[str] = frozenset(),
        tracebacks: bool = False,
    ) -> None:
        super().__init__()
        self._clock = clock
        self._left_out = left_out
        self._tracebacks = tracebacks

    @classmethod
    def simulated(cls, clock: Clock, verbose: bool = False) -> TextFormatter:
        """The lines ``nodewright simulate`` prints."""
        return cls(clock, left_out=WALL_CLOCK_KEYS, tracebacks=verbose)

    def format(self, record: logging.LogRecord) -> str:
        stamp = _created(record) if self._clock is None else _stamp(self._clock.now())
        line = f"{stamp}\t{level_name(record)}\t{record.name.removeprefix('nodewright.')}"
        line += f"\t{record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line += f": {type(error).__name__}: {error}"
        values = {k: v for k, v in record_fields(record).items() if k not in self._left_out}
        if values:
            line += f"\t{as_text(values)}"
        if self._tracebacks and record.exc_info and record.exc_info[1] is not None:
            line += "\n" + self.formatException(record.exc_info)
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
