"""Controllers: reconcilers over the cluster port and the plugin host.

Each controller's :meth:`reconcile` takes what changed since its last pass (change feeds of
the cluster state, and its own requeue times), makes the cluster a step closer to the desired
state, and returns how long until it wants to run again. The runner
(:mod:`nodewright.operator`) calls every controller on each pass, so a controller with nothing
to do must return at once; now and then (:data:`~nodewright.controllers.workqueue.
RESYNC_PERIOD`), or when :meth:`resync` asks, it looks at every object anyway (its
:class:`~nodewright.controllers.workqueue.Resync` says when).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol


class Controller(Protocol):
    #: A short name used in logs (``provisioner``, ``nodeclaim.lifecycle`` ...).
    name: str

    def reconcile(self) -> timedelta | None:
        """Do one pass; return when to run again (None: only when something changes)."""
        ...

    def resync(self) -> None:
        """Look at every object on the next pass, not only what changed."""
        ...
