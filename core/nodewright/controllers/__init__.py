"""Controllers: level-triggered reconcilers over the cluster port and the plugin host.

Each controller's :meth:`reconcile` looks at the whole cluster, makes it a step closer to the
desired state, and returns how long until it wants to run again. The runner
(:mod:`nodewright.operator`) decides when to call it: after any change, and when that time
has come on the injected clock.
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
