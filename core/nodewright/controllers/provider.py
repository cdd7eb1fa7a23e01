"""Gives providers their turn for background work (the KWOK provider registers its nodes
and plays kubelet here; cloud providers refresh caches or read interruption queues)."""

from __future__ import annotations

from datetime import timedelta

from nodewright.clock import Clock
from nodewright.cluster import Cluster, object_version
from nodewright.plugin.host import PluginHost


class ProviderBackgroundWork:
    name = "provider.reconcile"

    def __init__(self, host: PluginHost, clock: Clock, cluster: Cluster) -> None:
        self._host = host
        self._clock = clock
        self._cluster = cluster

    def reconcile(self) -> timedelta | None:
        return self._host.reconcile(self._clock.now(), lambda: object_version(self._cluster))

    def resync(self) -> None:
        """Nothing to do: providers decide what their background work looks at."""
