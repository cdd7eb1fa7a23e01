"""What a pass reads that a pass can change, as one value to compare: the operator leaves out
a controller whose inputs are as it last saw them (in a simulation), and disruption repeats
only its due events while its inputs stand still."""

from __future__ import annotations

from nodewright.cluster import Cluster, object_version
from nodewright.controllers.capacitybuffer.virtualpods import VirtualPods
from nodewright.controllers.catalog import Catalog
from nodewright.plugin.host import PluginHost

#: Change counters of the cluster's objects (Events aside), the catalog, the providers'
#: background work and the capacity buffers' virtual pods.
PassInputs = tuple[int, int, int, int]


def pass_inputs(
    cluster: Cluster, catalog: Catalog, host: PluginHost, virtual_pods: VirtualPods | None
) -> PassInputs:
    """The counters of everything a controller reads that a pass can change (Events aside:
    nothing reads them)."""
    return (
        object_version(cluster),
        catalog.generation,
        host.work_done,
        virtual_pods.version if virtual_pods is not None else 0,
    )
