"""Waiting for something a server does on its own time (an informer, a leader election, a
real control plane, a log line of ``nodewright run``): the polling helpers of the Kubernetes
tests."""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable
from typing import IO


def eventually(
    check: Callable[[], bool],
    what: str = "the condition",
    timeout: float = 5.0,
    every: float = 0.05,
) -> None:
    """Return as soon as ``check()`` holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        time.sleep(every)


class LogLines:
    """The lines a child process writes to ``stream`` (its stderr, say), read on a thread so a
    test can wait for one while the process runs."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lines: queue.Queue[str] = queue.Queue()
        self._seen: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._stream:
            self._lines.put(line)

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """The first line from now on that matches ``pattern`` (a regular expression); fail
        with every line seen so far after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self._seen.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no log line matching {pattern!r}; got:\n{''.join(self._seen)}")

    def close(self) -> list[str]:
        """Once the process has ended: stop reading, close the stream and return every line."""
        self._reader.join(10)
        self._stream.close()
        while not self._lines.empty():
            self._seen.append(self._lines.get())
        return self._seen
