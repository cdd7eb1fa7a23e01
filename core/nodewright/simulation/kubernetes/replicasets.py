"""The ReplicaSet controller: create or delete pods until the replica count is met."""

from __future__ import annotations

from nodewright.api.apps import ReplicaSet
from nodewright.api.core import Pod
from nodewright.cluster.memory import MemoryCluster
from nodewright.simulation.kubernetes.ownerchanges import OwnerChanges
from nodewright.simulation.kubernetes.ownership import pod_from_template, replica_of
from nodewright.simulation.kubernetes.podcounts import OwnedPodCounts
from nodewright.simulation.kubernetes.pods import is_active


class ReplicaSetController:
    """Keeps each ReplicaSet at ``spec.replicas`` live pods.

    A pass looks only at ReplicaSets that changed, or whose pods did, since the last.
    """

    def __init__(self, cluster: MemoryCluster, pod_counts: OwnedPodCounts) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self.pod_counts = pod_counts
        self._changes = OwnerChanges(self.state, ReplicaSet, Pod)

    def reconcile(self) -> None:
        """Create or delete pods until each ReplicaSet has its replicas.

        Scaling down removes pods that are not on a node first, then pods not yet running,
        then the newest, as the ReplicaSet controller's ranking does.
        """
        for key in sorted(self._changes.affected()):
            rs = self.state.get(ReplicaSet, key)
            if rs is None or rs.deleting:
                continue
            uid = rs.metadata.uid or ""
            missing = rs.spec.replicas - self.pod_counts.of(uid).active
            if missing > 0:
                prototype = pod_from_template(rs.spec.template, rs, generate_name=f"{rs.name}-")
                for _ in range(missing):
                    self.cluster.adopt(replica_of(prototype))
            if missing > 0:
                self._changes.requeue(key)
            if missing < 0:
                pods = [
                    pod for pod in self.state.controlled_by(Pod, uid).values() if is_active(pod)
                ]
                for pod in sorted(pods, key=deletion_rank)[:-missing]:
                    self.cluster.delete(Pod, pod.name, pod.namespace)


def deletion_rank(pod: Pod) -> tuple[int, int, float, str]:
    """Sort key: the pod to delete first sorts first."""
    created = pod.metadata.creation_timestamp
    return (
        1 if pod.spec.node_name else 0,
        1 if pod.status.phase == "Running" else 0,
        -(created.timestamp() if created else 0.0),
        pod.name,
    )
