"""Prometheus metrics under Karpenter's names and labels.

Collectors are created once, at import, on prometheus_client's default ``REGISTRY``; every
operator in the process (each ``nodewright simulate`` run, each test) records into the same
collectors, so nothing is ever registered twice. Counters therefore accumulate across runs in
one process: tests compare values before and after (:func:`sample`).

Controllers call the small ``record_*`` helpers below at the points Karpenter records the
same metric. Durations of work nodewright does itself (scheduling, cloud-provider calls) are
wall-clock time; durations of cluster events (pod start-up) are on the injected clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, generate_latest

from nodewright.metrics.build import build_labels
from nodewright.metrics.nodes import NodeSample, NodeSeries
from nodewright.metrics.pods import PodStates
from nodewright.metrics.summary import QuantileSummary
from nodewright.metrics.text import PREFORMATTED

NAMESPACE = "karpenter"

#: Karpenter's duration buckets (seconds), shared by the duration histograms.
DURATION_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip

#: The controller making cloud-provider calls right now (``controller`` label); the operator
#: sets it around each controller's pass.
current_controller: ContextVar[str] = ContextVar("nodewright_controller", default="")

# -- NodeClaims -------------------------------------------------------------------------------

nodeclaims_created = Counter(
    "nodeclaims_created_total",
    "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim "
    "was created and the owning nodepool.",
    ["reason", "nodepool", "min_values_relaxed"],
    namespace=NAMESPACE,
)
nodeclaims_terminated = Counter(
    "nodeclaims_terminated_total",
    "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, "
    "capacity type, and zone.",
    ["nodepool", "capacity_type", "zone"],
    namespace=NAMESPACE,
)
#: The labels of every count of disruptions: why, the pool, its capacity type, the pool's
#: consolidation policy (consolidation only, in snake case) and how the node drains
#: (``graceful``, ``eventual`` or ``forceful``).
DISRUPTION_LABELS = (
    "reason",
    "nodepool",
    "capacity_type",
    "consolidation_policy",
    "termination_mode",
)
nodeclaims_disrupted = Counter(
    "nodeclaims_disrupted_total",
    "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim "
    "was disrupted, the owning nodepool, the capacity type, the consolidation policy, and the "
    "termination mode.",
    DISRUPTION_LABELS,
    namespace=NAMESPACE,
)
nodeclaims_unhealthy_disrupted = Counter(
    "nodeclaims_unhealthy_disrupted_total",
    "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on "
    "the node was disrupted, the owning nodepool, and the image ID.",
    ["condition", "nodepool", "capacity_type", "image_id"],
    namespace=NAMESPACE,
)

# -- Nodes ------------------------------------------------------------------------------------

nodes_created = Counter(
    "nodes_created_total",
    "Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.",
    ["nodepool", "zone"],
    namespace=NAMESPACE,
)
nodes_terminated = Counter(
    "nodes_terminated_total",
    "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.",
    ["nodepool", "zone"],
    namespace=NAMESPACE,
)

nodes_termination_duration = QuantileSummary(
    f"{NAMESPACE}_nodes_termination_duration_seconds",
    "The time taken between a node's deletion request and the removal of its finalizer",
    ["nodepool"],
)
#: Every node's resource gauges, lifetime, and the cluster utilization and node count; set by
#: the node metrics controller.
node_series = NodeSeries()

# -- Pods -------------------------------------------------------------------------------------

POD_STATE_LABELS = (
    "name",
    "namespace",
    "owner",
    "node",
    "nodepool",
    "zone",
    "arch",
    "capacity_type",
    "instance_type",
    "phase",
)
pods_state = PodStates(
    f"{NAMESPACE}_pods_state",
    "Pod state is the current state of pods. This metric can be used several ways as it is "
    "labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, "
    "capacity type, instance type and pod phase.",
    POD_STATE_LABELS,
)
pods_disruption_initiated = Counter(
    "pods_disruption_initiated_total",
    "Number of pod disruptions initiated in total by Karpenter, incremented by the "
    "reschedulable pod count whenever the underlying nodeclaim is disrupted. Labeled by reason "
    "the nodeclaim was disrupted, the owning nodepool, the capacity type, the consolidation "
    "policy, and the termination mode. Pods owned by DaemonSets and mirror pods are excluded.",
    DISRUPTION_LABELS,
    namespace=NAMESPACE,
)
pods_startup_duration = QuantileSummary(
    f"{NAMESPACE}_pods_startup_duration_seconds",
    "The time from pod creation until the pod is running.",
)

# -- Scheduler --------------------------------------------------------------------------------

scheduling_duration = Histogram(
    "scheduler_scheduling_duration_seconds",
    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
    ["controller"],
    namespace=NAMESPACE,
    buckets=DURATION_BUCKETS,
)
scheduler_queue_depth = Gauge(
    "scheduler_queue_depth",
    "The number of pods currently waiting to be scheduled.",
    ["controller"],
    namespace=NAMESPACE,
)

pending_pods_by_effective_zone = Gauge(
    "scheduler_pending_pods_by_effective_zone_count",
    "Pending pods dimensioned by effective zone constraint, or the intersection of pod-level "
    "zone signals, volume topology (PVC zones), and topology constraints. Values: specific "
    "zone name (e.g., 'us-west-2a'), 'flexible' (multiple zones), or 'none' (no valid "
    "intersection).",
    ["controller", "zone"],
    namespace=NAMESPACE,
)

# -- Cloud provider ---------------------------------------------------------------------------

cloudprovider_duration = Histogram(
    "cloudprovider_duration_seconds",
    "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
    ["controller", "method", "provider"],
    namespace=NAMESPACE,
    buckets=DURATION_BUCKETS,
)
cloudprovider_errors = Counter(
    "cloudprovider_errors_total",
    "Total number of errors returned from CloudProvider calls.",
    ["controller", "method", "provider", "error"],
    namespace=NAMESPACE,
)

# -- NodePools --------------------------------------------------------------------------------

nodepools_usage = Gauge(
    "nodepools_usage",
    "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool "
    "name and resource type.",
    ["nodepool", "resource_type"],
    namespace=NAMESPACE,
)
nodepools_limit = Gauge(
    "nodepools_limit",
    "Limits specified on the nodepool that restrict the quantity of resources provisioned. "
    "Labeled by nodepool name and resource type.",
    ["nodepool", "resource_type"],
    namespace=NAMESPACE,
)

nodepools_cost = Gauge(
    "nodepools_cost_total",
    "Total cost of the nodepool from Karpenter's perspective. Units are determined by the "
    "cloud provider. Not an authoritative source for billing. Includes modifications due to "
    "NodeOverlays",
    ["nodepool"],
    namespace=NAMESPACE,
)
cost_tracker_errors = Counter(
    "nodepools_cost_tracker_errors_total",
    "Number of errors encountered during cost tracking operations. Labeled by nodepool and "
    "nodeclaim.",
    ["nodepool"],
    namespace=NAMESPACE,
)
nodepools_allowed_disruptions = Gauge(
    "nodepools_allowed_disruptions",
    "The number of nodes for a given NodePool that can be concurrently disrupting at a point "
    "in time. Labeled by NodePool. Note that allowed disruptions can change very rapidly, as "
    "new nodes may be created and others may be deleted at any point.",
    ["nodepool", "reason"],
    namespace=NAMESPACE,
)
nodepools_nodes_consuming_budgets = Gauge(
    "nodepools_nodes_consuming_budgets",
    "The number of nodes consuming the budget of a nodepool at a point in time. Labeled by "
    "NodePool.",
    ["nodepool", "reason"],
    namespace=NAMESPACE,
)

# -- Cluster state ----------------------------------------------------------------------------

cluster_state_synced = Gauge(
    "cluster_state_synced",
    "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and "
    "nodes that are stored in the APIServer have the same representation as Karpenter's "
    "cluster state",
    namespace=NAMESPACE,
)
cluster_state_unsynced_time = Gauge(
    "cluster_state_unsynced_time_seconds",
    "The time for which cluster state is not synced",
    namespace=NAMESPACE,
)


class ClusterSync:
    """Sets ``cluster_state_synced`` and ``cluster_state_unsynced_time_seconds`` from whether
    the cluster state is synced each time someone looks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: datetime | None = None

    def record(self, synced: bool, now: datetime) -> None:
        with self._lock:
            if synced:
                self._since = None
                unsynced = 0.0
            else:
                self._since = self._since or now
                unsynced = max((now - self._since).total_seconds(), 0.0)
        cluster_state_synced.set(1 if synced else 0)
        cluster_state_unsynced_time.set(unsynced)


cluster_sync = ClusterSync()

# -- Build ------------------------------------------------------------------------------------

build_info = Gauge(
    "build_info",
    "A metric with a constant '1' value labeled by version from which karpenter was built.",
    ["version", "goversion", "goarch", "commit"],
    namespace=NAMESPACE,
)
build_info.labels(*build_labels()).set(1)

# -- Disruption -------------------------------------------------------------------------------

disruption_decisions = Counter(
    "voluntary_disruption_decisions_total",
    "Number of disruption decisions performed. Labeled by disruption decision, reason and "
    "consolidation type.",
    ["decision", "reason", "consolidation_type"],
    namespace=NAMESPACE,
)
disruption_eligible_nodes = Gauge(
    "voluntary_disruption_eligible_nodes",
    "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
    ["reason"],
    namespace=NAMESPACE,
)

consolidation_timeouts = Counter(
    "voluntary_disruption_consolidation_timeouts_total",
    "Number of times the Consolidation algorithm has reached a timeout. Labeled by "
    "consolidation type.",
    ["consolidation_type"],
    namespace=NAMESPACE,
)
for _type in ("multi", "single"):  # exported at zero, as Karpenter does
    consolidation_timeouts.labels(_type)

consolidation_score = Histogram(
    "consolidation_score",
    "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
    ["decision", "nodepool", "policy"],
    namespace=NAMESPACE,
    buckets=(0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0),
)
consolidation_moves = Counter(
    "consolidation_moves_total",
    "Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
    ["decision", "nodepool", "policy"],
    namespace=NAMESPACE,
)

# -- controller-runtime ------------------------------------------------------------------------
# Karpenter's controllers run on controller-runtime, whose reconcile and work-queue series the
# performance and controllers dashboards read. nodewright counts one pass of a controller as
# one reconcile.

#: controller-runtime's reconcile-time buckets (seconds).
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip
#: The ``result`` values of ``controller_runtime_reconcile_total``.
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")

reconcile_total = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],
)
reconcile_errors = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
)
reconcile_time = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=RECONCILE_BUCKETS,
)
workqueue_depth = Gauge(
    "workqueue_depth",
    "Current depth of workqueue by workqueue and priority",
    ["name", "controller", "priority"],
)

# -- nodewright's own ---------------------------------------------------------------------------

events_dropped = Counter(
    "events_dropped_total",
    "Kubernetes Events not written: the queue was full (the oldest is dropped), the API server "
    "refused one, stayed unreachable, or the process shut down first.",
    ["reason"],
    namespace="nodewright",
)

# -- recording helpers ------------------------------------------------------------------------

#: Method names as Karpenter's cloud-provider metrics decorator reports them.
CLOUDPROVIDER_METHODS = {
    "nodewright_launch": "Create",
    "nodewright_delete": "Delete",
    "nodewright_get": "Get",
    "nodewright_list": "List",
    "nodewright_instance_types": "GetInstanceTypes",
    "nodewright_offerings": "GetInstanceTypes",
    "nodewright_is_drifted": "IsDrifted",
    "nodewright_node_class_status": "GetSupportedNodeClasses",
    "nodewright_repair_policies": "RepairPolicies",
}


@contextmanager
def cloudprovider_call(hook: str, provider: str) -> Iterator[None]:
    """Time one provider hook call; count it as an error when it raises."""
    method = CLOUDPROVIDER_METHODS.get(hook, hook)
    controller = current_controller.get()
    started = time.perf_counter()
    try:
        yield
    except Exception as error:
        cloudprovider_errors.labels(controller, method, provider, type(error).__name__).inc()
        raise
    finally:
        cloudprovider_duration.labels(controller, method, provider).observe(
            time.perf_counter() - started
        )


@contextmanager
def controller_scope(name: str) -> Iterator[None]:
    """Name the controller whose pass is running, for the ``controller`` labels."""
    token = current_controller.set(name)
    try:
        yield
    finally:
        current_controller.reset(token)


def register_controller(name: str) -> None:
    """Create a controller's series at zero, as controller-runtime does when it starts one,
    so dashboards list it before its first reconcile."""
    for result in RECONCILE_RESULTS:
        reconcile_total.labels(name, result)
    reconcile_errors.labels(name)
    reconcile_time.labels(name)
    workqueue_depth.labels(name, name, "")


def record_reconcile(name: str, seconds: float, *, failed: bool, requeue_after: bool) -> None:
    """Count one pass of a controller and how long it took."""
    result = "error" if failed else "requeue_after" if requeue_after else "success"
    reconcile_total.labels(name, result).inc()
    if failed:
        reconcile_errors.labels(name).inc()
    reconcile_time.labels(name).observe(seconds)


#: controller -> the zones its ``scheduler_pending_pods_by_effective_zone_count`` series name.
_pending_zones: dict[str, set[str]] = {}


def record_pending_zones(controller: str, counts: Mapping[str, int]) -> None:
    """Replace a controller's pending pods by effective zone with ``counts``."""
    for zone in _pending_zones.get(controller, set()) - set(counts):
        pending_pods_by_effective_zone.remove(controller, zone)
    for zone, count in counts.items():
        pending_pods_by_effective_zone.labels(controller, zone).set(count)
    _pending_zones[controller] = set(counts)


def resource_type(resource: str) -> str:
    """A resource's ``resource_type`` label: ``ephemeral-storage`` -> ``ephemeral_storage``."""
    return resource.lower().replace("-", "_")


def resource_value(resource: str, milli: int) -> float:
    """A resource's value in a gauge: CPU in cores, anything else in whole units rounded up
    (Go's ``Quantity.Value``)."""
    if resource == "cpu":
        return milli / 1000
    return float(-(-milli // 1000))


def sample(name: str, labels: Mapping[str, str] | None = None) -> float:
    """The current value of one sample (0 when absent)."""
    for registry in (REGISTRY, PREFORMATTED):
        value = registry.get_sample_value(name, dict(labels or {}))
        if value is not None:
            return value
    return 0.0


def exposition() -> bytes:
    """Every metric in the Prometheus text format: what ``/metrics`` serves."""
    return generate_latest(REGISTRY) + (node_series.text() + pods_state.text()).encode()


__all__ = [
    "NodeSample",
    "cloudprovider_call",
    "controller_scope",
    "sample",
]
