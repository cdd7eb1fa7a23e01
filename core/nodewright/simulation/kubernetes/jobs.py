"""The Job controller: ``parallelism`` pods at a time until ``completions`` succeed."""

from __future__ import annotations

from nodewright.api.apps import Job
from nodewright.api.core import Pod
from nodewright.cluster.memory import MemoryCluster
from nodewright.simulation.kubernetes.ownerchanges import OwnerChanges
from nodewright.simulation.kubernetes.ownership import pod_from_template
from nodewright.simulation.kubernetes.podcounts import OwnedPodCounts


class JobController:
    """Starts each Job's pods; finished pods stay (nothing here cleans up after a Job).

    A pass looks only at Jobs that changed, or whose pods did, since the last.
    """

    def __init__(self, cluster: MemoryCluster, pod_counts: OwnedPodCounts) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self.pod_counts = pod_counts
        self._changes = OwnerChanges(self.state, Job, Pod)

    def reconcile(self) -> None:
        """Keep ``parallelism`` pods running until ``completions`` pods have succeeded."""
        for key in sorted(self._changes.affected()):
            job = self.state.get(Job, key)
            if job is None or job.deleting:
                continue
            counts = self.pod_counts.of(job.metadata.uid or "")
            wanted = job.spec.parallelism
            if job.spec.completions is not None:
                wanted = min(wanted, max(0, job.spec.completions - counts.succeeded))
            for _ in range(wanted - counts.active):
                pod = pod_from_template(
                    job.spec.template,
                    job,
                    generate_name=f"{job.name}-",
                    labels={
                        "job-name": job.name,
                        "batch.kubernetes.io/job-name": job.name,
                        "batch.kubernetes.io/controller-uid": job.metadata.uid or "",
                    },
                )
                pod.spec.restart_policy = pod.spec.restart_policy or "Never"
                self.cluster.create(pod)
                self._changes.requeue(key)
