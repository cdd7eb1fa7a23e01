"""Kubelets of static nodes: nodes nodewright did not launch and KWOK does not emulate.

Not to be confused with :mod:`nodewright.simulation.kubelet`, which registers the Nodes of
simulated cloud instances. A static node (a manifest in the scenario, or a Node a provider
registered without an emulator) has no kubelet of its own; this one starts the pods bound to
it. KWOK plays the kubelet of the nodes it manages (annotation ``kwok.x-k8s.io/node: fake``).
"""

from __future__ import annotations

from nodewright.api.core import Node, Pod
from nodewright.clock import Clock
from nodewright.cluster.memory import MemoryCluster, copy_object
from nodewright.simulation.kubernetes.pods import is_active, is_ready, set_pod_condition

#: Nodes the KWOK provider simulates carry this annotation; KWOK plays their kubelet.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


class StaticKubelets:
    """Marks pods bound to static nodes Running and Ready."""

    def __init__(self, cluster: MemoryCluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock

    def reconcile(self) -> None:
        """Start pods on nodes KWOK does not simulate: Running and Ready once bound."""
        static = {
            node.name
            for node in self.cluster.peek(Node)
            if node.metadata.annotations.get(KWOK_NODE_ANNOTATION) != "fake"
        }
        starting = [
            pod
            for pod in self.cluster.peek(Pod)
            if pod.spec.node_name in static
            and is_active(pod)
            and (pod.status.phase != "Running" or not is_ready(pod))
        ]
        for pod in starting:
            started = copy_object(pod)
            started.status.phase = "Running"
            started.status.start_time = started.status.start_time or self.clock.now()
            set_pod_condition(started, "Ready", "True", self.clock)
            self.cluster.update_status(started)
