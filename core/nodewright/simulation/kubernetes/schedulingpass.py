"""One kube-scheduler pass over the pending pods: which nodes fit a pod, the best of them,
and why none does.

Pods of one workload share requests, tolerations and node requirements (a *shape*). Within a
pass nodes only fill up, so per shape the nodes that admit it are worked out once, the nodes
with room are kept best first in a heap (:class:`FittingNodes`), and the explanation for a
pod that fits nowhere is kept and brought up to date node by node as pods are bound.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api.apps import StorageClass
from nodewright.api.core import NodeSelector, PersistentVolume, PersistentVolumeClaim, Pod
from nodewright.scheduling.model import PodRequest
from nodewright.scheduling.pods import node_fit_problem, ports_conflict
from nodewright.scheduling.resources import CPU, MEMORY
from nodewright.scheduling.selectors import node_selector_matches
from nodewright.scheduling.volumes import VolumeUsage, add_usage, pod_volume_usage
from nodewright.simulation.kubernetes.nodestates import NodeState, NodeStates
from nodewright.simulation.kubernetes.podtopology import (
    MAX_NODE_SCORE,
    PodConstraints,
    PodTopology,
    SpreadLimit,
    normalised_preferences,
)

VOLUME_LIMIT_EXCEEDED = "node(s) exceed max volume count"


@dataclass(frozen=True)
class PodVolumes:
    """What kube-scheduler's volume filters need from one pod."""

    #: Node selectors of its volumes, each with the reason a node that fails it is given.
    selectors: list[tuple[NodeSelector, str]]
    #: CSI driver -> claims the pod attaches, for NodeVolumeLimits.
    usage: VolumeUsage

    @property
    def none(self) -> bool:
        """The pod's volumes (if any) ask nothing of a node."""
        return not self.selectors and not self.usage


NO_VOLUMES = PodVolumes([], {})


class FittingNodes:
    """The nodes with room for one shape, best first: highest MostAllocated score, then name.

    Kept from pass to pass. An entry goes stale when its node's state is rebuilt or given a
    pod (:attr:`NodeStates.log` names it); the node is pushed again with its new score while it
    has room, and stale entries are dropped when they reach the top.
    """

    def __init__(self, request: PodRequest, nodes: NodeStates) -> None:
        self.request = request
        self.nodes = nodes
        self.cpu = request.requests.get(CPU, 0)
        self.memory = request.requests.get(MEMORY, 0)
        self._synced = len(nodes.log)
        self._pushed = itertools.count()  # entries of one node never compare their states
        self._heap: list[tuple[float, str, int, int, NodeState]] = [
            self._entry(node_state)
            for node_state in nodes.admitting(request)
            if self._fits(node_state)
        ]
        heapq.heapify(self._heap)

    def _fits(self, node_state: NodeState) -> bool:
        request = self.request
        if request.host_ports and ports_conflict(request.host_ports, node_state.ports):
            return False
        return has_room(request.requests, node_state)

    def _entry(self, node_state: NodeState) -> tuple[float, str, int, int, NodeState]:
        score = most_allocated_score(self.cpu, self.memory, node_state)
        return (-score, node_state.name, next(self._pushed), node_state.version, node_state)

    def _sync(self) -> None:
        nodes = self.nodes
        if self._synced == len(nodes.log):
            return
        for name in nodes.changed_since(self._synced):
            node_state = nodes.current(name)
            if (
                node_state is not None
                and nodes.admits(self.request, node_state)
                and self._fits(node_state)
            ):
                heapq.heappush(self._heap, self._entry(node_state))
        self._synced = len(nodes.log)
        if len(self._heap) > 64 and len(self._heap) > 4 * nodes.schedulable_count():
            self._heap = [entry for entry in self._heap if self._live(entry)]
            heapq.heapify(self._heap)

    def _live(self, entry: tuple[float, str, int, int, NodeState]) -> bool:
        _, name, _, version, node_state = entry
        return version == node_state.version and self.nodes.current(name) is node_state

    def best(self) -> NodeState | None:
        self._sync()
        heap = self._heap
        while heap:
            if self._live(heap[0]):
                return heap[0][4]
            heapq.heappop(heap)
        return None


class ViableNodes(FittingNodes):
    """Within one pass, the nodes with room for one shape that pods of one topology signature
    have not ruled out, best first: for pods whose other pods only rule nodes out for good
    within a pass (required anti-affinity, and the anti-affinity of pods already placed, whose
    counts only grow as pods are bound; see :meth:`PodConstraints.lasting`). A node such a pod
    refuses is dropped, so each pod looks at the best node left rather than at every node.
    """

    def best_for(self, constraints: PodConstraints) -> NodeState | None:
        """The best node none of ``constraints`` rejects (the first in name order among
        equal scores, as a scan of every node finds it)."""
        self._sync()
        heap = self._heap
        while heap:
            entry = heap[0]
            if self._live(entry) and constraints.problem(entry[4].labels, ()) is None:
                return entry[4]
            heapq.heappop(heap)
        return None


class ShapeExplanation:
    """kube-scheduler's per-node reasons for a pod whose verdict rests on its shape alone,
    kept from pass to pass and brought up to date for the nodes that changed since."""

    def __init__(self, request: PodRequest, nodes: NodeStates) -> None:
        self.request = request
        self.nodes = nodes
        self._problems: dict[str, str | None] = {}
        self._reasons: Counter[str] = Counter()
        for node_state in nodes.schedulable():
            self._set(node_state.name, self._problem(node_state))
        self._synced = len(nodes.log)

    def _problem(self, node_state: NodeState) -> str | None:
        return node_fit_problem(
            self.request,
            node_state.labels,
            node_state.taints,
            node_state.allocatable,
            node_state.requested,
            node_state.ports,
        )

    def _set(self, name: str, problem: str | None) -> None:
        self._problems[name] = problem
        _count(self._reasons, problem, 1)

    def summary(self, filtered: Counter[str]) -> str:
        nodes = self.nodes
        if self._synced < len(nodes.log):
            for name in nodes.changed_since(self._synced):
                if name in self._problems:
                    _count(self._reasons, self._problems.pop(name), -1)
                node_state = nodes.current(name)
                if node_state is not None:
                    self._set(name, self._problem(node_state))
            self._synced = len(nodes.log)
        return _summary(filtered + self._reasons)


@dataclass
class ShapeViews:
    """Per shape, the views the scheduler keeps from pass to pass; shapes no pending pod had
    in a pass are dropped at its end."""

    fitting: dict[tuple[object, ...], FittingNodes] = field(default_factory=dict)
    explanations: dict[tuple[object, ...], ShapeExplanation] = field(default_factory=dict)
    used: set[tuple[object, ...]] = field(default_factory=set)

    def forget_unused(self) -> None:
        for views in (self.fitting, self.explanations):
            for key in [key for key in views if key not in self.used]:
                del views[key]
        self.used.clear()


@dataclass
class SchedulingPass:
    """One scheduling pass over the pending pods, with caches for pods that look alike."""

    node_count: int
    nodes: NodeStates
    states: list[NodeState]
    filtered: Counter[str]
    topology_source: Callable[[], PodTopology]
    shapes: ShapeViews
    claims: Mapping[str, PersistentVolumeClaim] = field(default_factory=dict)
    volumes: Mapping[str, PersistentVolume] = field(default_factory=dict)
    storage_classes: Mapping[str, StorageClass] = field(default_factory=dict)
    binds: int = 0
    _topology: PodTopology | None = None
    _admitting: dict[tuple[object, ...], list[NodeState]] = field(default_factory=dict)
    _open: dict[tuple[object, ...], list[NodeState]] = field(default_factory=dict)
    _viable: dict[tuple[object, ...], ViableNodes] = field(default_factory=dict)
    _explanations: dict[tuple[object, ...], tuple[int, str]] = field(default_factory=dict)

    @property
    def topology(self) -> PodTopology:
        """Where pods run, for spread and pod affinity; built the first time a pod asks."""
        if self._topology is None:
            self._topology = self.topology_source()
        return self._topology

    def admitting(self, request: PodRequest) -> list[NodeState]:
        """Nodes whose taints and labels admit the pod, whatever they already run."""
        key = (request.requirement_terms, request.tolerations)
        nodes = self._admitting.get(key)
        if nodes is None:
            nodes = self._admitting[key] = self.nodes.admitting(request)
        return nodes

    def open_nodes(self, request: PodRequest) -> list[NodeState]:
        """Admitting nodes that still had room for a pod of this shape at the last look.

        Within a pass nodes only fill up, so a node once too full for a shape stays so.
        """
        nodes = self._open.get(shape(request))
        return self.admitting(request) if nodes is None else nodes

    def keep_open(self, request: PodRequest, nodes: list[NodeState]) -> None:
        self._open[shape(request)] = nodes

    def viable(self, request: PodRequest, signature: tuple[object, ...]) -> ViableNodes:
        """The nodes pods of this shape and topology signature have not ruled out in this
        pass (:class:`ViableNodes`)."""
        key = (*shape(request), signature)
        viable = self._viable.get(key)
        if viable is None:
            viable = self._viable[key] = ViableNodes(request, self.nodes)
        return viable

    def fitting(self, request: PodRequest) -> FittingNodes:
        """The nodes with room for the pod's shape, best first."""
        key = shape(request)
        self.shapes.used.add(key)
        fitting = self.shapes.fitting.get(key)
        if fitting is None:
            fitting = self.shapes.fitting[key] = FittingNodes(request, self.nodes)
        return fitting

    def place(self, node_state: NodeState, request: PodRequest, pod: Pod) -> None:
        """Count a pod bound to ``node_state`` in everything the pass keeps."""
        self.nodes.place(node_state, request, pod)
        if self._topology is not None:
            self._topology.record(pod, node_state.name)
        self.binds += 1

    def volume_usage(self, node_state: NodeState) -> dict[str, frozenset[str]]:
        """The claims the node's pods attach, per CSI driver."""
        if node_state.volume_usage is None:
            node_state.volume_usage = add_usage(
                *(
                    pod_volume_usage(pod, self.claims, self.volumes, self.storage_classes)
                    for pod in node_state.pods
                )
            )
        return node_state.volume_usage

    def exceeds_volume_limits(self, node_state: NodeState, usage: VolumeUsage) -> bool:
        """NodeVolumeLimits: the node cannot attach the pod's new claims."""
        if not usage or not node_state.volume_limits:
            return False
        used = self.volume_usage(node_state)
        for driver, claims in usage.items():
            limit = node_state.volume_limits.get(driver)
            if limit is not None and len(used.get(driver, frozenset()) | claims) > limit:
                return True
        return False

    def problem(
        self,
        node_state: NodeState,
        request: PodRequest,
        volumes: PodVolumes,
        constraints: PodConstraints | None,
        limits: Sequence[SpreadLimit],
    ) -> str | None:
        """The first of kube-scheduler's filters that rejects the node, or None."""
        problem = node_fit_problem(
            request,
            node_state.labels,
            node_state.taints,
            node_state.allocatable,
            node_state.requested,
            node_state.ports,
        )
        if problem is not None:
            return problem
        if self.exceeds_volume_limits(node_state, volumes.usage):
            return VOLUME_LIMIT_EXCEEDED
        for selector, reason in volumes.selectors:
            if not node_selector_matches(selector, node_state.labels, node_state.node.name):
                return reason
        if constraints is not None:
            return constraints.problem(node_state.labels, limits)
        return None

    def explain(
        self,
        pod: Pod,
        request: PodRequest,
        volumes: PodVolumes,
        constraints: PodConstraints | None,
    ) -> str:
        """kube-scheduler's per-node reasons, counted and sorted (``1 Insufficient cpu, ...``)."""
        if volumes.none and constraints is None:
            return self._explain_shape(request)
        key: tuple[object, ...] | None = None
        if volumes.none:
            key = (*shape(request), topology_signature(pod))
            cached = self._explanations.get(key)
            if cached is not None and cached[0] == self.binds:
                return cached[1]
        limits = constraints.limits() if constraints is not None else ()
        reasons = Counter(self.filtered)
        for node_state in self.states:
            problem = self.problem(node_state, request, volumes, constraints, limits)
            if problem is not None:
                for reason in problem.split(", "):
                    reasons[reason] += 1
        summary = _summary(reasons)
        if key is not None:
            self._explanations[key] = (self.binds, summary)
        return summary

    def _explain_shape(self, request: PodRequest) -> str:
        """The explanation for a pod whose verdict rests on its shape alone."""
        key = shape(request)
        self.shapes.used.add(key)
        explanation = self.shapes.explanations.get(key)
        if explanation is None:
            explanation = self.shapes.explanations[key] = ShapeExplanation(request, self.nodes)
        return explanation.summary(self.filtered)


def _count(reasons: Counter[str], problem: str | None, sign: int) -> None:
    if problem is None:
        return
    for reason in problem.split(", "):
        reasons[reason] += sign
        if not reasons[reason]:
            del reasons[reason]


def _summary(reasons: Counter[str]) -> str:
    return ", ".join(sorted(f"{count} {reason}" for reason, count in reasons.items()))


def shape(request: PodRequest) -> tuple[object, ...]:
    """What decides where a pod fits, without its identity: pods of one workload share it."""
    return (
        request.requirement_terms,
        request.tolerations,
        request.host_ports,
        tuple(sorted(request.requests.items())),
    )


def topology_signature(pod: Pod) -> tuple[object, ...]:
    """What decides a pod's spread and pod-affinity verdicts, beside its shape."""
    spec = pod.spec
    return (
        pod.namespace,
        tuple(sorted(pod.metadata.labels.items())),
        tuple(c.model_dump_json() for c in spec.topology_spread_constraints),
        spec.affinity.model_dump_json() if spec.affinity is not None else None,
    )


def best(
    feasible: Sequence[tuple[float, NodeState]], constraints: PodConstraints | None
) -> NodeState:
    """The highest-scoring node; the first in name order among equals."""
    if constraints is None or not constraints.has_preferences:
        return max(feasible, key=lambda pair: pair[0])[1]
    preferences = normalised_preferences(
        [constraints.raw_scores(node_state.labels) for _, node_state in feasible]
    )
    scored = [
        (MAX_NODE_SCORE * base + preference, node_state)
        for (base, node_state), preference in zip(feasible, preferences, strict=True)
    ]
    return max(scored, key=lambda pair: pair[0])[1]


def has_room(requests: Mapping[str, int], node_state: NodeState) -> bool:
    allocatable, requested = node_state.allocatable, node_state.requested
    for name, value in requests.items():
        if value > 0 and value > allocatable.get(name, 0) - requested.get(name, 0):
            return False
    return True


def most_allocated_score(cpu: int, memory: int, node_state: NodeState) -> float:
    """kube-scheduler's MostAllocated score: mean CPU and memory use after placing the pod."""
    total, counted = 0.0, 0
    for capacity, used in (
        (node_state.allocatable.get(CPU, 0), node_state.requested.get(CPU, 0) + cpu),
        (node_state.allocatable.get(MEMORY, 0), node_state.requested.get(MEMORY, 0) + memory),
    ):
        if capacity > 0:
            total += min(used, capacity) / capacity
            counted += 1
    return total / counted if counted else 0.0
