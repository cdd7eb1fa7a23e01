"""What the lifecycle steps that reach the provider are built from."""

from __future__ import annotations

from nodewright.clock import Clock
from nodewright.cluster import Cluster
from nodewright.controllers.catalog import Catalog
from nodewright.controllers.events import EventRecorder
from nodewright.plugin.host import PluginHost


class ProviderStep:
    """A step of a NodeClaim's lifecycle that calls the provider (launch, registration,
    termination): the cluster, the plugin host, the NodeClass catalog, the clock and events."""

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        events: EventRecorder,
    ) -> None:
        self._cluster = cluster
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self._events = events
