"""The DaemonSet controller: one pod per eligible node, bound directly; a pod with DRA claims
is left to the scheduler, pinned to its node, as a real cluster does with every daemon pod."""

from __future__ import annotations

from collections import defaultdict
from typing import cast

from nodewright.api.apps import DaemonSet
from nodewright.api.core import (
    Affinity,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodCondition,
    PodSpec,
    Toleration,
)
from nodewright.clock import Clock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import Key, object_key
from nodewright.scheduling.pods import has_dra_requirements, pod_tolerations, taints_from_api
from nodewright.scheduling.selectors import node_selector_matches
from nodewright.scheduling.taints import NO_EXECUTE, NO_SCHEDULE, tolerates_all
from nodewright.scheduling.taints import Toleration as SchedulingToleration
from nodewright.simulation.kubernetes.ownership import controller_key, pod_from_template
from nodewright.simulation.kubernetes.pods import is_active
from nodewright.simulation.kubernetes.revisions import Revisions

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


#: The node field a daemon pod's node affinity names its node by.
_NAME_FIELD = "metadata.name"


class DaemonSetController:
    """Places each DaemonSet's pods itself, without the scheduler (a shortcut: upstream
    creates every daemon pod with a node affinity to its node and lets the scheduler bind it).
    A pod with DRA claims is created that way, pending: its claims are made from their
    templates and the scheduler allocates them from the node's devices as it binds the pod,
    which stays pending on a node whose devices cannot meet them.

    A pass looks only at what changed since the last: a changed DaemonSet against every node,
    a changed node against every DaemonSet, and a changed daemon pod's node for its DaemonSet.
    """

    def __init__(self, cluster: MemoryCluster, clock: Clock, revisions: Revisions) -> None:
        self.cluster = cluster
        self.clock = clock
        self.revisions = revisions
        self.state = cluster.state
        self._changes = self.state.feed(DaemonSet, Node, Pod)
        self._started = False
        #: (DaemonSet, node) pairs it placed a pod on: looked at again next pass, as a feed
        #: leaves no trace of a pod created after its last drain and deleted before the next.
        self._requeued: dict[Key, set[str]] = {}

    def reconcile(self) -> None:
        """One pod per eligible node, bound directly; pods leave nodes that stop qualifying."""
        affected = self._affected()
        if not affected:
            return
        for key in sorted(affected):
            ds = self.state.get(DaemonSet, key)
            if ds is None or ds.deleting:
                continue
            spec = _daemon_pod_spec(ds)
            revision = self.revisions.labels(ds)
            placed: dict[str, list[Pod]] = defaultdict(list)
            for pod in self.state.controlled_by(Pod, ds.metadata.uid or "").values():
                if not pod.deleting:
                    placed[_node_of(pod)].append(pod)
            names = affected[key]
            if names is None:  # the DaemonSet changed: every node, every placed pod
                nodes = [node for node in self.state.sorted(Node) if not node.deleting]
                candidates = set(placed)
            else:
                live = (self.state.get(Node, ("", name)) for name in sorted(names))
                nodes = [node for node in live if node is not None and not node.deleting]
                candidates = names
            for node in nodes:
                running = sorted(
                    (pod for pod in placed.get(node.name, []) if is_active(pod)),
                    key=object_key,
                )
                if running:
                    if not _may_stay(spec, node):
                        for pod in running:
                            self.cluster.delete(Pod, pod.name, pod.namespace)
                    continue
                if not _may_start(spec, node):
                    continue
                pod = pod_from_template(
                    ds.spec.template,
                    ds,
                    generate_name=f"{ds.name}-",
                    labels=revision,
                )
                pod.spec = mutable(spec)
                if has_dra_requirements(pod):
                    _pin(pod.spec, node.name)
                else:
                    pod.spec.node_name = node.name
                    pod.status.conditions.append(
                        PodCondition(
                            type="PodScheduled",
                            status="True",
                            last_transition_time=self.clock.now(),
                        )
                    )
                self.cluster.create(pod)
                self._requeued.setdefault(key, set()).add(node.name)
            node_names = {node.name for node in nodes}
            for node_name in sorted(candidates):
                if node_name in placed and node_name not in node_names:
                    for pod in sorted(placed[node_name], key=object_key):
                        self.cluster.delete(Pod, pod.name, pod.namespace)

    def _affected(self) -> dict[Key, set[str] | None]:
        """DaemonSet key -> names of the nodes to look at (None: all of them)."""
        changes = self._changes.drain()
        affected: dict[Key, set[str] | None] = dict(self._requeued)
        self._requeued = {}
        if not self._started:
            self._started = True
            return dict.fromkeys(self.state.objects(DaemonSet))

        def look_at(key: Key, node_name: str) -> None:
            names = affected.setdefault(key, set())
            if names is not None:
                names.add(node_name)

        daemon_sets = self.state.objects(DaemonSet)
        for change in changes:
            if change.kind is DaemonSet:
                affected[change.key] = None
            elif change.kind is Node:
                for key in daemon_sets:
                    look_at(key, change.key[1])
            else:
                for pod in (change.old, change.new):
                    owner = None if pod is None else controller_key(pod, DaemonSet)
                    if pod is not None and owner is not None:
                        look_at(owner, _node_of(cast(Pod, pod)))
        return affected


def _pin(spec: PodSpec, node_name: str) -> None:
    """Require ``node_name`` by its name, replacing the required node affinity terms (the
    node matched them already), as the DaemonSet controller does."""
    term = NodeSelectorTerm(
        match_fields=[NodeSelectorRequirement(key=_NAME_FIELD, operator="In", values=[node_name])]
    )
    if spec.affinity is None:
        spec.affinity = Affinity()
    if spec.affinity.node_affinity is None:
        spec.affinity.node_affinity = NodeAffinity()
    spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution = NodeSelector(
        node_selector_terms=[term]
    )


def _node_of(pod: Pod) -> str:
    """The node a daemon pod runs on, or is pinned to while it waits for the scheduler."""
    if pod.spec.node_name:
        return pod.spec.node_name
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    for term in required.node_selector_terms if required else ():
        for field in term.match_fields:
            if field.key == _NAME_FIELD and field.operator == "In" and len(field.values) == 1:
                return field.values[0]
    return ""


def _daemon_pod_spec(ds: DaemonSet) -> PodSpec:
    spec = ds.spec.template.spec.model_copy(deep=True)
    present = {(t.key, t.effect) for t in spec.tolerations}
    spec.tolerations.extend(
        t.model_copy() for t in DAEMON_TOLERATIONS if (t.key, t.effect) not in present
    )
    return spec


def _matches_node(spec: PodSpec, node: Node) -> bool:
    labels = node.metadata.labels
    if any(labels.get(k) != v for k, v in spec.node_selector.items()):
        return False
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    return node_selector_matches(required, labels, node.name)


def _may_start(spec: PodSpec, node: Node) -> bool:
    if not _matches_node(spec, node):
        return False
    taints = [t for t in taints_from_api(node.spec.taints) if t.effect in (NO_SCHEDULE, NO_EXECUTE)]
    return tolerates_all(_tolerations(spec), taints) is None


def _may_stay(spec: PodSpec, node: Node) -> bool:
    if not _matches_node(spec, node):
        return False
    taints = [t for t in taints_from_api(node.spec.taints) if t.effect == NO_EXECUTE]
    return tolerates_all(_tolerations(spec), taints) is None


def _tolerations(spec: PodSpec) -> tuple[SchedulingToleration, ...]:
    return pod_tolerations(Pod(spec=spec))
