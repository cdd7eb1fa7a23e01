"""The fence: until when this process may act on the cluster and its cloud.

With leader election, a replica may write to the API server and call its cloud provider only
while its Lease is known to be its own: from the start of a successful renewal until the renew
deadline after it. Another replica takes the Lease only a full lease duration after it last saw
it renewed, and the renew deadline is shorter than that, so a leader cut off from the API
server stops acting before anyone else may start. The elector opens the fence after each
renewal; the Kubernetes adapter checks it before every write (and caps the write's timeout at
what is left), the plugin host before every provider call. Without leader election the fence
stays open.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from nodewright.cluster import ClusterError


class NotLeaderError(ClusterError):
    """This process may not act now: it does not hold the leader Lease, or could not renew it
    within the renew deadline."""


class Fence:
    def __init__(self, *, open_: bool = True, monotonic: Callable[[], float] = time.monotonic):
        self._monotonic = monotonic
        self._until = math.inf if open_ else -math.inf
        self._lock = threading.Lock()

    def open_until(self, until: float) -> None:
        """Allow acting until ``until`` (this process's monotonic clock)."""
        with self._lock:
            self._until = until

    def close(self) -> None:
        with self._lock:
            self._until = -math.inf

    def remaining(self) -> float:
        """Seconds this process may still act (``inf`` when unfenced, <= 0 when fenced)."""
        with self._lock:
            until = self._until
        return until - self._monotonic()

    def check(self, what: str) -> float:
        """The seconds left; raises :class:`NotLeaderError` naming ``what`` when none are."""
        left = self.remaining()
        if left <= 0:
            raise NotLeaderError(f"{what}: not done, this replica is not leading")
        return left
