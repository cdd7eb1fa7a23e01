"""Copies of API objects: how a reader of the shared cluster state gets one it may change.

Reads hand out the stored objects themselves (see :mod:`nodewright.cluster.state`); a controller
that wants to change one calls :func:`mutable` and writes the copy back.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import TypeVar

from pydantic import BaseModel

from nodewright.api.meta import copy_model

M = TypeVar("M", bound=BaseModel)


def mutable(obj: M) -> M:
    """A private copy of a shared object (or part of one), to change and write back."""
    return copy_model(obj)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while creating many objects.

    Copies and parsed objects create tens of thousands of small containers and no cycles; with
    a large heap, every collection the allocations trigger walks all of it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


#: Allocations between young-generation collections (CPython's default is 700).
COLLECTOR_THRESHOLD = 100_000


def tune_collector() -> None:
    """Collect young objects every 100,000 allocations instead of every 700.

    A controller holds hundreds of thousands of long-lived objects and makes short-lived ones
    by the million (copies, solver state), almost never in cycles; at the default rate the
    collector re-examines survivors so often that it costs about a fifth of the CPU of a large
    simulation. Called by the long-running commands (``simulate``, ``run``, ``tune``) and by
    each variant tune runs, in whatever process runs it.
    """
    _, middle, old = gc.get_threshold()
    gc.set_threshold(COLLECTOR_THRESHOLD, middle, old)
