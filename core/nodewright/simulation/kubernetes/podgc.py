"""Pod garbage collection: pods bound to nodes that no longer exist are deleted."""

from __future__ import annotations

from typing import cast

from nodewright.api.core import Node, Pod
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.state import Key


class PodGarbageCollector:
    """The kube-controller-manager's pod GC, for orphaned pods only.

    It keeps every bound pod's node (finished pods too, which the state's ``pods_on`` leaves
    out), so a deleted node names its pods without a walk over all pods.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self._changes = self.state.feed(Node, Pod)
        self._started = False
        #: node name -> keys of the pods bound to it, whatever their phase
        self._bound: dict[str, set[Key]] = {}

    def reconcile(self) -> None:
        """Delete pods bound to nodes that no longer exist; their owners replace them."""
        nodes = self.state.objects(Node)
        orphans: list[Pod] = []
        for key in sorted(self._suspects()):
            pod = self.state.get(Pod, key)
            if (
                pod is not None
                and pod.spec.node_name
                and ("", pod.spec.node_name) not in nodes
                and not pod.deleting
            ):
                orphans.append(pod)
        for pod in orphans:
            self.cluster.delete(Pod, pod.name, pod.namespace)

    def _suspects(self) -> set[Key]:
        """Pods that changed, and pods on nodes that went, since the last pass."""
        changes = self._changes.drain()
        if not self._started:
            self._started = True
            for key, pod in self.state.objects(Pod).items():
                self._track(key, None, pod)
            return {key for keys in self._bound.values() for key in keys}
        suspects: set[Key] = set()
        gone: list[str] = []
        for change in changes:
            if change.kind is Pod:
                self._track(
                    change.key, cast("Pod | None", change.old), cast("Pod | None", change.new)
                )
                if change.new is not None:
                    suspects.add(change.key)
            elif change.new is None:
                gone.append(change.key[1])
        for node_name in gone:
            suspects.update(self._bound.get(node_name, ()))
        return suspects

    def _track(self, key: Key, old: Pod | None, new: Pod | None) -> None:
        if old is not None and old.spec.node_name:
            keys = self._bound.get(old.spec.node_name)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._bound[old.spec.node_name]
        if new is not None and new.spec.node_name:
            self._bound.setdefault(new.spec.node_name, set()).add(key)
