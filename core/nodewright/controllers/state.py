"""A consistent view of nodes, NodeClaims and pods for one reconcile pass.

Joins Nodes and NodeClaims by provider ID and sums what is bound to each node, so the
provisioner and the disruption logic see the same picture.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api.apps import CSINode, StorageClass
from nodewright.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from nodewright.api.karpenter import CONDITION_LAUNCHED, NodeClaim
from nodewright.api.labels import (
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    KNOWN_EPHEMERAL_TAINTS,
    NODEPOOL_LABEL,
)
from nodewright.api.meta import is_true
from nodewright.controllers.templates import requirements_from_api, taints_from_api
from nodewright.scheduling.model import ExistingNode, HostPort, PlacedPod, TopologyTerm
from nodewright.scheduling.pods import pod_host_ports, pod_requests, pod_topology
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


@dataclass
class ClusterState:
    nodes: list[Node]
    node_claims: list[NodeClaim]
    pods: list[Pod]
    #: provider ID → NodeClaim
    claim_by_provider_id: dict[str, NodeClaim] = field(default_factory=dict)
    #: node name → pods bound to it (not terminal)
    pods_by_node: dict[str, list[Pod]] = field(default_factory=dict)

    @classmethod
    def build(
        cls, nodes: Sequence[Node], claims: Sequence[NodeClaim], pods: Sequence[Pod]
    ) -> ClusterState:
        state = cls(list(nodes), list(claims), list(pods))
        for claim in claims:
            if claim.status.provider_id:
                state.claim_by_provider_id[claim.status.provider_id] = claim
        by_node: dict[str, list[Pod]] = defaultdict(list)
        for pod in pods:
            if pod.spec.node_name and not is_terminal(pod):
                by_node[pod.spec.node_name].append(pod)
        state.pods_by_node = dict(by_node)
        return state

    def claim_for(self, node: Node) -> NodeClaim | None:
        return self.claim_by_provider_id.get(node.spec.provider_id or "")

    def node_for(self, claim: NodeClaim) -> Node | None:
        if not claim.status.provider_id:
            return None
        for node in self.nodes:
            if node.spec.provider_id == claim.status.provider_id:
                return node
        return None

    def requested(self, node_name: str) -> ResourceList:
        return merge(*(pod_requests(p) for p in self.pods_by_node.get(node_name, [])))

    def placed_pods(
        self, namespaces: Mapping[str, Mapping[str, str]] | None = None
    ) -> list[PlacedPod]:
        """Pods running on nodes, as topology counting sees them (terminating ones excluded)."""
        by_name = {node.name: node for node in self.nodes}
        placed: list[PlacedPod] = []
        for node_name, pods in self.pods_by_node.items():
            node = by_name.get(node_name)
            if node is None:
                continue
            taints = taints_from_api(node.spec.taints)
            for pod in pods:
                if pod.deleting:
                    continue
                anti: tuple[TopologyTerm, ...] = ()
                affinity = pod.spec.affinity
                if affinity is not None and affinity.pod_anti_affinity is not None:
                    hard = pod_topology(pod, namespaces)[0]
                    anti = tuple(t for t in hard if t.kind == ANTI_AFFINITY)
                placed.append(
                    PlacedPod(
                        namespace=pod.namespace,
                        labels=pod.metadata.labels,
                        node_name=node_name,
                        node_labels=node.metadata.labels,
                        node_taints=taints,
                        anti_affinity=anti,
                    )
                )
        return placed

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
            managed = claim is not None or NODEPOOL_LABEL in node.metadata.labels
            initialized = (
                node.metadata.labels.get(INITIALIZED_LABEL) == "true" if managed else node.ready
            )
            taints = taints_from_api(node.spec.taints)
            if not initialized:
                startup = {(t.key, t.effect) for t in claim.spec.startup_taints} if claim else set()
                ignored = startup | set(KNOWN_EPHEMERAL_TAINTS)
                taints = tuple(t for t in taints if (t.key, t.effect) not in ignored)
            pods = self.pods_by_node.get(node.name, [])
            ports: list[HostPort] = [port for p in pods for port in pod_host_ports(p)]
            limits: dict[str, int] = {}
            attached: dict[str, frozenset[str]] = {}
            if volumes is not None:
                limits = node_volume_limits(volumes.csi_nodes.get(node.name))
                for p in pods:
                    usage = pod_volume_usage(
                        p, volumes.claims, volumes.volumes, volumes.storage_classes
                    )
                    for driver, ids in usage.items():
                        attached[driver] = attached.get(driver, frozenset()) | ids
            result.append(
                ExistingNode(
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
            )
        for claim in self.node_claims:
            if claim.deleting or claim.status.provider_id in registered_ids:
                continue
            # Until launch reports real capacity, the claim offers exactly what it was sized
            # for, so the pods it was created for are not planned a second node.
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
            result.append(
                ExistingNode(
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
            )
        return result
