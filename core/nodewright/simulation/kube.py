"""The rest of Kubernetes, as much of it as a node-autoscaling simulation needs.

A simulated cluster needs the controllers that turn workloads into pods (Deployment,
ReplicaSet, StatefulSet, Job, DaemonSet), a scheduler that binds pending pods to nodes that
fit them and explains why the others do not fit, a kubelet that starts pods on nodes the
KWOK provider does not manage, pod garbage collection for vanished nodes, and persistent
volume provisioning. :class:`EmbeddedKubernetes` runs them all, one pass per
:meth:`~EmbeddedKubernetes.reconcile`, against a :class:`~nodewright.cluster.memory.
MemoryCluster`.

Each controller is a simplified, deterministic version of the real one: objects are visited
in namespace/name order, generated names come from the store's seeded generator, and there
are no rollouts, backoffs or ordered start-up. What nodewright can observe (which pods exist,
where they are bound, why the others are pending, where their volumes live) follows
Kubernetes.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodewright.api.apps import (
    CSINode,
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    StatefulSet,
    StorageClass,
)
from nodewright.api.core import (
    Namespace,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimVolumeSource,
    PersistentVolumeSpec,
    PersistentVolumeStatus,
    Pod,
    PodCondition,
    PodSpec,
    PodTemplateSpec,
    Toleration,
    Volume,
    VolumeNodeAffinity,
)
from nodewright.api.labels import ZONE_LABEL
from nodewright.api.meta import KubeObject, ObjectMeta, ObjectReference, OwnerReference
from nodewright.clock import Clock
from nodewright.cluster import AlreadyExistsError, ClusterError
from nodewright.cluster.memory import MemoryCluster, collector_paused, copy_object
from nodewright.cluster.selectors import node_selector_matches
from nodewright.scheduling.model import HostPort, PodRequest
from nodewright.scheduling.pods import (
    node_fit_problem,
    pod_host_ports,
    pod_request,
    pod_requests,
    pod_tolerations,
    ports_conflict,
    taints_from_api,
)
from nodewright.scheduling.requirements import RequirementError
from nodewright.scheduling.resources import CPU, MEMORY, ResourceList, parse_resources
from nodewright.scheduling.taints import NO_EXECUTE, NO_SCHEDULE, Taint, tolerates_all
from nodewright.scheduling.taints import Toleration as SchedulingToleration
from nodewright.scheduling.volumes import (
    BIND_COMPLETED_ANNOTATION,
    VolumeUsage,
    add_usage,
    claim_name,
    csi_driver,
    default_storage_class,
    ephemeral_claim_template,
    node_volume_limits,
    pod_volume_usage,
)
from nodewright.simulation.podtopology import (
    MAX_NODE_SCORE,
    PodConstraints,
    PodTopology,
    SpreadLimit,
    normalised_preferences,
)

#: Nodes the KWOK provider simulates carry this annotation; KWOK plays their kubelet.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
DEFAULT_SCHEDULER = "default-scheduler"
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

TERMINAL_PHASES = ("Succeeded", "Failed")

#: Tolerations the DaemonSet controller adds to every daemon pod, so daemons run on nodes
#: that are starting, under pressure or cordoned.
DAEMON_TOLERATIONS = (
    Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect=NO_EXECUTE),
    Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect=NO_EXECUTE),
    Toleration(key="node.kubernetes.io/disk-pressure", operator="Exists", effect=NO_SCHEDULE),
    Toleration(key="node.kubernetes.io/memory-pressure", operator="Exists", effect=NO_SCHEDULE),
    Toleration(key="node.kubernetes.io/pid-pressure", operator="Exists", effect=NO_SCHEDULE),
    Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect=NO_SCHEDULE),
)

# kube-scheduler's words for nodes it filtered before looking at the pod.
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NOT_READY = "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
VOLUME_AFFINITY_CONFLICT = "node(s) had volume node affinity conflict"
VOLUME_TOPOLOGY_MISMATCH = "node(s) didn't find available persistent volumes to bind"
VOLUME_LIMIT_EXCEEDED = "node(s) exceed max volume count"
NO_NODES = "no nodes available to schedule pods"


def _active(pod: Pod) -> bool:
    return not pod.deleting and pod.status.phase not in TERMINAL_PHASES


def _controller_uid(obj: KubeObject) -> str | None:
    for ref in obj.metadata.owner_references:
        if ref.controller:
            return ref.uid
    return None


def _controller_ref(owner: KubeObject) -> OwnerReference:
    return OwnerReference(
        api_version=owner.api_version,
        kind=owner.kind,
        name=owner.name,
        uid=owner.metadata.uid or "",
        controller=True,
        block_owner_deletion=True,
    )


def _template_hash(template: PodTemplateSpec) -> str:
    """A stable name suffix for a pod template: a change to the template changes it."""
    text = json.dumps(template.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _pod_from_template(
    template: PodTemplateSpec,
    owner: KubeObject,
    *,
    name: str = "",
    generate_name: str = "",
    labels: Mapping[str, str] | None = None,
) -> Pod:
    return Pod(
        metadata=ObjectMeta(
            name=name,
            generate_name=generate_name or None,
            namespace=owner.namespace,
            labels={**template.metadata.labels, **(labels or {})},
            annotations=dict(template.metadata.annotations),
            owner_references=[_controller_ref(owner)],
        ),
        spec=copy_object(template.spec),
    )


def _set_pod_condition(
    pod: Pod,
    kind: str,
    status: str,
    clock: Clock,
    *,
    reason: str | None = None,
    message: str | None = None,
) -> bool:
    """Set a condition in place; returns True when anything a reader sees changed."""
    current = pod.condition(kind)
    if current is None:
        pod.status.conditions.append(
            PodCondition(
                type=kind,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=clock.now(),
            )
        )
        return True
    if (current.status, current.reason, current.message) == (status, reason, message):
        return False
    if current.status != status:
        current.last_transition_time = clock.now()
    current.status, current.reason, current.message = status, reason, message
    return True


def _by_controller(pods: Iterable[Pod]) -> dict[str, list[Pod]]:
    owned: dict[str, list[Pod]] = defaultdict(list)
    for pod in pods:
        uid = _controller_uid(pod)
        if uid is not None:
            owned[uid].append(pod)
    return owned


@dataclass
class _NodeState:
    """What the binder knows about one schedulable node during a pass."""

    node: Node
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: ResourceList
    requested: ResourceList = field(default_factory=dict)
    ports: list[HostPort] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    #: CSI driver -> volumes the node may attach (``CSINode`` allocatable counts).
    volume_limits: Mapping[str, int] = field(default_factory=dict)
    #: CSI driver -> claims its pods attach; computed when a pod with volumes first asks.
    volume_usage: dict[str, frozenset[str]] | None = None


@dataclass(frozen=True)
class _PodVolumes:
    """What kube-scheduler's volume filters need from one pod."""

    #: Node selectors of its volumes, each with the reason a node that fails it is given.
    selectors: list[tuple[NodeSelector, str]]
    #: CSI driver -> claims the pod attaches, for NodeVolumeLimits.
    usage: VolumeUsage


@dataclass
class _SchedulingPass:
    """One scheduling pass over the pending pods, with caches for pods that look alike.

    Pods of one workload share requests, tolerations and node requirements. Taints and
    labels do not change during a pass, so which nodes admit such a pod is computed once;
    and while nothing has been bound, the explanation for a pod that fits nowhere is the same
    for every pod like it.
    """

    node_count: int
    states: list[_NodeState]
    filtered: Counter[str]
    topology: PodTopology
    claims: Mapping[str, PersistentVolumeClaim] = field(default_factory=dict)
    volumes: Mapping[str, PersistentVolume] = field(default_factory=dict)
    storage_classes: Mapping[str, StorageClass] = field(default_factory=dict)
    binds: int = 0
    _admitting: dict[tuple[object, ...], list[_NodeState]] = field(default_factory=dict)
    _open: dict[tuple[object, ...], list[_NodeState]] = field(default_factory=dict)
    _explanations: dict[tuple[object, ...], tuple[int, str]] = field(default_factory=dict)

    def admitting(self, request: PodRequest) -> list[_NodeState]:
        """Nodes whose taints and labels admit the pod, whatever they already run."""
        key = (request.requirement_terms, request.tolerations)
        nodes = self._admitting.get(key)
        if nodes is None:
            probe = replace(request, requests={}, host_ports=())
            nodes = [
                state
                for state in self.states
                if node_fit_problem(probe, state.labels, state.taints, {}, {}, ()) is None
            ]
            self._admitting[key] = nodes
        return nodes

    def open_nodes(self, request: PodRequest) -> list[_NodeState]:
        """Admitting nodes that still had room for a pod of this shape at the last look.

        Within a pass nodes only fill up, so a node once too full for a shape stays so.
        """
        nodes = self._open.get(_shape(request))
        return self.admitting(request) if nodes is None else nodes

    def keep_open(self, request: PodRequest, nodes: list[_NodeState]) -> None:
        self._open[_shape(request)] = nodes

    def volume_usage(self, state: _NodeState) -> dict[str, frozenset[str]]:
        """The claims the node's pods attach, per CSI driver."""
        if state.volume_usage is None:
            state.volume_usage = add_usage(
                *(
                    pod_volume_usage(pod, self.claims, self.volumes, self.storage_classes)
                    for pod in state.pods
                )
            )
        return state.volume_usage

    def exceeds_volume_limits(self, state: _NodeState, usage: VolumeUsage) -> bool:
        """NodeVolumeLimits: the node cannot attach the pod's new claims."""
        if not usage or not state.volume_limits:
            return False
        used = self.volume_usage(state)
        for driver, claims in usage.items():
            limit = state.volume_limits.get(driver)
            if limit is not None and len(used.get(driver, frozenset()) | claims) > limit:
                return True
        return False

    def problem(
        self,
        state: _NodeState,
        request: PodRequest,
        volumes: _PodVolumes,
        constraints: PodConstraints | None,
        limits: Sequence[SpreadLimit],
    ) -> str | None:
        """The first of kube-scheduler's filters that rejects the node, or None."""
        problem = node_fit_problem(
            request, state.labels, state.taints, state.allocatable, state.requested, state.ports
        )
        if problem is not None:
            return problem
        if self.exceeds_volume_limits(state, volumes.usage):
            return VOLUME_LIMIT_EXCEEDED
        for selector, reason in volumes.selectors:
            if not node_selector_matches(selector, state.labels, state.node.name):
                return reason
        if constraints is not None:
            return constraints.problem(state.labels, limits)
        return None

    def explain(
        self,
        pod: Pod,
        request: PodRequest,
        volumes: _PodVolumes,
        constraints: PodConstraints | None,
    ) -> str:
        """kube-scheduler's per-node reasons, counted and sorted (``1 Insufficient cpu, ...``)."""
        key: tuple[object, ...] | None = None
        if not volumes.selectors and not volumes.usage:
            key = _shape(request)
            if constraints is not None:
                key += (_topology_signature(pod),)
            cached = self._explanations.get(key)
            if cached is not None and cached[0] == self.binds:
                return cached[1]
        limits = constraints.limits() if constraints is not None else ()
        reasons = Counter(self.filtered)
        for state in self.states:
            problem = self.problem(state, request, volumes, constraints, limits)
            if problem is not None:
                for reason in problem.split(", "):
                    reasons[reason] += 1
        summary = ", ".join(sorted(f"{count} {reason}" for reason, count in reasons.items()))
        if key is not None:
            self._explanations[key] = (self.binds, summary)
        return summary


class EmbeddedKubernetes:
    """Kubernetes' own controllers and scheduler for a simulated cluster.

    :meth:`reconcile` runs one pass of every controller in a fixed order: pod garbage
    collection, Deployment, ReplicaSet, StatefulSet, Job, DaemonSet, generic ephemeral volume
    claims, immediate volume binding, the scheduler (which provisions WaitForFirstConsumer
    volumes as it binds), the kubelet of static nodes, WaitForFirstConsumer binding for pods
    that reached a node without the scheduler, and last the workloads' status counts. Pods
    created by a controller get their first scheduling attempt in the same pass.
    """

    def __init__(self, cluster: MemoryCluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock
        self._requests: dict[str, ResourceList] = {}

    def reconcile(self) -> bool:
        """Run one pass; True when it wrote anything."""
        before = self.cluster.resource_version()
        with collector_paused():  # thousands of short-lived copies, no reference cycles
            self.collect_orphaned_pods()
            self.reconcile_deployments()
            self.reconcile_replica_sets()
            self.reconcile_stateful_sets()
            self.reconcile_jobs()
            self.reconcile_daemon_sets()
            self.create_ephemeral_claims()
            self.bind_immediate_volumes()
            self.schedule_pods()
            self.run_static_kubelets()
            self.bind_waiting_volumes()
            self.update_workload_statuses()
        return self.cluster.resource_version() != before

    # -- pod garbage collection ------------------------------------------------------------------

    def collect_orphaned_pods(self) -> None:
        """Delete pods bound to nodes that no longer exist; their owners replace them."""
        nodes = {node.name for node in self.cluster.peek(Node)}
        orphans = [
            pod
            for pod in self.cluster.peek(Pod)
            if pod.spec.node_name and pod.spec.node_name not in nodes and not pod.deleting
        ]
        for pod in orphans:
            self.cluster.delete(Pod, pod.name, pod.namespace)

    # -- Deployment ------------------------------------------------------------------------------

    def reconcile_deployments(self) -> None:
        """One ReplicaSet per pod template; the current one gets the replicas, older ones 0."""
        replica_sets = _by_controller_objects(self.cluster.peek(ReplicaSet))
        for deployment in list(self.cluster.peek(Deployment)):
            if deployment.deleting:
                continue
            template_hash = _template_hash(deployment.spec.template)
            name = f"{deployment.name}-{template_hash}"
            owned = replica_sets.get(deployment.metadata.uid or "", [])
            current = next((rs for rs in owned if rs.name == name), None)
            if current is None:
                self._create_unless_taken(self._replica_set(deployment, name, template_hash))
            elif current.spec.replicas != deployment.spec.replicas:
                scaled = copy_object(current)
                scaled.spec.replicas = deployment.spec.replicas
                self.cluster.update(scaled)
            for old in owned:
                if old.name != name and old.spec.replicas != 0 and not old.deleting:
                    retired = copy_object(old)
                    retired.spec.replicas = 0
                    self.cluster.update(retired)

    def _replica_set(self, deployment: Deployment, name: str, template_hash: str) -> ReplicaSet:
        template = deployment.spec.template.model_copy(deep=True)
        template.metadata.labels[POD_TEMPLATE_HASH_LABEL] = template_hash
        selector = deployment.spec.selector.model_copy(deep=True)
        selector.match_labels[POD_TEMPLATE_HASH_LABEL] = template_hash
        return ReplicaSet(
            metadata=ObjectMeta(
                name=name,
                namespace=deployment.namespace,
                labels=dict(template.metadata.labels),
                owner_references=[_controller_ref(deployment)],
            ),
            spec=deployment.spec.model_copy(
                update={"selector": selector, "template": template}, deep=True
            ),
        )

    # -- ReplicaSet ------------------------------------------------------------------------------

    def reconcile_replica_sets(self) -> None:
        """Create or delete pods until each ReplicaSet has its replicas.

        Scaling down removes pods that are not on a node first, then pods not yet running,
        then the newest, as the ReplicaSet controller's ranking does.
        """
        replica_sets = list(self.cluster.peek(ReplicaSet))
        if not replica_sets:
            return
        owned = _by_controller(self.cluster.peek(Pod))
        for rs in replica_sets:
            if rs.deleting:
                continue
            pods = [pod for pod in owned.get(rs.metadata.uid or "", []) if _active(pod)]
            missing = rs.spec.replicas - len(pods)
            for _ in range(missing):
                self.cluster.create(
                    _pod_from_template(rs.spec.template, rs, generate_name=f"{rs.name}-")
                )
            if missing < 0:
                for pod in sorted(pods, key=_deletion_rank)[:-missing]:
                    self.cluster.delete(Pod, pod.name, pod.namespace)

    def _create_unless_taken(self, obj: KubeObject) -> None:
        """Create an object with a fixed name; an unrelated object holding it blocks (and the
        real controllers, too, wait for the name to be freed)."""
        try:
            self.cluster.create(obj)
        except AlreadyExistsError:
            return

    # -- workload status -------------------------------------------------------------------------

    def update_workload_statuses(self) -> None:
        """``replicas``: live pods a workload owns; ``readyReplicas``: those running and ready.

        A Deployment adds up its ReplicaSets. Runs last, so it counts this pass's changes.
        """
        counts: dict[str, tuple[int, int]] = {}
        for uid, pods in _by_controller(self.cluster.peek(Pod)).items():
            live = [pod for pod in pods if _active(pod)]
            ready = sum(1 for pod in live if pod.status.phase == "Running" and _is_ready(pod))
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
            owner_uid = _controller_uid(rs)
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

    # -- StatefulSet -----------------------------------------------------------------------------

    def reconcile_stateful_sets(self) -> None:
        """Pods ``<name>-<ordinal>`` with one claim per volumeClaimTemplate and ordinal.

        Claims outlive the pods (the default ``Retain`` policy), so a pod that comes back
        finds its volume. All ordinals start at once (``Parallel`` pod management).
        """
        stateful_sets = list(self.cluster.peek(StatefulSet))
        if not stateful_sets:
            return
        owned = _by_controller(self.cluster.peek(Pod))
        for sts in stateful_sets:
            if sts.deleting:
                continue
            pods = {pod.name: pod for pod in owned.get(sts.metadata.uid or "", [])}
            for ordinal in range(sts.spec.replicas):
                name = f"{sts.name}-{ordinal}"
                claims = self._ensure_claims(sts, ordinal)
                if name in pods:
                    continue
                pod = _pod_from_template(
                    sts.spec.template,
                    sts,
                    name=name,
                    labels={
                        "statefulset.kubernetes.io/pod-name": name,
                        "apps.kubernetes.io/pod-index": str(ordinal),
                    },
                )
                pod.spec.volumes = [
                    v for v in pod.spec.volumes if v.name not in {c for c, _ in claims}
                ] + [
                    Volume(
                        name=volume,
                        persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=claim),
                    )
                    for volume, claim in claims
                ]
                self._create_unless_taken(pod)
            extra = sorted(
                (pod for pod in pods.values() if _ordinal(pod.name, sts.name) >= sts.spec.replicas),
                key=lambda pod: -_ordinal(pod.name, sts.name),
            )
            for pod in extra:
                if not pod.deleting:
                    self.cluster.delete(Pod, pod.name, pod.namespace)

    def _ensure_claims(self, sts: StatefulSet, ordinal: int) -> list[tuple[str, str]]:
        """Create missing claims for one ordinal; returns ``(volume name, claim name)`` pairs."""
        pairs: list[tuple[str, str]] = []
        for template in sts.spec.volume_claim_templates:
            claim = f"{template.name}-{sts.name}-{ordinal}"
            pairs.append((template.name, claim))
            if self.cluster.get(PersistentVolumeClaim, claim, sts.namespace) is not None:
                continue
            self.cluster.create(
                PersistentVolumeClaim(
                    metadata=ObjectMeta(
                        name=claim,
                        namespace=sts.namespace,
                        labels={**sts.spec.selector.match_labels, **template.metadata.labels},
                        annotations=dict(template.metadata.annotations),
                    ),
                    spec=template.spec.model_copy(deep=True),
                )
            )
        return pairs

    # -- Job -------------------------------------------------------------------------------------

    def reconcile_jobs(self) -> None:
        """Keep ``parallelism`` pods running until ``completions`` pods have succeeded."""
        jobs = list(self.cluster.peek(Job))
        if not jobs:
            return
        owned = _by_controller(self.cluster.peek(Pod))
        for job in jobs:
            if job.deleting:
                continue
            pods = owned.get(job.metadata.uid or "", [])
            active = sum(1 for pod in pods if _active(pod))
            succeeded = sum(1 for pod in pods if pod.status.phase == "Succeeded")
            wanted = job.spec.parallelism
            if job.spec.completions is not None:
                wanted = min(wanted, max(0, job.spec.completions - succeeded))
            for _ in range(wanted - active):
                pod = _pod_from_template(
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

    # -- DaemonSet -------------------------------------------------------------------------------

    def reconcile_daemon_sets(self) -> None:
        """One pod per eligible node, bound directly; pods leave nodes that stop qualifying."""
        nodes = [node for node in self.cluster.peek(Node) if not node.deleting]
        node_names = {node.name for node in nodes}
        daemon_sets = list(self.cluster.peek(DaemonSet))
        if not daemon_sets:
            return
        owned = _by_controller(self.cluster.peek(Pod))
        for ds in daemon_sets:
            if ds.deleting:
                continue
            spec = self._daemon_pod_spec(ds)
            placed: dict[str, list[Pod]] = defaultdict(list)
            for pod in owned.get(ds.metadata.uid or "", []):
                if not pod.deleting:
                    placed[pod.spec.node_name or ""].append(pod)
            for node in nodes:
                running = [pod for pod in placed.get(node.name, []) if _active(pod)]
                if running:
                    if not _daemon_may_stay(spec, node):
                        for pod in running:
                            self.cluster.delete(Pod, pod.name, pod.namespace)
                    continue
                if not _daemon_may_start(spec, node):
                    continue
                pod = _pod_from_template(ds.spec.template, ds, generate_name=f"{ds.name}-")
                pod.spec = copy_object(spec)
                pod.spec.node_name = node.name
                pod.status.conditions.append(
                    PodCondition(
                        type="PodScheduled", status="True", last_transition_time=self.clock.now()
                    )
                )
                self.cluster.create(pod)
            for node_name, pods in sorted(placed.items()):
                if node_name not in node_names:
                    for pod in pods:
                        self.cluster.delete(Pod, pod.name, pod.namespace)

    @staticmethod
    def _daemon_pod_spec(ds: DaemonSet) -> PodSpec:
        spec = ds.spec.template.spec.model_copy(deep=True)
        present = {(t.key, t.effect) for t in spec.tolerations}
        spec.tolerations.extend(
            t.model_copy() for t in DAEMON_TOLERATIONS if (t.key, t.effect) not in present
        )
        return spec

    # -- volumes ---------------------------------------------------------------------------------

    def create_ephemeral_claims(self) -> None:
        """The ephemeral volume controller: a claim ``<pod>-<volume>`` owned by the pod for each
        generic ephemeral volume, so it goes when the pod does."""
        for pod in list(self.cluster.peek(Pod)):
            if not _active(pod):
                continue
            for volume in pod.spec.volumes:
                template = ephemeral_claim_template(volume)
                if template is None:
                    continue
                name = f"{pod.name}-{volume.name}"
                if self.cluster.get(PersistentVolumeClaim, name, pod.namespace) is not None:
                    continue
                self._create_unless_taken(
                    PersistentVolumeClaim(
                        metadata=ObjectMeta(
                            name=name,
                            namespace=pod.namespace,
                            labels=dict(template.metadata.labels),
                            annotations=dict(template.metadata.annotations),
                            owner_references=[_controller_ref(pod)],
                        ),
                        spec=template.spec,
                    )
                )

    def bind_immediate_volumes(self) -> None:
        """Provision a volume for every unbound claim whose class binds immediately, and
        complete the binding of claims created with a ``volumeName``."""
        for claim in list(self.cluster.peek(PersistentVolumeClaim)):
            if claim.deleting or (
                claim.status.phase == "Bound"
                and BIND_COMPLETED_ANNOTATION in claim.metadata.annotations
            ):
                continue
            if claim.spec.volume_name:
                if self.cluster.get(PersistentVolume, claim.spec.volume_name) is not None:
                    self._mark_claim_bound(claim)
                continue
            storage_class = self._storage_class(claim)
            if (
                storage_class is None
                or storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER
            ):
                continue
            zone = _first_allowed_zone(storage_class)
            self._provision(claim, storage_class, zone, node_name=None)

    def bind_waiting_volumes(self) -> None:
        """Provision WaitForFirstConsumer claims of pods bound without the scheduler."""
        nodes = {node.name: node for node in self.cluster.peek(Node)}
        for pod in list(self.cluster.peek(Pod)):
            node = nodes.get(pod.spec.node_name or "")
            if node is not None and _active(pod):
                self._bind_pod_volumes(pod, node)

    def _bind_pod_volumes(self, pod: Pod, node: Node) -> None:
        for volume in pod.spec.volumes:
            name = claim_name(pod, volume)
            if name is None:
                continue
            claim = self.cluster.get(PersistentVolumeClaim, name, pod.namespace)
            if claim is None or claim.spec.volume_name or claim.deleting:
                continue
            storage_class = self._storage_class(claim)
            if (
                storage_class is None
                or storage_class.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER
            ):
                continue
            self._provision(
                claim, storage_class, node.metadata.labels.get(ZONE_LABEL), node_name=node.name
            )

    def _storage_class(self, claim: PersistentVolumeClaim) -> StorageClass | None:
        """The claim's class; one without ``storageClassName`` gets the default class."""
        name = claim.spec.storage_class_name
        if name is None:
            return default_storage_class(self.cluster.peek(StorageClass))
        if not name:
            return None
        return self.cluster.get(StorageClass, name)

    def _provision(
        self,
        claim: PersistentVolumeClaim,
        storage_class: StorageClass,
        zone: str | None,
        node_name: str | None,
    ) -> None:
        """Create a volume in ``zone`` (anywhere when None) and bind ``claim`` to it."""
        name = f"pvc-{claim.metadata.uid}"
        affinity = None
        if zone:
            affinity = VolumeNodeAffinity(
                required=NodeSelector(
                    node_selector_terms=[
                        NodeSelectorTerm(
                            match_expressions=[
                                NodeSelectorRequirement(
                                    key=ZONE_LABEL, operator="In", values=[zone]
                                )
                            ]
                        )
                    ]
                )
            )
        if self.cluster.get(PersistentVolume, name) is None:
            self.cluster.create(
                PersistentVolume(
                    metadata=ObjectMeta(name=name),
                    spec=PersistentVolumeSpec(
                        storage_class_name=storage_class.name,
                        capacity=dict(claim.spec.resources.requests),
                        claim_ref=ObjectReference(
                            api_version=claim.api_version,
                            kind=claim.kind,
                            name=claim.name,
                            namespace=claim.namespace,
                            uid=claim.metadata.uid,
                        ),
                        node_affinity=affinity,
                        csi={"driver": csi_driver(storage_class.provisioner), "volumeHandle": name},
                    ),
                    status=PersistentVolumeStatus(phase="Bound"),
                )
            )
        bound = copy_object(claim)
        bound.spec.volume_name = name
        if node_name:
            bound.metadata.annotations[SELECTED_NODE_ANNOTATION] = node_name
        bound.metadata.annotations[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
        bound.spec.storage_class_name = storage_class.name
        bound = self.cluster.update(bound)
        self._mark_claim_bound(bound)

    def _mark_claim_bound(self, claim: PersistentVolumeClaim) -> None:
        """The PersistentVolume controller's last step: the binding is complete."""
        if BIND_COMPLETED_ANNOTATION not in claim.metadata.annotations:
            claim = copy_object(claim)
            claim.metadata.annotations[BIND_COMPLETED_ANNOTATION] = "yes"
            claim = self.cluster.update(claim)
        if claim.status.phase == "Bound":
            return
        bound = copy_object(claim)
        bound.status.phase = "Bound"
        self.cluster.update_status(bound)

    # -- scheduler -------------------------------------------------------------------------------

    def schedule_pods(self) -> None:
        """kube-scheduler: bind each pending pod to the best node it fits, or say why not.

        Filters run in kube-scheduler's order (taints, node affinity, host ports, resources,
        volume limits, volume topology, topology spread, pod affinity); among the nodes that
        pass, the fullest wins (MostAllocated), moved by ScheduleAnyway spreads and
        preferred pod (anti-)affinity when the pod has them.
        """
        pending = [
            pod
            for pod in self.cluster.peek(Pod)
            if not pod.spec.node_name
            and _active(pod)
            and (pod.spec.scheduler_name or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
        ]
        if not pending:
            return
        pending.sort(
            key=lambda pod: (
                -(pod.spec.priority or 0),
                pod.metadata.creation_timestamp or self.clock.now(),
                pod.namespace,
                pod.name,
            )
        )
        nodes = list(self.cluster.peek(Node))
        states, filtered = self._node_states(nodes)
        active = [pod for pod in self.cluster.peek(Pod) if pod.status.phase not in TERMINAL_PHASES]
        run = _SchedulingPass(
            node_count=len(nodes),
            states=states,
            filtered=filtered,
            topology=PodTopology(nodes, active, self.cluster.peek(Namespace)),
        )
        if any(state.volume_limits for state in states):
            run.claims = {c.key: c for c in self.cluster.peek(PersistentVolumeClaim)}
            run.volumes = {v.name: v for v in self.cluster.peek(PersistentVolume)}
            run.storage_classes = {sc.name: sc for sc in self.cluster.peek(StorageClass)}
        for pod in pending:
            self._schedule_one(pod, run)

    def _node_states(self, nodes: Sequence[Node]) -> tuple[list[_NodeState], Counter[str]]:
        """Schedulable nodes with what is already on them, and why the others are skipped."""
        filtered: Counter[str] = Counter()
        states: dict[str, _NodeState] = {}
        csi_nodes = {csi.name: csi for csi in self.cluster.peek(CSINode)}
        for node in nodes:
            if node.spec.unschedulable or node.deleting:
                filtered[NODE_UNSCHEDULABLE] += 1
            elif not node.ready:
                filtered[NODE_NOT_READY] += 1
            else:
                states[node.name] = _NodeState(
                    node=node,
                    labels=node.metadata.labels,
                    taints=taints_from_api(node.spec.taints),
                    allocatable=parse_resources(node.status.allocatable),
                    volume_limits=node_volume_limits(csi_nodes.get(node.name)),
                )
        seen: set[str] = set()
        for pod in self.cluster.peek(Pod):
            uid = pod.metadata.uid or ""
            seen.add(uid)
            state = states.get(pod.spec.node_name or "")
            if state is None or pod.status.phase in TERMINAL_PHASES:
                continue
            for name, value in self._pod_requests(pod).items():
                state.requested[name] = state.requested.get(name, 0) + value
            state.ports.extend(pod_host_ports(pod))
            state.pods.append(pod)
        if len(self._requests) > 2 * len(seen) + 1000:
            self._requests = {uid: r for uid, r in self._requests.items() if uid in seen}
        return [states[name] for name in sorted(states)], filtered

    def _pod_requests(self, pod: Pod) -> ResourceList:
        """Pod requests, cached by UID (a pod's resources do not change once created)."""
        uid = pod.metadata.uid or ""
        cached = self._requests.get(uid)
        if cached is None:
            cached = pod_requests(pod)
            self._requests[uid] = cached
        return cached

    def _schedule_one(self, pod: Pod, run: _SchedulingPass) -> None:
        try:
            request = pod_request(pod)
        except RequirementError as error:
            self._mark_unschedulable(pod, f"invalid node affinity: {error}", 0, plain=True)
            return
        volumes = self._pod_volumes(pod, run)
        if isinstance(volumes, str):
            self._mark_unschedulable(pod, volumes, run.node_count)
            return
        if run.node_count == 0:
            self._mark_unschedulable(pod, NO_NODES, 0, plain=True)
            return
        constraints = run.topology.constraints(pod, request)
        limits = constraints.limits() if constraints is not None else ()
        wanted_cpu = request.requests.get(CPU, 0)
        wanted_memory = request.requests.get(MEMORY, 0)
        still_open: list[_NodeState] = []
        feasible: list[tuple[float, _NodeState]] = []
        for state in run.open_nodes(request):
            if request.host_ports and ports_conflict(request.host_ports, state.ports):
                continue
            if not _has_room(request.requests, state):
                continue
            still_open.append(state)
            if run.exceeds_volume_limits(state, volumes.usage):
                continue
            if volumes.selectors and any(
                not node_selector_matches(selector, state.labels, state.node.name)
                for selector, _ in volumes.selectors
            ):
                continue
            if constraints is not None and constraints.problem(state.labels, limits):
                continue
            feasible.append((_most_allocated_score(wanted_cpu, wanted_memory, state), state))
        run.keep_open(request, still_open)
        if not feasible:
            self._mark_unschedulable(
                pod, run.explain(pod, request, volumes, constraints), run.node_count
            )
            return
        chosen = _best(feasible, constraints)
        try:
            self.cluster.bind(pod.name, pod.namespace, chosen.node.name)
        except ClusterError:
            return  # someone else bound or deleted it meanwhile; the next pass sees it
        for name, value in request.requests.items():
            chosen.requested[name] = chosen.requested.get(name, 0) + value
        chosen.ports.extend(request.host_ports)
        chosen.pods.append(pod)
        if chosen.volume_usage is not None:
            chosen.volume_usage = add_usage(chosen.volume_usage, volumes.usage)
        run.topology.record(pod, chosen.node.name)
        run.binds += 1
        self._bind_pod_volumes(pod, chosen.node)

    def _pod_volumes(self, pod: Pod, run: _SchedulingPass) -> _PodVolumes | str:
        """What the pod's volumes ask of a node, or why the pod cannot be placed at all."""
        selectors: list[tuple[NodeSelector, str]] = []
        for volume in pod.spec.volumes:
            name = claim_name(pod, volume)
            if name is None:
                continue
            claim = self.cluster.get(PersistentVolumeClaim, name, pod.namespace)
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found'
            if volume.ephemeral is not None and _controller_uid(claim) != pod.metadata.uid:
                return (
                    f"PVC {pod.namespace}/{name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
            if claim.deleting:
                return f'persistentvolumeclaim "{name}" is being deleted'
            if claim.spec.volume_name:
                volume_object = self.cluster.get(PersistentVolume, claim.spec.volume_name)
                affinity = volume_object.spec.node_affinity if volume_object else None
                if affinity is not None and affinity.required is not None:
                    selectors.append((affinity.required, VOLUME_AFFINITY_CONFLICT))
                continue
            storage_class = self._storage_class(claim)
            if (
                storage_class is None
                or storage_class.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER
            ):
                return "pod has unbound immediate PersistentVolumeClaims"
            if storage_class.allowed_topologies:
                selectors.append(
                    (_allowed_topology_selector(storage_class), VOLUME_TOPOLOGY_MISMATCH)
                )
        usage: VolumeUsage = {}
        if run.claims and pod.spec.volumes:
            usage = pod_volume_usage(pod, run.claims, run.volumes, run.storage_classes)
        return _PodVolumes(selectors, usage)

    def _mark_unschedulable(
        self, pod: Pod, reasons: str, node_count: int, plain: bool = False
    ) -> None:
        """Record kube-scheduler's verdict on the pod, writing only when it changed."""
        if plain:
            message = reasons
        else:
            message = (
                f"0/{node_count} nodes are available: {reasons}. preemption: 0/{node_count} "
                f"nodes are available: {node_count} Preemption is not helpful for scheduling."
            )
        updated = copy_object(pod)
        if _set_pod_condition(
            updated, "PodScheduled", "False", self.clock, reason="Unschedulable", message=message
        ):
            self.cluster.update_status(updated)

    # -- kubelet ---------------------------------------------------------------------------------

    def run_static_kubelets(self) -> None:
        """Start pods on nodes KWOK does not simulate: Running and Ready once bound."""
        static = {
            node.name
            for node in self.cluster.peek(Node)
            if node.metadata.annotations.get(KWOK_NODE_ANNOTATION) != "fake"
        }
        starting = [
            pod
            for pod in self.cluster.peek(Pod)
            if pod.spec.node_name in static
            and _active(pod)
            and (pod.status.phase != "Running" or not _is_ready(pod))
        ]
        for pod in starting:
            started = copy_object(pod)
            started.status.phase = "Running"
            started.status.start_time = started.status.start_time or self.clock.now()
            _set_pod_condition(started, "Ready", "True", self.clock)
            self.cluster.update_status(started)


# -- helpers -------------------------------------------------------------------------------------


def _by_controller_objects(objects: Iterable[ReplicaSet]) -> dict[str, list[ReplicaSet]]:
    owned: dict[str, list[ReplicaSet]] = defaultdict(list)
    for obj in objects:
        uid = _controller_uid(obj)
        if uid is not None:
            owned[uid].append(obj)
    return owned


def _is_ready(pod: Pod) -> bool:
    condition = pod.condition("Ready")
    return condition is not None and condition.status == "True"


def _deletion_rank(pod: Pod) -> tuple[int, int, float, str]:
    """Sort key: the pod to delete first sorts first."""
    created = pod.metadata.creation_timestamp
    return (
        1 if pod.spec.node_name else 0,
        1 if pod.status.phase == "Running" else 0,
        -(created.timestamp() if created else 0.0),
        pod.name,
    )


def _ordinal(pod_name: str, set_name: str) -> int:
    suffix = pod_name[len(set_name) + 1 :]
    return int(suffix) if suffix.isdigit() else -1


def _daemon_matches_node(spec: PodSpec, node: Node) -> bool:
    labels = node.metadata.labels
    if any(labels.get(k) != v for k, v in spec.node_selector.items()):
        return False
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    return node_selector_matches(required, labels, node.name)


def _daemon_may_start(spec: PodSpec, node: Node) -> bool:
    if not _daemon_matches_node(spec, node):
        return False
    taints = [t for t in taints_from_api(node.spec.taints) if t.effect in (NO_SCHEDULE, NO_EXECUTE)]
    return tolerates_all(_tolerations(spec), taints) is None


def _daemon_may_stay(spec: PodSpec, node: Node) -> bool:
    if not _daemon_matches_node(spec, node):
        return False
    taints = [t for t in taints_from_api(node.spec.taints) if t.effect == NO_EXECUTE]
    return tolerates_all(_tolerations(spec), taints) is None


def _tolerations(spec: PodSpec) -> tuple[SchedulingToleration, ...]:
    return pod_tolerations(Pod(spec=spec))


def _waits_for_consumer(storage_class: StorageClass) -> bool:
    return storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER


def _first_allowed_zone(storage_class: StorageClass) -> str | None:
    for term in storage_class.allowed_topologies:
        for expression in term.match_label_expressions:
            if expression.key == ZONE_LABEL and expression.values:
                return expression.values[0]
    return None


def _allowed_topology_selector(storage_class: StorageClass) -> NodeSelector:
    return NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_expressions=[
                    NodeSelectorRequirement(key=e.key, operator="In", values=list(e.values))
                    for e in term.match_label_expressions
                ]
            )
            for term in storage_class.allowed_topologies
        ]
    )


def _shape(request: PodRequest) -> tuple[object, ...]:
    """What decides where a pod fits, without its identity: pods of one workload share it."""
    return (
        request.requirement_terms,
        request.tolerations,
        request.host_ports,
        tuple(sorted(request.requests.items())),
    )


def _topology_signature(pod: Pod) -> tuple[object, ...]:
    """What decides a pod's spread and pod-affinity verdicts, beside its shape."""
    spec = pod.spec
    return (
        pod.namespace,
        tuple(sorted(pod.metadata.labels.items())),
        tuple(c.model_dump_json() for c in spec.topology_spread_constraints),
        spec.affinity.model_dump_json() if spec.affinity is not None else None,
    )


def _best(
    feasible: Sequence[tuple[float, _NodeState]], constraints: PodConstraints | None
) -> _NodeState:
    """The highest-scoring node; the first in name order among equals."""
    if constraints is None or not constraints.has_preferences:
        return max(feasible, key=lambda pair: pair[0])[1]
    preferences = normalised_preferences(
        [constraints.raw_scores(state.labels) for _, state in feasible]
    )
    scored = [
        (MAX_NODE_SCORE * base + preference, state)
        for (base, state), preference in zip(feasible, preferences, strict=True)
    ]
    return max(scored, key=lambda pair: pair[0])[1]


def _has_room(requests: Mapping[str, int], state: _NodeState) -> bool:
    allocatable, requested = state.allocatable, state.requested
    for name, value in requests.items():
        if value > 0 and value > allocatable.get(name, 0) - requested.get(name, 0):
            return False
    return True


def _most_allocated_score(cpu: int, memory: int, state: _NodeState) -> float:
    """kube-scheduler's MostAllocated score: mean CPU and memory use after placing the pod."""
    total, counted = 0.0, 0
    for capacity, used in (
        (state.allocatable.get(CPU, 0), state.requested.get(CPU, 0) + cpu),
        (state.allocatable.get(MEMORY, 0), state.requested.get(MEMORY, 0) + memory),
    ):
        if capacity > 0:
            total += min(used, capacity) / capacity
            counted += 1
    return total / counted if counted else 0.0
