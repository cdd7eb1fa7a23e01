"""Workload status counts: ``replicas`` and ``readyReplicas`` of the pods each owns."""

from __future__ import annotations

from collections import defaultdict

from nodewright.api.apps import DaemonSet, Deployment, ReplicaSet, StatefulSet
from nodewright.api.core import Pod
from nodewright.cluster.memory import MemoryCluster, copy_object
from nodewright.simulation.kubernetes.ownership import by_controller, controller_uid
from nodewright.simulation.kubernetes.pods import is_active, is_ready


class WorkloadStatuses:
    """Writes each workload's counts, as its controller's status update would."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def reconcile(self) -> None:
        """``replicas``: live pods a workload owns; ``readyReplicas``: those running and ready.

        A Deployment adds up its ReplicaSets. Runs last, so it counts this pass's changes.
        """
        counts: dict[str, tuple[int, int]] = {}
        for uid, pods in by_controller(self.cluster.peek(Pod)).items():
            live = [pod for pod in pods if is_active(pod)]
            ready = sum(1 for pod in live if pod.status.phase == "Running" and is_ready(pod))
            counts[uid] = (len(live), ready)
        replica_sets = list(self.cluster.peek(ReplicaSet))
        owners: list[ReplicaSet | StatefulSet | DaemonSet] = [
            *replica_sets,
            *self.cluster.peek(StatefulSet),
            *self.cluster.peek(DaemonSet),
        ]
        for owner in owners:
            self._write_counts(owner, counts.get(owner.metadata.uid or "", (0, 0)))
        by_deployment: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for rs in replica_sets:
            owner_uid = controller_uid(rs)
            if owner_uid is not None:
                by_deployment[owner_uid].append(counts.get(rs.metadata.uid or "", (0, 0)))
        for deployment in list(self.cluster.peek(Deployment)):
            parts = by_deployment.get(deployment.metadata.uid or "", [])
            self._write_counts(deployment, (sum(n for n, _ in parts), sum(r for _, r in parts)))

    def _write_counts(
        self,
        owner: Deployment | ReplicaSet | StatefulSet | DaemonSet,
        counts: tuple[int, int],
    ) -> None:
        if (owner.status.replicas, owner.status.ready_replicas) == counts:
            return
        status = copy_object(owner)
        status.status.replicas, status.status.ready_replicas = counts
        self.cluster.update_status(status)
