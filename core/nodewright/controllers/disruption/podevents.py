"""What ``status.lastPodEventTime`` watches on each node, kept current from pod changes.

A NodeClaim's pod events are the pods bound to its node coming, going, finishing or starting
to terminate (Karpenter's ``nodeclaim.podevents``). DaemonSet pods do not count; finished pods
do, until they are deleted. The index holds one small entry per such pod, so the NodeClaims
whose pods changed are found from the change itself, without looking at every pod.
"""

from __future__ import annotations

from collections.abc import Iterable

from nodewright.api.core import Pod
from nodewright.cluster.state import Key, object_key
from nodewright.controllers.state.cluster import is_terminal, owner_kind

#: (uid, finished, terminating) of one pod.
PodEntry = tuple[str, bool, bool]
#: Every entry of one node's pods: what a pod event changes.
PodState = frozenset[PodEntry]

_NOTHING: PodState = frozenset()


def _entry(pod: Pod) -> tuple[str, PodEntry] | None:
    """(node name, entry) for a pod that counts, None for one that does not."""
    if not pod.spec.node_name or owner_kind(pod) == "DaemonSet":
        return None
    return pod.spec.node_name, (pod.metadata.uid or pod.key, is_terminal(pod), pod.deleting)


class PodEvents:
    """Node name → the entries of the pods bound to it that count for pod events."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[Key, PodEntry]] = {}

    def rebuild(self, pods: Iterable[Pod]) -> set[str]:
        """Start over from ``pods``; return the nodes whose state differs from before."""
        before = self._by_node
        self._by_node = {}
        for pod in pods:
            self._add(object_key(pod), pod)
        return {
            node
            for node in before.keys() | self._by_node.keys()
            if before.get(node) != self._by_node.get(node)
        }

    def change(self, key: Key, old: Pod | None, new: Pod | None) -> set[str]:
        """Apply one pod's change; return the nodes whose state it changed."""
        was = _entry(old) if old is not None else None
        now = _entry(new) if new is not None else None
        if was == now:
            return set()
        touched = set()
        if was is not None:
            pods = self._by_node.get(was[0])
            if pods is not None and pods.pop(key, None) is not None:
                touched.add(was[0])
                if not pods:
                    del self._by_node[was[0]]
        if new is not None and self._add(key, new):
            touched.add(new.spec.node_name or "")
        return touched

    def state(self, node_name: str) -> PodState:
        pods = self._by_node.get(node_name)
        return frozenset(pods.values()) if pods else _NOTHING

    def _add(self, key: Key, pod: Pod) -> bool:
        found = _entry(pod)
        if found is None:
            return False
        self._by_node.setdefault(found[0], {})[key] = found[1]
        return True
