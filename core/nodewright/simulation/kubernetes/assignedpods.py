"""The pods bound to nodes, as the simulated kube-scheduler's topology checks read them, kept
from pass to pass.

Each scheduling pass that meets a pod with spreads or pod (anti-)affinity indexes where pods
run (:class:`~nodewright.simulation.kubernetes.podtopology.PodTopology`). Reading every pod of
the cluster for that, sorted, each pass cost what the cluster holds (20,000 pods in a large
simulation) however few pods changed; :class:`AssignedPods` follows the pod changes the
scheduler reads anyway, so a pass starts from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nodewright.api.core import Pod
from nodewright.cluster.state import Key, is_terminal
from nodewright.simulation.kubernetes.podtopology import AssignedPod, has_required_terms


class AssignedPods:
    """Every bound pod that has not finished (terminating ones included), by key."""

    def __init__(self, pods: Mapping[Key, Pod]) -> None:
        self._pods: dict[Key, AssignedPod] = {}
        #: those with required pod anti-affinity, and their nodes
        self._repelling: dict[Key, tuple[Pod, str]] = {}
        for key, pod in pods.items():
            self.update(key, pod)

    def update(self, key: Key, pod: Pod | None) -> None:
        """Follow the pod as it is now (None: deleted)."""
        node = pod.spec.node_name if pod is not None else None
        if pod is None or not node or is_terminal(pod):
            self._pods.pop(key, None)
            self._repelling.pop(key, None)
            return
        self._pods[key] = AssignedPod(pod.namespace, pod.metadata.labels, node, pod.deleting)
        if has_required_terms(pod, anti=True):
            self._repelling[key] = (pod, node)
        else:
            self._repelling.pop(key, None)

    def pods(self) -> Iterable[AssignedPod]:
        return self._pods.values()

    def repelling(self) -> Iterable[tuple[Pod, str]]:
        """The pods with required pod anti-affinity (they constrain every pending pod)."""
        return self._repelling.values()

    def any_repelling(self) -> bool:
        return bool(self._repelling)
