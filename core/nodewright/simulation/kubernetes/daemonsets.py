"""The DaemonSet controller: one pod per eligible node, bound directly."""

from __future__ import annotations

from collections import defaultdict

from nodewright.api.apps import DaemonSet
from nodewright.api.core import Node, Pod, PodCondition, PodSpec, Toleration
from nodewright.clock import Clock
from nodewright.cluster.memory import MemoryCluster, copy_object
from nodewright.scheduling.pods import pod_tolerations, taints_from_api
from nodewright.scheduling.selectors import node_selector_matches
from nodewright.scheduling.taints import NO_EXECUTE, NO_SCHEDULE, tolerates_all
from nodewright.scheduling.taints import Toleration as SchedulingToleration
from nodewright.simulation.kubernetes.ownership import by_controller, pod_from_template
from nodewright.simulation.kubernetes.pods import is_active

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


class DaemonSetController:
    """Places each DaemonSet's pods itself, without the scheduler, as upstream does."""

    def __init__(self, cluster: MemoryCluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock

    def reconcile(self) -> None:
        """One pod per eligible node, bound directly; pods leave nodes that stop qualifying."""
        nodes = [node for node in self.cluster.peek(Node) if not node.deleting]
        node_names = {node.name for node in nodes}
        daemon_sets = list(self.cluster.peek(DaemonSet))
        if not daemon_sets:
            return
        owned = by_controller(self.cluster.peek(Pod))
        for ds in daemon_sets:
            if ds.deleting:
                continue
            spec = _daemon_pod_spec(ds)
            placed: dict[str, list[Pod]] = defaultdict(list)
            for pod in owned.get(ds.metadata.uid or "", []):
                if not pod.deleting:
                    placed[pod.spec.node_name or ""].append(pod)
            for node in nodes:
                running = [pod for pod in placed.get(node.name, []) if is_active(pod)]
                if running:
                    if not _may_stay(spec, node):
                        for pod in running:
                            self.cluster.delete(Pod, pod.name, pod.namespace)
                    continue
                if not _may_start(spec, node):
                    continue
                pod = pod_from_template(ds.spec.template, ds, generate_name=f"{ds.name}-")
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
