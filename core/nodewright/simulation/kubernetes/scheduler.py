"""kube-scheduler: binds each pending pod to the best node it fits, or says why it cannot.

Filters run in kube-scheduler's order (taints, node affinity, host ports, resources, volume
limits, volume topology, topology spread, pod affinity); among the nodes that pass, the
fullest wins (MostAllocated), moved by ScheduleAnyway spreads and preferred pod
(anti-)affinity when the pod has them. A pod that fits nowhere gets kube-scheduler's
``PodScheduled=False`` condition with its per-node reasons, counted.

Like kube-scheduler's queue, a pod found unschedulable is not tried again until something
happens that could change the answer: a node, a bound pod, a claim, a volume, a class or a
namespace changes (its message counts every node, so any of them may change it). A pass in
which nothing like that happened and no pod is new costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from nodewright.api.apps import CSINode, StorageClass
from nodewright.api.core import (
    Namespace,
    Node,
    NodeSelector,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    TopologySpreadConstraint,
)
from nodewright.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from nodewright.clock import Clock
from nodewright.cluster import ClusterError
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.state import Change, Key, is_terminal
from nodewright.controllers.provisioning.defaultspread import SELECTOR_SOURCES, DefaultSpread
from nodewright.scheduling.model import PodRequest
from nodewright.scheduling.pods import (
    AFFINITY_MISMATCH,
    has_dra_requirements,
    pod_request,
    ports_conflict,
)
from nodewright.scheduling.requirements import RequirementError
from nodewright.scheduling.resources import CPU, MEMORY
from nodewright.scheduling.selectors import node_selector_matches
from nodewright.scheduling.volumes import VolumeUsage, add_usage, claim_name, pod_volume_usage
from nodewright.simulation.kubernetes.assignedpods import AssignedPods
from nodewright.simulation.kubernetes.devices import (
    CANNOT_ALLOCATE,
    PodDevices,
    pod_devices,
    write_allocations,
)
from nodewright.simulation.kubernetes.nodestates import NodeState, NodeStates
from nodewright.simulation.kubernetes.ownership import controller_uid
from nodewright.simulation.kubernetes.pods import set_pod_condition
from nodewright.simulation.kubernetes.podtopology import PodConstraints, PodTopology
from nodewright.simulation.kubernetes.schedulingpass import (
    NO_VOLUMES,
    PodVolumes,
    SchedulingPass,
    ShapeViews,
    best,
    has_room,
    most_allocated_score,
    shape,
    topology_signature,
)
from nodewright.simulation.kubernetes.volumes import (
    WAIT_FOR_FIRST_CONSUMER,
    VolumeControllers,
    allowed_topology_selector,
)

DEFAULT_SCHEDULER = "default-scheduler"

VOLUME_AFFINITY_CONFLICT = "node(s) had volume node affinity conflict"
VOLUME_TOPOLOGY_MISMATCH = "node(s) didn't find available persistent volumes to bind"
NO_NODES = "no nodes available to schedule pods"

#: Kinds whose every change may change a pending pod's verdict or message.
_WORLD_KINDS = (Node, CSINode, PersistentVolumeClaim, PersistentVolume, StorageClass, Namespace)
#: Kinds that decide where a pod with DRA claims may go.
_DEVICE_KINDS = (ResourceSlice, ResourceClaim, DeviceClass)


@dataclass(frozen=True)
class _Prepared:
    """A pending pod read once: its queue position and what it asks of a node (or why that
    cannot be read). Kept while only this scheduler writes the pod (its status)."""

    order: tuple[int, datetime, str, str] | None
    request: PodRequest | None
    error: str | None
    shape: tuple[object, ...] | None
    #: The pod as scheduled, when default topology spreads were added to it.
    scheduled: Pod | None = None


class KubeScheduler:
    """The default scheduler's decisions for pods that name it (or no scheduler)."""

    def __init__(
        self,
        cluster: MemoryCluster,
        clock: Clock,
        volumes: VolumeControllers,
        default_spread: Sequence[TopologySpreadConstraint] = (),
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = cluster.state
        #: The PodTopologySpread plugin's default constraints (the same SCHEDULER_CONFIG that
        #: provisioning mirrors), for pods that declare no spread of their own.
        self._spread = DefaultSpread(self.state, default_spread)
        #: Binding provisions WaitForFirstConsumer volumes, as kube-scheduler's VolumeBinding.
        self.volumes = volumes
        self.nodes = NodeStates(self.state)
        self._shapes = ShapeViews()
        spread_sources = SELECTOR_SOURCES if default_spread else ()
        self._changes = self.state.feed(Pod, *_WORLD_KINDS, *_DEVICE_KINDS, *spread_sources)
        #: Bumped by every change that may change a pending pod's verdict or message.
        self._world = 0
        self._world_at_last_pass = -1
        #: pending pod -> the world it was last found unschedulable in
        self._verdicts: dict[Key, int] = {}
        #: pods bound in the last pass -> their nodes (their feed still shows them pending)
        self._just_bound: dict[Key, str] = {}
        #: pending pods that are new or changed since the last pass
        self._fresh: set[Key] = set(self.state.unbound_pods())
        self._prepared: dict[Key, _Prepared] = {}
        #: pod -> the resourceVersion of the status this scheduler last wrote for it
        self._written: dict[Key, str | None] = {}
        #: bound pods, as the topology checks read them
        self._assigned = AssignedPods(self.state.objects(Pod))
        #: namespace -> live pods in it (a namespace with pods has implicit labels)
        self._namespaces: dict[str, int] = {}
        for pod in self.state.objects(Pod).values():
            if not is_terminal(pod):
                self._namespaces[pod.namespace] = self._namespaces.get(pod.namespace, 0) + 1

    # -- following the cluster ----------------------------------------------------------------

    def _absorb(self, changes: list[Change]) -> None:
        just_bound, self._just_bound = self._just_bound, {}
        for change in changes:
            if change.kind is Pod:
                self._absorb_pod(
                    change.key,
                    cast("Pod | None", change.old),
                    cast("Pod | None", change.new),
                    just_bound.get(change.key),
                )
                continue
            if change.kind in SELECTOR_SOURCES:
                # A default spread's selector may change: read every pending pod again.
                self._spread.forget()
                self._prepared.clear()
                self._world += 1
                continue
            if change.kind is Node and not _node_differs(
                cast("Node | None", change.old), cast("Node | None", change.new)
            ):
                continue  # say a heartbeat: nothing the scheduler reads changed
            self._world += 1
            if change.kind is Node or change.kind is CSINode:
                self.nodes.node_changed(change.key[1])
            elif change.kind is not Namespace and change.kind not in _DEVICE_KINDS:
                self.nodes.forget_volume_usage()

    def _absorb_pod(self, key: Key, old: Pod | None, new: Pod | None, bound_to: str | None) -> None:
        """``bound_to``: the node this scheduler bound the pod to after the feed last saw it
        (the feed still reports it as pending, so whatever happened to it since is news)."""
        if bound_to is not None or _placed_differently(old, new):
            self._world += 1
            for pod in (old, new):
                if pod is not None and pod.spec.node_name:
                    self.nodes.pods_changed(pod.spec.node_name)
        if new is None or new.spec.node_name:
            self._verdicts.pop(key, None)
            self._prepared.pop(key, None)
            self._written.pop(key, None)
            self._fresh.discard(key)
        elif self._written.get(key) != new.metadata.resource_version or old is None:
            self._fresh.add(key)  # a pending pod someone else wrote: look at it again
            self._verdicts.pop(key, None)
            self._prepared.pop(key, None)
        if new is None and old is not None:
            self.nodes.pod_gone(old)
        self._assigned.update(key, new)
        before = None if old is None or is_terminal(old) else old.namespace
        after = None if new is None or is_terminal(new) else new.namespace
        if before != after:
            self._count_namespace(before, -1)
            self._count_namespace(after, 1)

    def _count_namespace(self, namespace: str | None, sign: int) -> None:
        if namespace is None:
            return
        count = self._namespaces.get(namespace, 0) + sign
        if count:
            self._namespaces[namespace] = count
        else:
            del self._namespaces[namespace]
        if count == (1 if sign > 0 else 0):
            self._world += 1  # the namespace appeared or went: namespace selectors see it

    # -- a pass -------------------------------------------------------------------------------

    def reconcile(self) -> None:
        """Bind each pending pod to the best node it fits, or record why it fits nowhere."""
        self._absorb(self._changes.drain())
        if self._world == self._world_at_last_pass and not self._fresh:
            return
        self._fresh.clear()
        queue = self._queue()
        if queue:
            self.nodes.refresh()
            run = self._new_pass()
            for _, key, pod, prepared in queue:
                if self._verdicts.get(key) != self._world:
                    self._schedule_one(key, pod, prepared, run)
                elif prepared.shape is not None:
                    self._shapes.used.add(prepared.shape)  # still pending: keep its views
            self._shapes.forget_unused()
        self._world_at_last_pass = self._world

    def _queue(self) -> list[tuple[tuple[int, datetime, str, str], Key, Pod, _Prepared]]:
        """Pending pods in kube-scheduler's order: priority, then age, then name."""
        now = self.clock.now()
        queue: list[tuple[tuple[int, datetime, str, str], Key, Pod, _Prepared]] = []
        for key, pod in self.state.unbound_pods().items():
            if pod.deleting or (pod.spec.scheduler_name or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
                continue
            prepared = self._prepared.get(key)
            if prepared is None:
                prepared = self._prepared[key] = _prepare(pod, self._spread)
            queue.append((prepared.order or _order(pod, now), key, pod, prepared))
        queue.sort(key=_position)
        return queue

    def _new_pass(self) -> SchedulingPass:
        states = self.nodes.schedulable()
        run = SchedulingPass(
            node_count=len(self.state.objects(Node)),
            nodes=self.nodes,
            states=states,
            filtered=self.nodes.skipped(),
            topology_source=self._topology,
            shapes=self._shapes,
        )
        if self.nodes.any_volume_limits():
            run.claims = {c.key: c for c in self.state.sorted(PersistentVolumeClaim)}
            run.volumes = {v.name: v for v in self.state.sorted(PersistentVolume)}
            run.storage_classes = {sc.name: sc for sc in self.state.sorted(StorageClass)}
        return run

    def _topology(self) -> PodTopology:
        return PodTopology(
            list(self.state.sorted(Node)),
            self._assigned.pods(),
            self._assigned.repelling(),
            self.state.sorted(Namespace),
            self._namespaces,
        )

    def _schedule_one(self, key: Key, pod: Pod, prepared: _Prepared, run: SchedulingPass) -> None:
        request = prepared.request
        if request is None:
            self._mark_unschedulable(key, pod, prepared.error or "", 0, plain=True)
            return
        stored, pod = pod, prepared.scheduled or pod
        volumes = self._pod_volumes(pod, run)
        if isinstance(volumes, str):
            self._mark_unschedulable(key, stored, volumes, run.node_count)
            return
        by_field = _field_affinity(pod)
        if by_field is not None:
            # Node affinity by the node's name (a daemon pod's): checked node by node, as the
            # pod's shape knows labels only.
            volumes = PodVolumes([*volumes.selectors, (by_field, AFFINITY_MISMATCH)], volumes.usage)
        if run.node_count == 0:
            self._mark_unschedulable(key, stored, NO_NODES, 0, plain=True)
            return
        devices: PodDevices | None = None
        if has_dra_requirements(pod):
            found = pod_devices(pod, self.cluster)
            if isinstance(found, str):
                self._mark_unschedulable(key, stored, found, 0, plain=True)
                return
            devices = found
        constraints = None
        if self._assigned.any_repelling() or _has_pod_constraints(pod):
            constraints = run.topology.constraints(pod, request)
        refused: list[str] = []
        if constraints is None and volumes.none and devices is None:
            chosen = run.fitting(request).best()
        elif constraints is not None and constraints.lasting and volumes.none and devices is None:
            chosen = run.viable(request, topology_signature(pod)).best_for(constraints)
        else:
            chosen = _best_by_scan(
                request, volumes, constraints, run, devices=devices, refused=refused
            )
        if chosen is None:
            reasons = run.explain(pod, request, volumes, constraints)
            if refused:
                reasons = f"{len(refused)} {CANNOT_ALLOCATE}" + (f", {reasons}" if reasons else "")
            self._mark_unschedulable(key, stored, reasons, run.node_count)
            return
        try:
            self.cluster.bind(pod.name, pod.namespace, chosen.node.name)
        except ClusterError:
            self._fresh.add(key)  # someone else bound or deleted it meanwhile; look again
            return
        if chosen.volume_usage is not None:
            chosen.volume_usage = add_usage(chosen.volume_usage, volumes.usage)
        run.place(chosen, request, pod)
        # A feed reports the pod as last drained (pending), so the change that later moves or
        # removes it may not name this node: the node is rebuilt from the cluster next pass.
        self.nodes.pods_changed(chosen.name)
        self._just_bound[key] = chosen.name
        self._world += 1
        # Counted at once: a pass builds its topology when a pod first needs it, and its
        # anti-affinity repels pods later in this pass already.
        self._assigned.update(key, self.state.get(Pod, key))
        self.volumes.bind_pod_volumes(pod, chosen.node)
        if devices is not None:
            write_allocations(self.cluster, pod, devices, chosen.name)

    def _pod_volumes(self, pod: Pod, run: SchedulingPass) -> PodVolumes | str:
        """What the pod's volumes ask of a node, or why the pod cannot be placed at all."""
        if not pod.spec.volumes:
            return NO_VOLUMES
        selectors: list[tuple[NodeSelector, str]] = []
        for volume in pod.spec.volumes:
            name = claim_name(pod, volume)
            if name is None:
                continue
            claim = self.state.get(PersistentVolumeClaim, (pod.namespace, name))
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
                volume_object = self.state.get(PersistentVolume, ("", claim.spec.volume_name))
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
        if run.claims:
            usage = pod_volume_usage(pod, run.claims, run.volumes, run.storage_classes)
        return PodVolumes(selectors, usage)

    def _mark_unschedulable(
        self, key: Key, pod: Pod, reasons: str, node_count: int, plain: bool = False
    ) -> None:
        """Record kube-scheduler's verdict on the pod, writing only when it changed."""
        self._verdicts[key] = self._world
        if plain:
            message = reasons
        else:
            message = (
                f"0/{node_count} nodes are available: {reasons}. preemption: 0/{node_count} "
                f"nodes are available: {node_count} Preemption is not helpful for scheduling."
            )
        current = pod.condition("PodScheduled")
        if current is not None and (current.status, current.reason, current.message) == (
            "False",
            "Unschedulable",
            message,
        ):
            return  # what set_pod_condition would find: nothing to write
        updated = pod.status_copy()  # only the status is written
        if set_pod_condition(
            updated, "PodScheduled", "False", self.clock, reason="Unschedulable", message=message
        ):
            written = self.cluster.update_status(updated)
            self._written[key] = written.metadata.resource_version


def _prepare(pod: Pod, spread: DefaultSpread) -> _Prepared:
    created = pod.metadata.creation_timestamp
    order = None
    if created is not None:
        order = (-(pod.spec.priority or 0), created, pod.namespace, pod.name)
    scheduled = spread.apply(pod)
    try:
        request = pod_request(scheduled)
    except RequirementError as error:
        return _Prepared(order, None, f"invalid node affinity: {error}", None)
    return _Prepared(
        order, request, None, shape(request), scheduled if scheduled is not pod else None
    )


def _position(
    entry: tuple[tuple[int, datetime, str, str], Key, Pod, _Prepared],
) -> tuple[int, datetime, str, str]:
    return entry[0]


def _order(pod: Pod, now: datetime) -> tuple[int, datetime, str, str]:
    """The queue position of a pod without a creation time (it sorts as created now)."""
    return (-(pod.spec.priority or 0), now, pod.namespace, pod.name)


def _has_pod_constraints(pod: Pod) -> bool:
    """The pod spreads, or states pod (anti-)affinity: its placement depends on other pods."""
    affinity = pod.spec.affinity
    return bool(
        pod.spec.topology_spread_constraints
        or (affinity is not None and (affinity.pod_affinity or affinity.pod_anti_affinity))
    )


def _node_differs(old: Node | None, new: Node | None) -> bool:
    """The change moves something the scheduler reads from a node (its pod topology too)."""
    if old is None or new is None:
        return True
    return (
        old.metadata.labels != new.metadata.labels
        or old.deleting != new.deleting
        or old.ready != new.ready
        or old.spec != new.spec
        or old.status.allocatable != new.status.allocatable
    )


def _placed_differently(old: Pod | None, new: Pod | None) -> bool:
    """The change moves what a bound pod takes from its node or means to other pods."""
    old_bound = old is not None and bool(old.spec.node_name)
    new_bound = new is not None and bool(new.spec.node_name)
    if not old_bound and not new_bound:
        return False
    if old is None or new is None or old_bound != new_bound:
        return True
    return (
        is_terminal(old) != is_terminal(new)
        or old.deleting != new.deleting
        or old.namespace != new.namespace
        or old.metadata.labels != new.metadata.labels
        or (old.spec is not new.spec and old.spec != new.spec)
    )


def _field_affinity(pod: Pod) -> NodeSelector | None:
    """The pod's required node affinity when a term of it names nodes by field."""
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required is not None and any(t.match_fields for t in required.node_selector_terms):
        return required
    return None


def _best_by_scan(
    request: PodRequest,
    volumes: PodVolumes,
    constraints: PodConstraints | None,
    run: SchedulingPass,
    *,
    devices: PodDevices | None = None,
    refused: list[str] | None = None,
) -> NodeState | None:
    """The best node for a pod whose volumes, neighbours or DRA claims decide too: every node
    still open to its shape is checked (those whose devices cannot meet the claims are added
    to ``refused``)."""
    limits = constraints.limits() if constraints is not None else ()
    wanted_cpu = request.requests.get(CPU, 0)
    wanted_memory = request.requests.get(MEMORY, 0)
    still_open: list[NodeState] = []
    feasible: list[tuple[float, NodeState]] = []
    for node_state in run.open_nodes(request):
        if request.host_ports and ports_conflict(request.host_ports, node_state.ports):
            continue
        if not has_room(request.requests, node_state):
            continue
        still_open.append(node_state)
        if run.exceeds_volume_limits(node_state, volumes.usage):
            continue
        if volumes.selectors and any(
            not node_selector_matches(selector, node_state.labels, node_state.node.name)
            for selector, _ in volumes.selectors
        ):
            continue
        if constraints is not None and constraints.problem(node_state.labels, limits):
            continue
        if devices is not None and not devices.fits(node_state.name, node_state.labels):
            if refused is not None:
                refused.append(node_state.name)
            continue
        feasible.append((most_allocated_score(wanted_cpu, wanted_memory, node_state), node_state))
    run.keep_open(request, still_open)
    return best(feasible, constraints) if feasible else None
