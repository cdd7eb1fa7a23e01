"""The ReplicaSet controller: create or delete pods until the replica count is met."""

from __future__ import annotations

from nodewright.api.apps import ReplicaSet
from nodewright.api.core import Pod
from nodewright.cluster.memory import MemoryCluster
from nodewright.simulation.kubernetes.ownership import by_controller, pod_from_template
from nodewright.simulation.kubernetes.pods import is_active


class ReplicaSetController:
    """Keeps each ReplicaSet at ``spec.replicas`` live pods."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def reconcile(self) -> None:
        """Create or delete pods until each ReplicaSet has its replicas.

        Scaling down removes pods that are not on a node first, then pods not yet running,
        then the newest, as the ReplicaSet controller's ranking does.
        """
        replica_sets = list(self.cluster.peek(ReplicaSet))
        if not replica_sets:
            return
        owned = by_controller(self.cluster.peek(Pod))
        for rs in replica_sets:
            if rs.deleting:
                continue
            pods = [pod for pod in owned.get(rs.metadata.uid or "", []) if is_active(pod)]
            missing = rs.spec.replicas - len(pods)
            for _ in range(missing):
                self.cluster.create(
                    pod_from_template(rs.spec.template, rs, generate_name=f"{rs.name}-")
                )
            if missing < 0:
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
