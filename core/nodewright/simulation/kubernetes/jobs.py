"""The Job controller: ``parallelism`` pods at a time until ``completions`` succeed."""

from __future__ import annotations

from nodewright.api.apps import Job
from nodewright.api.core import Pod
from nodewright.cluster.memory import MemoryCluster
from nodewright.simulation.kubernetes.ownership import by_controller, pod_from_template
from nodewright.simulation.kubernetes.pods import is_active


class JobController:
    """Starts each Job's pods; finished pods stay (nothing here cleans up after a Job)."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def reconcile(self) -> None:
        """Keep ``parallelism`` pods running until ``completions`` pods have succeeded."""
        jobs = list(self.cluster.peek(Job))
        if not jobs:
            return
        owned = by_controller(self.cluster.peek(Pod))
        for job in jobs:
            if job.deleting:
                continue
            pods = owned.get(job.metadata.uid or "", [])
            active = sum(1 for pod in pods if is_active(pod))
            succeeded = sum(1 for pod in pods if pod.status.phase == "Succeeded")
            wanted = job.spec.parallelism
            if job.spec.completions is not None:
                wanted = min(wanted, max(0, job.spec.completions - succeeded))
            for _ in range(wanted - active):
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
