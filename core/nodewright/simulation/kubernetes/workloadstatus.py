"""Workload status counts: ``replicas`` and ``readyReplicas`` of the pods each owns."""

from __future__ import annotations

from nodewright.api.apps import DaemonSet, Deployment, ReplicaSet, StatefulSet
from nodewright.api.core import Pod
from nodewright.api.meta import KubeObject
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import Key
from nodewright.simulation.kubernetes.ownership import controller_key
from nodewright.simulation.kubernetes.podcounts import OwnedPodCounts

#: The owners whose counts come from their own pods, in the order they are written.
POD_OWNERS: tuple[type[ReplicaSet | StatefulSet | DaemonSet], ...] = (
    ReplicaSet,
    StatefulSet,
    DaemonSet,
)


class WorkloadStatuses:
    """Writes each workload's counts, as its controller's status update would.

    A pass looks only at workloads that changed, or whose pods (for a Deployment: whose
    ReplicaSets) did, since the last.
    """

    def __init__(self, cluster: MemoryCluster, pod_counts: OwnedPodCounts) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self.pod_counts = pod_counts
        self._changes = self.state.feed(*POD_OWNERS, Deployment, Pod)
        self._started = False

    def reconcile(self) -> None:
        """``replicas``: live pods a workload owns; ``readyReplicas``: those running and ready.

        A Deployment adds up its ReplicaSets. Runs last, so it counts this pass's changes.
        """
        affected = self._affected()
        for kind in POD_OWNERS:
            for key in sorted(affected[kind]):
                owner = self.state.get(kind, key)
                if owner is not None:
                    counts = self.pod_counts.of(owner.metadata.uid or "")
                    self._write_counts(owner, (counts.active, counts.ready))
        for key in sorted(affected[Deployment]):
            deployment = self.state.get(Deployment, key)
            if deployment is None:
                continue
            total = ready = 0
            owned = self.state.controlled_by(ReplicaSet, deployment.metadata.uid or "")
            for rs in owned.values():
                counts = self.pod_counts.of(rs.metadata.uid or "")
                total, ready = total + counts.active, ready + counts.ready
            self._write_counts(deployment, (total, ready))

    def _affected(self) -> dict[type[KubeObject], set[Key]]:
        changes = self._changes.drain()
        affected: dict[type[KubeObject], set[Key]] = {
            kind: set() for kind in (*POD_OWNERS, Deployment)
        }
        if not self._started:
            self._started = True
            for kind, keys in affected.items():
                keys.update(self.state.objects(kind))
            return affected
        for change in changes:
            if change.kind is Pod:
                for pod in (change.old, change.new):
                    if pod is not None:
                        for kind in POD_OWNERS:
                            owner = controller_key(pod, kind)
                            if owner is not None:
                                affected[kind].add(owner)
            else:
                affected[change.kind].add(change.key)
        for key in affected[ReplicaSet]:
            rs = self.state.get(ReplicaSet, key)
            deployment = None if rs is None else controller_key(rs, Deployment)
            if deployment is not None:
                affected[Deployment].add(deployment)
        for change in changes:
            if change.kind is ReplicaSet and change.old is not None:
                deployment = controller_key(change.old, Deployment)
                if deployment is not None:
                    affected[Deployment].add(deployment)
        return affected

    def _write_counts(
        self,
        owner: Deployment | ReplicaSet | StatefulSet | DaemonSet,
        counts: tuple[int, int],
    ) -> None:
        if (owner.status.replicas, owner.status.ready_replicas) == counts:
            return
        status = mutable(owner)
        status.status.replicas, status.status.ready_replicas = counts
        self.cluster.update_status(status)
