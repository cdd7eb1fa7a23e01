"""What the kube-scheduler knows about each node, kept current from changes.

A schedulable node's :class:`NodeState` holds its labels, taints, allocatable resources and
what its pods request, use and attach. Nodes are rebuilt only when they, their ``CSINode`` or
their pods changed (a rebuild costs the node's own pods), so a scheduling pass starts from an
up-to-date picture without looking at every pod in the cluster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from nodewright.api.apps import CSINode
from nodewright.api.core import Node, Pod
from nodewright.cluster.state import ClusterState
from nodewright.scheduling.model import HostPort, PodRequest
from nodewright.scheduling.pods import (
    node_fit_problem,
    pod_host_ports,
    pod_requests,
    taints_from_api,
)
from nodewright.scheduling.resources import ResourceList, parse_resources
from nodewright.scheduling.taints import Taint
from nodewright.scheduling.volumes import node_volume_limits

# kube-scheduler's words for nodes it filtered before looking at the pod.
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NOT_READY = "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"


@dataclass(eq=False)
class NodeState:
    """What the binder knows about one schedulable node."""

    node: Node
    name: str
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
    #: Bumped whenever a pod is placed here during a pass (what it requests changed).
    version: int = 0

    def place(self, requests: Mapping[str, int], ports: tuple[HostPort, ...], pod: Pod) -> None:
        """Count a pod just bound here."""
        for name, value in requests.items():
            self.requested[name] = self.requested.get(name, 0) + value
        self.ports.extend(ports)
        self.pods.append(pod)
        self.version += 1


class NodeStates:
    """Every node, as the scheduler sees it: schedulable ones with their state, the others
    with the reason kube-scheduler skips them."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._schedulable: dict[str, NodeState] = {}
        self._names: list[str] | None = None
        #: node name -> why it is skipped (cordoned, being deleted, or not ready)
        self._skipped: dict[str, str] = {}
        self._dirty: set[str] = {key[1] for key in state.objects(Node)}
        #: pod UID -> its requests (a pod's resources do not change once it exists)
        self._requests: dict[str, ResourceList] = {}
        #: (node requirement terms, tolerations) -> node name -> whether such a pod is admitted
        self._admits: dict[tuple[object, ...], dict[str, bool]] = {}
        #: Names of the nodes whose state changed (rebuilt, gone, or given a pod), in order:
        #: what a reader keeping its own view since position ``i`` must look at again.
        self.log: list[str] = []

    # -- keeping current ----------------------------------------------------------------------

    def node_changed(self, name: str) -> None:
        """The Node (or its CSINode) changed: labels and taints may differ."""
        self._dirty.add(name)
        for admitted in self._admits.values():
            admitted.pop(name, None)

    def pods_changed(self, name: str) -> None:
        """A pod bound to the node came, went or changed."""
        self._dirty.add(name)

    def pod_gone(self, pod: Pod) -> None:
        self._requests.pop(pod.metadata.uid or "", None)

    def forget_volume_usage(self) -> None:
        """Claims, volumes or classes changed: what nodes attach is worked out again."""
        for node_state in self._schedulable.values():
            node_state.volume_usage = None

    def refresh(self) -> None:
        """Rebuild the nodes that changed since the last refresh."""
        for name in self._dirty:
            self._rebuild(name)
        self._dirty.clear()

    def _rebuild(self, name: str) -> None:
        was_schedulable = self._schedulable.pop(name, None) is not None
        self._skipped.pop(name, None)
        node = self.state.get(Node, ("", name))
        if node is None:
            pass
        elif node.spec.unschedulable or node.deleting:
            self._skipped[name] = NODE_UNSCHEDULABLE
        elif not node.ready:
            self._skipped[name] = NODE_NOT_READY
        else:
            self._schedulable[name] = self._node_state(node)
        if was_schedulable != (name in self._schedulable):
            self._names = None
        self.log.append(name)

    def place(self, node_state: NodeState, request: PodRequest, pod: Pod) -> None:
        """Count a pod just bound to ``node_state``."""
        node_state.place(request.requests, request.host_ports, pod)
        self.log.append(node_state.name)

    def _node_state(self, node: Node) -> NodeState:
        csi_node = self.state.get(CSINode, ("", node.name))
        node_state = NodeState(
            node=node,
            name=node.name,
            labels=node.metadata.labels,
            taints=taints_from_api(node.spec.taints),
            allocatable=parse_resources(node.status.allocatable),
            volume_limits=node_volume_limits(csi_node),
        )
        requested = node_state.requested
        for pod in self.state.pods_on(node.name).values():
            for resource, value in self.pod_requests(pod).items():
                requested[resource] = requested.get(resource, 0) + value
            node_state.ports.extend(pod_host_ports(pod))
            node_state.pods.append(pod)
        return node_state

    def pod_requests(self, pod: Pod) -> ResourceList:
        """Pod requests, cached by UID (a pod's resources do not change once created)."""
        uid = pod.metadata.uid or ""
        cached = self._requests.get(uid)
        if cached is None:
            cached = pod_requests(pod)
            self._requests[uid] = cached
        return cached

    # -- reading ------------------------------------------------------------------------------

    def current(self, name: str) -> NodeState | None:
        """The node's state now, if it is schedulable."""
        return self._schedulable.get(name)

    def changed_since(self, position: int) -> set[str]:
        """Nodes whose state changed since :attr:`log` had ``position`` entries."""
        return set(self.log[position:])

    def schedulable_count(self) -> int:
        return len(self._schedulable)

    def schedulable(self) -> list[NodeState]:
        """Schedulable nodes in name order."""
        if self._names is None:
            self._names = sorted(self._schedulable)
        return [self._schedulable[name] for name in self._names]

    def skipped(self) -> Counter[str]:
        """How many nodes are skipped, per reason."""
        return Counter(self._skipped.values())

    def any_volume_limits(self) -> bool:
        return any(node_state.volume_limits for node_state in self._schedulable.values())

    def admitting(self, request: PodRequest) -> list[NodeState]:
        """Schedulable nodes (in name order) whose taints and labels admit the pod, whatever
        they already run."""
        return [node_state for node_state in self.schedulable() if self.admits(request, node_state)]

    def admits(self, request: PodRequest, node_state: NodeState) -> bool:
        """The node's taints and labels admit the pod; remembered until the node changes."""
        admitted = self._admits.setdefault((request.requirement_terms, request.tolerations), {})
        verdict = admitted.get(node_state.name)
        if verdict is None:
            probe = replace(request, requests={}, host_ports=())
            problem = node_fit_problem(probe, node_state.labels, node_state.taints, {}, {}, ())
            verdict = admitted[node_state.name] = problem is None
        return verdict
