"""One line that tells a person watching a long simulation where it is.

On a terminal, ``nodewright simulate`` keeps a single status line at the bottom (simulated
time, pods bound and pending, nodes, $/h) and rewrites it in place; log lines are printed
above it. When the output is not a terminal nothing is drawn, so files and pipes get exactly
the log lines.
"""

from __future__ import annotations

import logging
import time
from typing import TextIO

from nodewright.api.core import Node
from nodewright.clock import SIMULATION_EPOCH
from nodewright.simulation.runner import Simulation

#: The line is redrawn at most this often (seconds of wall time).
REDRAW_INTERVAL = 0.2
_CLEAR = "\r\x1b[K"


class ProgressLine:
    """The status line of a running simulation, drawn on ``stream`` (a terminal)."""

    def __init__(self, simulation: Simulation, stream: TextIO) -> None:
        self._simulation = simulation
        self._stream = stream
        self._shown = ""
        self._drawn_at = 0.0

    def text(self) -> str:
        simulation = self._simulation
        state = simulation.cluster.state
        pending = len(state.unbound_pods())
        bound = sum(len(pods) for pods in state.nodes_with_pods().values())
        price = sum(
            record.price_per_hour or 0.0
            for record in simulation.operator.disruption.history.records.values()
            if record.removed_at is None
        )
        elapsed = int((simulation.clock.now() - SIMULATION_EPOCH).total_seconds())
        hours, rest = divmod(elapsed, 3600)
        return (
            f"simulated {hours:02d}:{rest // 60:02d}:{rest % 60:02d}  pods {bound} bound, "
            f"{pending} pending  nodes {state.count(Node)}  ${price:.4f}/h"
        )

    def update(self) -> None:
        """Redraw the line if it is time to (called after every simulated step)."""
        now = time.monotonic()
        if now - self._drawn_at < REDRAW_INTERVAL:
            return
        self._drawn_at = now
        self._shown = self.text()
        self._stream.write(_CLEAR + self._shown)
        self._stream.flush()

    def clear(self) -> None:
        """Take the line off the screen (before a log line is printed)."""
        if self._shown:
            self._stream.write(_CLEAR)
            self._stream.flush()

    def restore(self) -> None:
        """Put the line back after a log line."""
        if self._shown:
            self._stream.write(self._shown)
            self._stream.flush()

    def finish(self) -> None:
        """Remove the line for good (the run ended)."""
        self.clear()
        self._shown = ""


class ProgressAwareHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A log handler that prints its lines above the progress line instead of through it."""

    def __init__(self, stream: TextIO, progress: ProgressLine) -> None:
        super().__init__(stream)
        self._progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        self._progress.clear()
        super().emit(record)
        self._progress.restore()
