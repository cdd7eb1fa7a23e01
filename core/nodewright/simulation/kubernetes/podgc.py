"""Pod garbage collection: pods bound to nodes that no longer exist are deleted."""

from __future__ import annotations

from nodewright.api.core import Node, Pod
from nodewright.cluster.memory import MemoryCluster


class PodGarbageCollector:
    """The kube-controller-manager's pod GC, for orphaned pods only."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def reconcile(self) -> None:
        """Delete pods bound to nodes that no longer exist; their owners replace them."""
        nodes = {node.name for node in self.cluster.peek(Node)}
        orphans = [
            pod
            for pod in self.cluster.peek(Pod)
            if pod.spec.node_name and pod.spec.node_name not in nodes and not pod.deleting
        ]
        for pod in orphans:
            self.cluster.delete(Pod, pod.name, pod.namespace)
