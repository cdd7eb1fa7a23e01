"""``nodewright run``: the operator against a real API server, on the wall clock.

The same :class:`~nodewright.operator.Operator` as ``nodewright simulate`` runs here; only
the cluster (the Kubernetes adapter), the clock (the system clock) and the loop differ. The
loop runs a pass, then sleeps until a controller's wake-up time or until the caches see a
change, whichever is first. With leader election on, only the holder of the Lease runs
passes; the others keep warm caches and wait. SIGTERM stops taking new passes, lets the one
in flight finish, releases the Lease and exits.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid

from nodewright.api.apps import (
    CSINode,
    DaemonSet,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
    StorageClass,
    VolumeAttachment,
)
from nodewright.api.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.api.coordination import Lease
from nodewright.api.core import (
    Event,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
)
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.meta import KubeObject
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from nodewright.clock import SystemClock
from nodewright.cluster.fence import Fence
from nodewright.cluster.kube import ClientSettings, KubeCluster
from nodewright.controllers.options import Options
from nodewright.controllers.provisioning.defaultspread import SELECTOR_SOURCES
from nodewright.logfields import fields
from nodewright.metrics import cluster_sync
from nodewright.operator import Operator
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import ProviderContext
from nodewright.service.http import Endpoints, metrics, probe
from nodewright.service.leader import LeaderElector
from nodewright.settings.run import RunSettings

log = logging.getLogger("nodewright.run")

#: The kinds whose caches start before the first pass (others start on first read).
WATCHED_KINDS: tuple[type[KubeObject], ...] = (
    Pod,
    Node,
    NodePool,
    NodeClaim,
    DaemonSet,
    ReplicaSet,
    StatefulSet,
    PodDisruptionBudget,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CSINode,
    VolumeAttachment,
    Namespace,
)
#: Kinds read and written live, never cached.
UNCACHED_KINDS: tuple[type[KubeObject], ...] = (Event, Lease)

#: Shortest pause between passes while the cluster keeps changing.
MIN_INTERVAL = 0.1
#: Longest sleep without a pass, even when nothing is due.
MAX_IDLE = 10.0
#: How long the Events of the last pass may take to be written on shutdown (seconds).
SHUTDOWN_EVENTS_GRACE = 0.5


def options_from(settings: RunSettings) -> Options:
    return Options(
        batch_idle_duration=settings.batch_idle_duration,
        batch_max_duration=settings.batch_max_duration,
        preference_policy=settings.preference_policy,
        min_values_policy=settings.min_values_policy,
        cluster_name=settings.cluster_name,
        spot_to_spot_consolidation=settings.gates.get("SpotToSpotConsolidation", False),
        default_spread=settings.default_spread,
        node_repair=settings.gates.get("NodeRepair", False),
        capacity_buffer=settings.gates.get("CapacityBuffer", False),
        static_capacity=settings.gates.get("StaticCapacity", False),
        node_overlay=settings.gates.get("NodeOverlay", False),
        dra=not settings.ignore_dra_requests,
    )


def client_settings(settings: RunSettings) -> ClientSettings:
    return ClientSettings(
        qps=settings.kube_client_qps,
        burst=settings.kube_client_burst,
        request_timeout=settings.kube_client_timeout.total_seconds(),
    )


def connect(settings: RunSettings) -> KubeCluster:
    return KubeCluster.connect(
        settings.kubeconfig,
        settings.kube_context,
        settings=client_settings(settings),
        uncached=UNCACHED_KINDS,
    )


def host_and_port(address: str, port: int) -> str:
    """``127.0.0.1:8080``, ``[::1]:8080``: where a listener actually is."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


class RunService:
    """One ``nodewright run`` process: caches, leader election, endpoints and the loop."""

    def __init__(
        self,
        settings: RunSettings,
        cluster: KubeCluster,
        host: PluginHost,
        identity: str | None = None,
    ) -> None:
        self.settings = settings
        self.cluster = cluster
        self.host = host
        self.clock = SystemClock()
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.options = options_from(settings)
        if self.options.default_spread:
            log.info(
                "scheduler-config is set: applying these default topology spread constraints "
                "during scheduling to pods that declare none of their own",
                extra=fields(
                    **{
                        "default-topology-spread-constraints": [
                            c.to_dict() for c in self.options.default_spread
                        ]
                    }
                ),
            )
        self.operator: Operator | None = None
        self.passes = 0
        self._stop = threading.Event()
        self._stopping = threading.Lock()
        self._crashed = False
        self.elector: LeaderElector | None = None
        if not settings.disable_leader_election:
            # Nothing is written and no provider is called unless the Lease is ours.
            fence = Fence(open_=False)
            cluster.fence = fence
            host.fence = fence
            self.elector = LeaderElector(
                cluster.leases(),
                settings.leader_election_name,
                settings.lease_namespace,
                self.identity,
                lease_duration=settings.leader_election_lease_duration,
                renew_deadline=settings.leader_election_renew_deadline,
                retry_period=settings.leader_election_retry_period,
                fence=fence,
                on_lost=cluster.wake,
            )
        self.endpoints = Endpoints()
        self.health_port = 0
        self.metrics_port = 0

    # -- probes ----------------------------------------------------------------------------------

    def healthy(self) -> tuple[bool, str]:
        if self._crashed:
            return False, "the control loop died"
        if self.elector is not None and self.elector.lost.is_set():
            return False, "leadership lost"
        return True, "ok"

    def ready(self) -> tuple[bool, str]:
        if not self.cluster.synced():
            return False, "caches not synced"
        return True, "ok"

    def start_endpoints(self) -> None:
        address = self.settings.bind_address
        self.health_port = self.endpoints.serve(
            address,
            self.settings.health_probe_port,
            {"/healthz": probe(self.healthy), "/readyz": probe(self.ready)},
        )
        self.metrics_port = self.endpoints.serve(
            address, self.settings.metrics_port, {"/metrics": metrics}
        )
        log.info(
            "serving /healthz and /readyz on %s, /metrics on %s",
            host_and_port(address, self.health_port),
            host_and_port(address, self.metrics_port),
        )

    # -- the loop --------------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Stop taking new work (SIGTERM); the pass in flight finishes."""
        with self._stopping:
            first = not self._stop.is_set()
            self._stop.set()
        if first:
            log.info("shutting down: finishing the pass in flight")
        self.cluster.wake()

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.leading

    def _operator(self) -> Operator:
        if self.operator is None:
            context_options = self.settings.providers
            self.host.configure(
                lambda name: ProviderContext(
                    cluster=self.cluster,
                    clock=self.clock,
                    options=dict(context_options.get(name, {})),
                    cluster_name=self.settings.cluster_name,
                    live_cluster=True,
                )
            )
            self.operator = Operator(self.cluster, self.host, self.clock, self.options)
        return self.operator

    def run(self) -> int:
        """Run until :meth:`request_stop`; returns the process exit code."""
        kinds = list(WATCHED_KINDS) + [k.model for k in self.host.node_class_kinds()]
        if self.options.capacity_buffer:
            kinds += [CapacityBuffer, PodTemplate]
        if self.options.default_spread:
            # Default spread selectors are deduced from Services and ReplicationControllers.
            kinds += [k for k in SELECTOR_SOURCES if k not in kinds]
        if self.options.node_overlay:
            kinds.append(NodeOverlay)
        if self.options.dra:
            kinds += [DeviceClass, ResourceClaim, ResourceSlice]
        self.cluster.start(kinds)
        if self.elector is not None:
            self.elector.start()
        code = 0
        try:
            code = self._loop()
        except BaseException:
            # The loop died (a crash): stop renewing so a standby takes over; keep the Lease
            # record as it is, like a process that was killed.
            self._crashed = True
            if self.elector is not None:
                self.elector.stop(release=False)
            self.endpoints.close()
            self.cluster.close()
            raise
        # The last pass's Events go out while the Lease is still ours, then the Lease goes.
        self.cluster.flush_events(SHUTDOWN_EVENTS_GRACE)
        if self.elector is not None:
            self.elector.stop(release=True)
        self.endpoints.close()
        self.cluster.close()
        log.info("stopped after %d pass(es)", self.passes)
        return code

    def _loop(self) -> int:
        while not self._stop.is_set():
            if not self.leading:
                assert self.elector is not None
                if self.elector.lost.is_set():
                    log.error("leadership lost; exiting so a fresh process can stand by")
                    return 1
                self.elector.wait_for_leadership(0.2)
                continue
            if not self.cluster.synced():
                cluster_sync.record(False, self.clock.now())
                self.cluster.wait_synced(1.0)
                continue
            operator = self._operator()
            before = self.cluster.resource_version()
            wake = operator.run_once()
            self.passes += 1
            if self._stop.is_set():
                break
            after = self.cluster.resource_version()
            if after != before:
                self._stop.wait(MIN_INTERVAL)
                continue
            timeout = MAX_IDLE
            if wake is not None:
                timeout = (wake - self.clock.now()).total_seconds()
                timeout = min(max(timeout, MIN_INTERVAL), MAX_IDLE)
            self.cluster.wait_for_change(after, timeout)
        return 0


__all__ = ["MAX_IDLE", "RunService", "connect", "host_and_port", "options_from"]
