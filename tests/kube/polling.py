"""Waiting for something a server does on its own time (an informer, a leader election, a
real control plane): the one polling helper of the Kubernetes tests."""

from __future__ import annotations

import time
from collections.abc import Callable


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
