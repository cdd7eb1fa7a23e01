"""The embedded Kubernetes: every controller and the scheduler, run in a fixed order."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.core import TopologySpreadConstraint
from nodewright.clock import Clock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import collector_paused
from nodewright.simulation.kubernetes.daemonsets import DaemonSetController
from nodewright.simulation.kubernetes.deployments import DeploymentController
from nodewright.simulation.kubernetes.devices import ResourceClaimController
from nodewright.simulation.kubernetes.jobs import JobController
from nodewright.simulation.kubernetes.podcounts import OwnedPodCounts
from nodewright.simulation.kubernetes.podgc import PodGarbageCollector
from nodewright.simulation.kubernetes.replicasets import ReplicaSetController
from nodewright.simulation.kubernetes.revisions import Revisions
from nodewright.simulation.kubernetes.scheduler import KubeScheduler
from nodewright.simulation.kubernetes.statefulsets import StatefulSetController
from nodewright.simulation.kubernetes.statickubelets import StaticKubelets
from nodewright.simulation.kubernetes.volumes import VolumeControllers
from nodewright.simulation.kubernetes.workloadstatus import WorkloadStatuses


class EmbeddedKubernetes:
    """Kubernetes' own controllers and scheduler for a simulated cluster.

    :meth:`reconcile` runs one pass of every controller in a fixed order: pod garbage
    collection, Deployment, ReplicaSet, StatefulSet, Job, DaemonSet, generic ephemeral volume
    claims, immediate volume binding, ResourceClaims for pods' claim templates (and released
    when their pods go), the scheduler (which provisions WaitForFirstConsumer
    volumes as it binds), the kubelet of static nodes, WaitForFirstConsumer binding for pods
    that reached a node without the scheduler, and last the workloads' status counts. Pods
    created by a controller get their first scheduling attempt in the same pass.

    Each part reads the cluster's shared state and drains its own change feed, so a pass costs
    what changed since the last one, not the size of the cluster; the first pass looks at
    everything.
    """

    def __init__(
        self,
        cluster: MemoryCluster,
        clock: Clock,
        default_spread: Sequence[TopologySpreadConstraint] = (),
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        pod_counts = OwnedPodCounts(cluster.state)
        self.pod_gc = PodGarbageCollector(cluster)
        self.deployments = DeploymentController(cluster)
        self.replica_sets = ReplicaSetController(cluster, pod_counts)
        #: The revision labels of StatefulSet and DaemonSet pods (a snapshot's kept).
        self.revisions = Revisions()
        self.stateful_sets = StatefulSetController(cluster, self.revisions)
        self.jobs = JobController(cluster, pod_counts)
        self.daemon_sets = DaemonSetController(cluster, clock, self.revisions)
        self.volumes = VolumeControllers(cluster)
        self.resource_claims = ResourceClaimController(cluster)
        self.scheduler = KubeScheduler(cluster, clock, self.volumes, default_spread)
        self.static_kubelets = StaticKubelets(cluster, clock)
        self.workload_statuses = WorkloadStatuses(cluster, pod_counts)

    def reconcile(self) -> bool:
        """Run one pass; True when it wrote anything."""
        before = self.cluster.resource_version()
        with collector_paused():  # many short-lived objects, no reference cycles
            self.pod_gc.reconcile()
            self.deployments.reconcile()
            self.replica_sets.reconcile()
            self.stateful_sets.reconcile()
            self.jobs.reconcile()
            self.daemon_sets.reconcile()
            self.volumes.create_ephemeral_claims()
            self.volumes.bind_immediate_volumes()
            self.resource_claims.reconcile()
            self.scheduler.reconcile()
            self.static_kubelets.reconcile()
            self.volumes.bind_waiting_volumes()
            self.workload_statuses.reconcile()
            self.cluster.catch_up_evictions()
        return self.cluster.resource_version() != before
