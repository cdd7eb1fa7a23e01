"""kube-scheduler: binds each pending pod to the best node it fits, or says why it cannot.

Filters run in kube-scheduler's order (taints, node affinity, host ports, resources, volume
limits, volume topology, topology spread, pod affinity); among the nodes that pass, the
fullest wins (MostAllocated), moved by ScheduleAnyway spreads and preferred pod
(anti-)affinity when the pod has them. A pod that fits nowhere gets kube-scheduler's
``PodScheduled=False`` condition with its per-node reasons, counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodewright.api.apps import CSINode, StorageClass
from nodewright.api.core import (
    Namespace,
    Node,
    NodeSelector,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
)
from nodewright.clock import Clock
from nodewright.cluster import ClusterError
from nodewright.cluster.memory import MemoryCluster, copy_object
from nodewright.scheduling.model import HostPort, PodRequest
from nodewright.scheduling.pods import (
    node_fit_problem,
    pod_host_ports,
    pod_request,
    pod_requests,
    ports_conflict,
    taints_from_api,
)
from nodewright.scheduling.requirements import RequirementError
from nodewright.scheduling.resources import CPU, MEMORY, ResourceList, parse_resources
from nodewright.scheduling.selectors import node_selector_matches
from nodewright.scheduling.taints import Taint
from nodewright.scheduling.volumes import (
    VolumeUsage,
    add_usage,
    claim_name,
    node_volume_limits,
    pod_volume_usage,
)
from nodewright.simulation.kubernetes.ownership import controller_uid
from nodewright.simulation.kubernetes.pods import TERMINAL_PHASES, is_active, set_pod_condition
from nodewright.simulation.kubernetes.podtopology import (
    MAX_NODE_SCORE,
    PodConstraints,
    PodTopology,
    SpreadLimit,
    normalised_preferences,
)
from nodewright.simulation.kubernetes.volumes import (
    WAIT_FOR_FIRST_CONSUMER,
    VolumeControllers,
    allowed_topology_selector,
)

DEFAULT_SCHEDULER = "default-scheduler"

# kube-scheduler's words for nodes it filtered before looking at the pod.
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NOT_READY = "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
VOLUME_AFFINITY_CONFLICT = "node(s) had volume node affinity conflict"
VOLUME_TOPOLOGY_MISMATCH = "node(s) didn't find available persistent volumes to bind"
VOLUME_LIMIT_EXCEEDED = "node(s) exceed max volume count"
NO_NODES = "no nodes available to schedule pods"


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


class KubeScheduler:
    """The default scheduler's decisions for pods that name it (or no scheduler)."""

    def __init__(self, cluster: MemoryCluster, clock: Clock, volumes: VolumeControllers) -> None:
        self.cluster = cluster
        self.clock = clock
        #: Binding provisions WaitForFirstConsumer volumes, as kube-scheduler's VolumeBinding.
        self.volumes = volumes
        self._requests: dict[str, ResourceList] = {}

    def reconcile(self) -> None:
        """Bind each pending pod to the best node it fits, or record why it fits nowhere."""
        pending = [
            pod
            for pod in self.cluster.peek(Pod)
            if not pod.spec.node_name
            and is_active(pod)
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
        self.volumes.bind_pod_volumes(pod, chosen.node)

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
            if volume.ephemeral is not None and controller_uid(claim) != pod.metadata.uid:
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
            storage_class = self.volumes.storage_class(claim)
            if (
                storage_class is None
                or storage_class.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER
            ):
                return "pod has unbound immediate PersistentVolumeClaims"
            if storage_class.allowed_topologies:
                selectors.append(
                    (allowed_topology_selector(storage_class), VOLUME_TOPOLOGY_MISMATCH)
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
        if set_pod_condition(
            updated, "PodScheduled", "False", self.clock, reason="Unschedulable", message=message
        ):
            self.cluster.update_status(updated)


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
