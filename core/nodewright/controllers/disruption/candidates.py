"""Disruption candidates: nodes nodewright may remove, with their price and disruption cost.

One :class:`Snapshot` is taken per pass so every method and the validation that follows it
read the same nodes, NodeClaims, pods, NodePools, instance types and budgets.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from nodewright.api.core import Namespace, Node, Pod
from nodewright.api.duration import DurationError, parse_optional_duration
from nodewright.api.karpenter import CONDITION_INITIALIZED, NodeClaim, NodePool
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    DISRUPTED_TAINT_KEY,
    DO_NOT_DISRUPT_ANNOTATION,
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    POD_DELETION_COST_ANNOTATION,
    ZONE_LABEL,
)
from nodewright.api.meta import is_true
from nodewright.clock import Clock
from nodewright.cluster import Cluster
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.controllers.disruption.pdbs import PdbLimits
from nodewright.controllers.events import EventRecorder
from nodewright.controllers.state import (
    ClusterView,
    NodeCache,
    VolumeFacts,
    is_terminal,
    owner_kind,
)
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import ExistingNode, PlacedPod
from nodewright.scheduling.pods import pod_tolerations
from nodewright.scheduling.taints import Taint

log = logging.getLogger("nodewright.disruption")

# Karpenter's disruption reasons: what budgets are keyed by.
REASON_EMPTY = "Empty"
REASON_DRIFTED = "Drifted"
REASON_UNDERUTILIZED = "Underutilized"
#: Not a budget reason: the forceful expiration of a NodeClaim past its expireAfter.
REASON_EXPIRED = "Expired"

#: Graceful methods respect blocking pods; eventual ones (drift) do not when the NodeClaim
#: has a terminationGracePeriod, because its drain is bounded anyway.
GRACEFUL = "graceful"
EVENTUAL = "eventual"

#: The NodeClaim condition set while a disruption command holds it.
CONDITION_DISRUPTION_REASON = "DisruptionReason"

_DISRUPTED = Taint(DISRUPTED_TAINT_KEY, "NoSchedule")


@dataclass
class Snapshot:
    """The cluster as one disruption pass sees it."""

    now: datetime
    #: Nodes, NodeClaims and the pods on nodes (read from the cluster state, not copied).
    view: ClusterView
    pools: dict[str, NodePool]
    #: Instance types by NodePool, for pools whose NodeClass resolves.
    instance_types: dict[str, list[InstanceType]]
    pdbs: PdbLimits
    #: Namespace labels, for pod affinity namespace selectors.
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    volumes: VolumeFacts = field(default_factory=VolumeFacts)

    def __post_init__(self) -> None:
        self._types_by_name = {
            pool: {it.name: it for it in types} for pool, types in self.instance_types.items()
        }
        self._existing: list[ExistingNode] | None = None
        self._placed: list[PlacedPod] | None = None

    @property
    def nodes(self) -> list[Node]:
        return self.view.nodes

    @property
    def claims(self) -> list[NodeClaim]:
        return self.view.node_claims

    @classmethod
    def take(
        cls, cluster: Cluster, catalog: Catalog, clock: Clock, nodes: NodeCache | None = None
    ) -> Snapshot:
        state = cluster.state
        pools = {p.name: p for p in state.sorted(NodePool)}
        types: dict[str, list[InstanceType]] = {}
        for name, pool in pools.items():
            try:
                node_class = catalog.node_class(pool.spec.template.spec.node_class_ref)
                types[name] = catalog.instance_types(node_class)
            except (UnknownNodeClassError, NodeClassNotFoundError, PluginError) as error:
                log.debug("no instance types for nodepool %s: %s", name, error)
        return cls(
            now=clock.now(),
            view=ClusterView(state, nodes),
            pools=pools,
            instance_types=types,
            pdbs=PdbLimits.load(state),
            namespaces={ns.name: dict(ns.metadata.labels) for ns in state.sorted(Namespace)},
            volumes=VolumeFacts.of(state),
        )

    def existing_nodes(self) -> list[ExistingNode]:
        """The cluster's nodes and in-flight NodeClaims as the solver sees them (computed once)."""
        if self._existing is None:
            self._existing = self.view.existing_nodes(self.volumes)
        return self._existing

    def placed_pods(self) -> list[PlacedPod]:
        """Running pods as topology counting sees them (computed once)."""
        if self._placed is None:
            self._placed = self.view.placed_pods(self.namespaces)
        return self._placed

    def instance_type(self, pool: str, name: str) -> InstanceType | None:
        return self._types_by_name.get(pool, {}).get(name)

    def price(self, pool: str, labels: dict[str, str]) -> float:
        """The price of the offering a node with ``labels`` was bought through (0 if unknown)."""
        instance_type = self.instance_type(pool, labels.get(INSTANCE_TYPE_LABEL, ""))
        if instance_type is None:
            return 0.0
        for offering in instance_type.offerings:
            if offering.zone == labels.get(ZONE_LABEL) and offering.capacity_type == labels.get(
                CAPACITY_TYPE_LABEL
            ):
                return offering.price
        return 0.0


@dataclass
class Candidate:
    """A node that may be disrupted, as Karpenter's ``disruption.Candidate``."""

    node: Node
    claim: NodeClaim
    pool: NodePool
    instance_type: InstanceType | None
    price: float
    #: Every non-terminal pod bound to the node.
    pods: list[Pod]
    #: The pods that would need a new home (not daemonset, not mirror, not terminating).
    reschedulable: list[Pod]
    #: Sum of pod eviction costs times the fraction of the node's lifetime left.
    disruption_cost: float
    #: 1 + the sum of positive pod eviction costs of the reschedulable pods.
    reschedule_cost: float

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def provider_id(self) -> str:
        return self.node.spec.provider_id or ""

    @property
    def zone(self) -> str | None:
        return self.node.metadata.labels.get(ZONE_LABEL)

    @property
    def capacity_type(self) -> str | None:
        return self.node.metadata.labels.get(CAPACITY_TYPE_LABEL)

    def is_empty(self) -> bool:
        return self.reschedule_cost <= 1.0

    def savings_ratio(self) -> float:
        return self.price / self.reschedule_cost


def eviction_cost(pod: Pod) -> float:
    """Karpenter's per-pod cost: 1 + deletion-cost/2^27 + priority/2^25, within [-10, 10]."""
    cost = 1.0
    deletion_cost = pod.metadata.annotations.get(POD_DELETION_COST_ANNOTATION)
    if deletion_cost is not None:
        with contextlib.suppress(ValueError):
            cost += float(deletion_cost) / 2**27
    if pod.spec.priority is not None:
        cost += pod.spec.priority / 2**25
    return min(10.0, max(-10.0, cost))


def lifetime_remaining(claim: NodeClaim, now: datetime) -> float:
    """The fraction of the NodeClaim's expireAfter still ahead of it, in [0, 1]."""
    try:
        expire_after = parse_optional_duration(claim.spec.expire_after)
    except DurationError:
        return 1.0
    created = claim.metadata.creation_timestamp
    if expire_after is None or created is None or expire_after <= timedelta(0):
        return 1.0
    left = (expire_after - (now - created)) / expire_after
    return min(1.0, max(0.0, left))


def is_active(pod: Pod) -> bool:
    return not is_terminal(pod) and not pod.deleting


def is_reschedulable(pod: Pod) -> bool:
    """A pod that needs a new node when its node goes (Karpenter's ``IsReschedulable``)."""
    if not is_active(pod) or owner_kind(pod) in ("DaemonSet", "Node"):
        return False
    return not any(t.tolerates(_DISRUPTED) for t in pod_tolerations(pod))


def blocks_disruption(pod: Pod, now: datetime) -> bool:
    """An active pod whose ``karpenter.sh/do-not-disrupt`` protects its node now.

    ``"true"`` protects for as long as the pod runs; a duration protects until that long
    after the pod started; anything else is ignored.
    """
    value = pod.metadata.annotations.get(DO_NOT_DISRUPT_ANNOTATION)
    if value is None or not is_active(pod):
        return False
    if value == "true":
        return True
    try:
        duration = parse_optional_duration(value)
    except DurationError:
        return False
    if duration is None:
        return True
    started = pod.status.start_time or pod.metadata.creation_timestamp
    return started is not None and now < started + duration


def is_initialized(node: Node, claim: NodeClaim) -> bool:
    return node.metadata.labels.get(INITIALIZED_LABEL) == "true" and is_true(
        claim.status.conditions, CONDITION_INITIALIZED
    )


def find_candidates(
    snapshot: Snapshot,
    disruption_class: str,
    queued: Collection[str],
    events: EventRecorder | None,
) -> list[Candidate]:
    """Every node that may be disrupted now, before any method's own filter.

    Nodes that are not candidates for a reason a user can act on get a ``DisruptionBlocked``
    event on the Node and its NodeClaim, in Karpenter's words.
    """

    def blocked(node: Node, claim: NodeClaim, message: str) -> None:
        if events is not None:
            events.publish(node, "DisruptionBlocked", message)
            events.publish(claim, "DisruptionBlocked", message)

    result: list[Candidate] = []
    now = snapshot.now
    for node in snapshot.nodes:
        claim = snapshot.view.claim_for(node)
        if claim is None or node.spec.provider_id in queued:
            continue
        # Nodes still starting or already going are skipped quietly: nothing to act on.
        if not is_initialized(node, claim) or node.deleting or claim.deleting:
            continue
        if node.metadata.annotations.get(DO_NOT_DISRUPT_ANNOTATION) == "true":
            blocked(
                node,
                claim,
                f'Disruption is blocked through the "{DO_NOT_DISRUPT_ANNOTATION}" annotation',
            )
            continue
        pool_name = node.metadata.labels.get(NODEPOOL_LABEL)
        if pool_name is None:
            continue
        pool = snapshot.pools.get(pool_name)
        if pool is None or pool_name not in snapshot.instance_types:
            blocked(node, claim, f"NodePool not found (NodePool={pool_name})")
            continue
        pods = snapshot.view.pods_on(node.name)
        problem = _pod_problem(snapshot, pods, now)
        eventual_ok = disruption_class == EVENTUAL and claim.spec.termination_grace_period
        if problem is not None and not eventual_ok:
            blocked(node, claim, problem)
            continue
        reschedulable = [p for p in pods if is_reschedulable(p)]
        labels = dict(node.metadata.labels)
        result.append(
            Candidate(
                node=node,
                claim=claim,
                pool=pool,
                instance_type=snapshot.instance_type(
                    pool_name, labels.get(INSTANCE_TYPE_LABEL, "")
                ),
                price=snapshot.price(pool_name, labels),
                pods=pods,
                reschedulable=reschedulable,
                disruption_cost=sum(eviction_cost(p) for p in pods)
                * lifetime_remaining(claim, now),
                reschedule_cost=1.0 + sum(max(0.0, eviction_cost(p)) for p in reschedulable),
            )
        )
    return result


def _pod_problem(snapshot: Snapshot, pods: Sequence[Pod], now: datetime) -> str | None:
    for pod in pods:
        if blocks_disruption(pod, now):
            return f'Pod has "{DO_NOT_DISRUPT_ANNOTATION}" annotation (Pod={pod.key})'
    evictable = [p for p in pods if is_active(p) and owner_kind(p) != "Node"]
    keys = snapshot.pdbs.blocking(evictable)
    if keys is None:
        return None
    if len(keys) > 1:
        return (
            f"Eviction does not support multiple PDBs (PodDisruptionBudget(s)=[{' '.join(keys)}])"
        )
    return f"Pdb prevents pod evictions (PodDisruptionBudget=[{keys[0]}])"
