"""How far a tune has got: on a terminal, one bar rewritten in place; elsewhere (a file, a CI
log), one line per finished variant."""

from __future__ import annotations

import time
from typing import TextIO

from nodewright.simulation.tune.worker import VariantResult

_CLEAR = "\r\x1b[K"
_BAR = 30


class TuneProgress:
    def __init__(self, total: int, stream: TextIO, terminal: bool) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self._stream = stream
        self._terminal = terminal
        self._started = time.monotonic()
        self._best: tuple[float, int] | None = None

    def update(self, result: VariantResult) -> None:
        self.done += 1
        if result.error is not None:
            self.failed += 1
        elif self._best is None or (result.dollar_hours, result.index) < self._best:
            self._best = (result.dollar_hours, result.index)
        if self._terminal:
            self._stream.write(_CLEAR + self.line())
        else:
            state = (
                "failed"
                if result.error is not None
                else f"${result.dollar_hours:.4f} over {result.seconds:.0f}s simulated"
            )
            self._stream.write(
                f"variant {result.index} finished ({self.done}/{self.total}): {state}, "
                f"{result.disruptions} disruption(s), {result.cpu_seconds:.1f}s CPU\n"
            )
        self._stream.flush()

    def line(self) -> str:
        filled = round(_BAR * self.done / self.total) if self.total else _BAR
        elapsed = int(time.monotonic() - self._started)
        best = f"  cheapest so far: variant {self._best[1]}" if self._best else ""
        failed = f", {self.failed} failed" if self.failed else ""
        return (
            f"tune [{'#' * filled}{'.' * (_BAR - filled)}] {self.done}/{self.total} variants"
            f"{failed}  {elapsed // 60}m{elapsed % 60:02d}s{best}"
        )

    def start(self) -> None:
        if self._terminal:
            self._stream.write(self.line())
            self._stream.flush()

    def finish(self) -> None:
        if self._terminal:
            self._stream.write(_CLEAR)
            self._stream.flush()
