"""Kubelets of static nodes: nodes nodewright did not launch and KWOK does not emulate.

Not to be confused with :mod:`nodewright.simulation.kubelet`, which registers the Nodes of
simulated cloud instances. A static node (a manifest in the scenario, or a Node a provider
registered without an emulator) has no kubelet of its own; this one starts the pods bound to
it. KWOK plays the kubelet of the nodes it manages (annotation ``kwok.x-k8s.io/node: fake``).
"""

from __future__ import annotations

from nodewright.api.core import Node, Pod
from nodewright.clock import Clock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import Key
from nodewright.simulation.kubernetes.pods import is_active, is_ready, set_pod_condition

#: Nodes the KWOK provider simulates carry this annotation; KWOK plays their kubelet.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


class StaticKubelets:
    """Marks pods bound to static nodes Running and Ready.

    A pass looks only at pods that changed, and at the pods of nodes that changed.
    """

    def __init__(self, cluster: MemoryCluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = cluster.state
        self._changes = self.state.feed(Node, Pod)
        self._started = False

    def reconcile(self) -> None:
        """Start pods on nodes KWOK does not simulate: Running and Ready once bound."""
        starting: list[Pod] = []
        for key in sorted(self._suspects()):
            pod = self.state.get(Pod, key)
            if pod is None or not pod.spec.node_name:
                continue
            node = self.state.get(Node, ("", pod.spec.node_name))
            if (
                node is not None
                and node.metadata.annotations.get(KWOK_NODE_ANNOTATION) != "fake"
                and is_active(pod)
                and (pod.status.phase != "Running" or not is_ready(pod))
            ):
                starting.append(pod)
        for pod in starting:
            started = mutable(pod)
            started.status.phase = "Running"
            started.status.start_time = started.status.start_time or self.clock.now()
            set_pod_condition(started, "Ready", "True", self.clock)
            self.cluster.update_status(started)

    def _suspects(self) -> set[Key]:
        changes = self._changes.drain()
        if not self._started:
            self._started = True
            return set(self.state.objects(Pod))
        suspects: set[Key] = set()
        for change in changes:
            if change.kind is Pod:
                if change.new is not None:
                    suspects.add(change.key)
            elif change.new is not None:
                suspects.update(self.state.pods_on(change.key[1]))
        return suspects
