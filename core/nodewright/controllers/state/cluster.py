"""The cluster as provisioning and disruption see it for one pass: Nodes and NodeClaims
joined, what is bound to each node, and each node as the solver takes it.

It reads the shared :class:`~nodewright.cluster.state.ClusterState` instead of listing the
cluster, and a :class:`NodeCache` keeps each node's solver view across passes until the node,
its NodeClaim, its pods or the storage objects change, so a pass costs what changed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.apps import CSINode, StorageClass
from nodewright.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from nodewright.api.karpenter import CONDITION_LAUNCHED, NodeClaim
from nodewright.api.labels import (
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    KNOWN_EPHEMERAL_TAINTS,
    NODEPOOL_LABEL,
)
from nodewright.api.meta import KubeObject, is_true
from nodewright.cluster.state import ClusterState
from nodewright.controllers.state.solverdata import requirements_from_api
from nodewright.scheduling.model import ExistingNode, HostPort, PlacedPod, TopologyTerm
from nodewright.scheduling.pods import pod_host_ports, pod_requests, pod_topology, taints_from_api
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import ResourceList, merge, parse_resources
from nodewright.scheduling.topology import ANTI_AFFINITY
from nodewright.scheduling.volumes import node_volume_limits, pod_volume_usage


@dataclass
class VolumeFacts:
    """The storage objects volume topology and attach limits are read from."""

    claims: dict[str, PersistentVolumeClaim] = field(default_factory=dict)
    volumes: dict[str, PersistentVolume] = field(default_factory=dict)
    storage_classes: dict[str, StorageClass] = field(default_factory=dict)
    csi_nodes: dict[str, CSINode] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        claims: Sequence[PersistentVolumeClaim],
        volumes: Sequence[PersistentVolume],
        storage_classes: Sequence[StorageClass],
        csi_nodes: Sequence[CSINode],
    ) -> VolumeFacts:
        return cls(
            {c.key: c for c in claims},
            {v.name: v for v in volumes},
            {c.name: c for c in storage_classes},
            {n.name: n for n in csi_nodes},
        )

    @classmethod
    def of(cls, state: ClusterState) -> VolumeFacts:
        return cls.build(
            list(state.sorted(PersistentVolumeClaim)),
            list(state.sorted(PersistentVolume)),
            list(state.sorted(StorageClass)),
            list(state.sorted(CSINode)),
        )


#: The kinds volume topology and attach limits depend on.
VOLUME_KINDS: tuple[type[KubeObject], ...] = (
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
)


TERMINAL_PHASES = ("Succeeded", "Failed")


def is_terminal(pod: Pod) -> bool:
    return pod.status.phase in TERMINAL_PHASES


def owner_kind(pod: Pod) -> str | None:
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return ref.kind
    return pod.metadata.owner_references[0].kind if pod.metadata.owner_references else None


def is_provisionable(pod: Pod) -> bool:
    """Karpenter's test for a pod it should find capacity for: kube-scheduler already
    marked it unschedulable, it is not bound or being preempted for, and it is not a
    DaemonSet or mirror pod."""
    if pod.spec.node_name or pod.status.nominated_node_name or pod.deleting or is_terminal(pod):
        return False
    if owner_kind(pod) in ("DaemonSet", "Node"):
        return False
    condition = pod.condition("PodScheduled")
    return (
        condition is not None
        and condition.status == "False"
        and condition.reason == "Unschedulable"
    )


#: NodeCache has not seen any namespaces yet.
_UNSEEN = object()


def _pod_order(pod: Pod) -> tuple[str, str]:
    return (pod.metadata.namespace or "", pod.metadata.name)


@dataclass
class _CachedNode:
    node: Node
    claim: NodeClaim | None
    pods_version: int
    volumes_version: int
    existing: ExistingNode


class NodeCache:
    """Each node's solver view, kept across passes until something it depends on changes.

    A controller owns one; entries are keyed by node name and checked against the node and
    NodeClaim objects (a change replaces the shared object), the node's pod counter and the
    storage kinds' counters.
    """

    def __init__(self) -> None:
        self._entries: dict[str, _CachedNode] = {}
        #: node name -> (node, its pod counter, its running pods as topology sees them)
        self._placed: dict[str, tuple[Node, int, list[PlacedPod]]] = {}
        self._namespaces: object = _UNSEEN

    def existing(
        self,
        state: ClusterState,
        node: Node,
        claim: NodeClaim | None,
        volumes: VolumeFacts | None,
        pods: Callable[[], Sequence[Pod]],
    ) -> ExistingNode:
        pods_version = state.node_pods_version(node.name)
        volumes_version = (
            -1 if volumes is None else sum(state.kind_version(k) for k in VOLUME_KINDS)
        )
        entry = self._entries.get(node.name)
        if (
            entry is not None
            and entry.node is node
            and entry.claim is claim
            and entry.pods_version == pods_version
            and entry.volumes_version == volumes_version
        ):
            return entry.existing
        existing = _existing_node(node, claim, pods(), volumes)
        self._entries[node.name] = _CachedNode(node, claim, pods_version, volumes_version, existing)
        return existing

    def placed_pods(
        self,
        state: ClusterState,
        nodes: Sequence[Node],
        namespaces: Mapping[str, Mapping[str, str]] | None,
        pods: Callable[[str], Sequence[Pod]],
    ) -> list[PlacedPod]:
        """The running pods of ``nodes`` as topology counting sees them, each node's kept
        until the node or its pods change (all of them when the namespaces change)."""
        if self._namespaces is _UNSEEN or self._namespaces != namespaces:
            self._namespaces = namespaces
            self._placed.clear()
        placed: list[PlacedPod] = []
        for node in nodes:
            version = state.node_pods_version(node.name)
            entry = self._placed.get(node.name)
            if entry is None or entry[0] is not node or entry[1] != version:
                entry = (node, version, _placed_on(node, pods(node.name), namespaces))
                self._placed[node.name] = entry
            placed.extend(entry[2])
        self._prune(self._placed, nodes)
        return placed

    def prune(self, nodes: Sequence[Node]) -> None:
        """Drop the entries of nodes that are gone, once they outnumber the live ones."""
        self._prune(self._entries, nodes)

    @staticmethod
    def _prune(entries: dict[str, Any], nodes: Sequence[Node]) -> None:
        if len(entries) <= 2 * len(nodes) + 16:
            return
        present = {node.name for node in nodes}
        for name in [n for n in entries if n not in present]:
            del entries[name]


class ClusterView:
    """Nodes, NodeClaims and the pods bound to nodes, for one pass."""

    def __init__(self, state: ClusterState, cache: NodeCache | None = None) -> None:
        self.state = state
        self.nodes: list[Node] = list(state.sorted(Node))
        self.node_claims: list[NodeClaim] = list(state.sorted(NodeClaim))
        self._cache = cache or NodeCache()
        self._pods: dict[str, list[Pod]] = {}

    def claim_for(self, node: Node) -> NodeClaim | None:
        return self.state.claim_for(node)

    def node_for(self, claim: NodeClaim) -> Node | None:
        return self.state.node_for(claim)

    def claim_named(self, name: str) -> NodeClaim | None:
        return self.state.get(NodeClaim, ("", name))

    def pods_on(self, node_name: str) -> list[Pod]:
        """Pods bound to the node that have not finished, in namespace/name order."""
        pods = self._pods.get(node_name)
        if pods is None:
            pods = sorted(self.state.pods_on(node_name).values(), key=_pod_order)
            self._pods[node_name] = pods
        return pods

    def requested(self, node_name: str) -> ResourceList:
        return merge(*(pod_requests(p) for p in self.pods_on(node_name)))

    def placed_pods(
        self, namespaces: Mapping[str, Mapping[str, str]] | None = None
    ) -> list[PlacedPod]:
        """Pods running on nodes, as topology counting sees them (terminating ones excluded)."""
        return self._cache.placed_pods(self.state, self.nodes, namespaces, self.pods_on)

    def existing_nodes(self, volumes: VolumeFacts | None = None) -> list[ExistingNode]:
        """Nodes and in-flight NodeClaims pods can still be placed on."""
        result: list[ExistingNode] = []
        registered_ids = set()
        for node in self.nodes:
            if node.deleting or node.spec.unschedulable:
                continue
            claim = self.claim_for(node)
            if claim is not None and claim.deleting:
                continue
            registered_ids.add(node.spec.provider_id)
            pods = functools.partial(self.pods_on, node.name)
            result.append(self._cache.existing(self.state, node, claim, volumes, pods))
        for claim in self.node_claims:
            if claim.deleting or claim.status.provider_id in registered_ids:
                continue
            result.append(_in_flight(claim))
        self._cache.prune(self.nodes)
        return result


def _placed_on(
    node: Node, pods: Sequence[Pod], namespaces: Mapping[str, Mapping[str, str]] | None
) -> list[PlacedPod]:
    """The running pods of one node as topology counting sees them: one entry per kind of
    pod (namespace, labels, anti-affinity) with how many of them run there."""
    if not pods:
        return []
    # (namespace, labels, anti-affinity) -> the first such pod's labels, how many run here
    alike: dict[
        tuple[str, tuple[tuple[str, str], ...], tuple[TopologyTerm, ...]],
        tuple[Mapping[str, str], int],
    ] = {}
    for pod in pods:
        if pod.deleting:
            continue
        anti: tuple[TopologyTerm, ...] = ()
        affinity = pod.spec.affinity
        if affinity is not None and affinity.pod_anti_affinity is not None:
            hard = pod_topology(pod, namespaces)[0]
            anti = tuple(t for t in hard if t.kind == ANTI_AFFINITY)
        key = (pod.namespace, tuple(sorted(pod.metadata.labels.items())), anti)
        labels, count = alike.get(key, (pod.metadata.labels, 0))
        alike[key] = (labels, count + 1)
    if not alike:
        return []
    taints = taints_from_api(node.spec.taints)
    requirements = Requirements.from_labels(node.metadata.labels)
    return [
        PlacedPod(
            namespace=namespace,
            labels=labels,
            node_name=node.name,
            node_labels=node.metadata.labels,
            node_taints=taints,
            anti_affinity=anti,
            count=count,
            node_requirements=requirements,
            label_key=label_key,
        )
        for (namespace, label_key, anti), (labels, count) in alike.items()
    ]


def _existing_node(
    node: Node, claim: NodeClaim | None, pods: Sequence[Pod], volumes: VolumeFacts | None
) -> ExistingNode:
    managed = claim is not None or NODEPOOL_LABEL in node.metadata.labels
    initialized = node.metadata.labels.get(INITIALIZED_LABEL) == "true" if managed else node.ready
    taints = taints_from_api(node.spec.taints)
    if not initialized:
        startup = {(t.key, t.effect) for t in claim.spec.startup_taints} if claim else set()
        ignored = startup | set(KNOWN_EPHEMERAL_TAINTS)
        taints = tuple(t for t in taints if (t.key, t.effect) not in ignored)
    ports: list[HostPort] = [port for p in pods for port in pod_host_ports(p)]
    limits: dict[str, int] = {}
    attached: dict[str, frozenset[str]] = {}
    if volumes is not None:
        limits = node_volume_limits(volumes.csi_nodes.get(node.name))
        for p in pods:
            usage = pod_volume_usage(p, volumes.claims, volumes.volumes, volumes.storage_classes)
            for driver, ids in usage.items():
                attached[driver] = attached.get(driver, frozenset()) | ids
    return ExistingNode(
        name=node.name,
        labels=dict(node.metadata.labels),
        taints=taints,
        allocatable=parse_resources(node.status.allocatable),
        requested=merge(*(pod_requests(p) for p in pods)),
        host_ports=tuple(ports),
        initialized=initialized,
        startup_taints=taints_from_api(claim.spec.startup_taints) if claim else (),
        node_claim=claim.name if claim else None,
        node_pool=node.metadata.labels.get(NODEPOOL_LABEL),
        volume_limits=limits,
        volumes=attached,
    )


def _in_flight(claim: NodeClaim) -> ExistingNode:
    """A NodeClaim without a Node yet, as the solver sees it."""
    # Until launch reports real capacity, the claim offers exactly what it was sized for, so
    # the pods it was created for are not planned a second node.
    launched = is_true(claim.status.conditions, CONDITION_LAUNCHED)
    allocatable = (
        parse_resources(claim.status.allocatable)
        if launched
        else parse_resources(claim.spec.resources.requests)
    )
    labels = {
        **requirements_from_api(claim.spec.requirements).labels(),
        **claim.metadata.labels,
        HOSTNAME_LABEL: claim.name,
    }
    return ExistingNode(
        name=claim.name,
        labels=labels,
        taints=taints_from_api(claim.spec.taints),
        allocatable=allocatable,
        requested={},
        initialized=False,
        node_claim=claim.name,
        node_pool=claim.metadata.labels.get(NODEPOOL_LABEL),
        in_flight=True,
    )
