"""Disruption candidates: nodes nodewright may remove, with their price and disruption cost.

One :class:`Snapshot` is taken per pass so every method and the validation that follows it
read the same nodes, NodeClaims, pods, NodePools, instance types and budgets. Whether a node
is a candidate at all is a :class:`NodeVerdict`, which :mod:`.verdicts` keeps per node and
works out again only when something it depends on changed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from nodewright.api.core import Namespace, Node, Pod
from nodewright.api.karpenter import (
    CONDITION_DISRUPTION_REASON,
    CONDITION_INITIALIZED,
    CONDITION_INSTANCE_TERMINATING,
    NodeClaim,
    NodePool,
)
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    DISRUPTED_TAINT_KEY,
    DO_NOT_DISRUPT_ANNOTATION,
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import is_true
from nodewright.cluster.state import ClusterState
from nodewright.controllers.catalog import (
    Catalog,
    NodeClassNotFoundError,
    NodePoolNotEvaluatedError,
)
from nodewright.controllers.disruption.pdbs import PdbLimits
from nodewright.controllers.disruptioncost import (
    blocking_until,
    blocks_disruption,
    eviction_cost,
    is_active,
    is_reschedulable,
    lifetime_remaining,
)
from nodewright.controllers.state.cluster import (
    ClusterView,
    NodeCache,
    VolumeFacts,
    owner_kind,
)
from nodewright.controllers.state.nominations import NOMINATED
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import ExistingNode, PlacedPod

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


class Snapshot:
    """The cluster as one disruption pass sees it.

    Views that walk every node or pod (the :class:`ClusterView`, namespaces, storage) are
    built the first time a method asks for them, so a pass that decides nothing builds none.
    """

    def __init__(
        self,
        now: datetime,
        state: ClusterState,
        *,
        pools: dict[str, NodePool],
        instance_types: dict[str, list[InstanceType]],
        pdbs: PdbLimits,
        nodes: NodeCache | None = None,
    ) -> None:
        self.now = now
        self.state = state
        self.pools = pools
        #: Instance types by NodePool, for pools whose NodeClass resolves.
        self.instance_types = instance_types
        self.pdbs = pdbs
        self._cache = nodes
        self._existing: list[ExistingNode] | None = None
        self._placed: list[PlacedPod] | None = None

    @functools.cached_property
    def view(self) -> ClusterView:
        """Nodes, NodeClaims and the pods on nodes (read from the cluster state, not copied)."""
        return ClusterView(self.state, self._cache)

    @property
    def nodes(self) -> list[Node]:
        return self.view.nodes

    @property
    def claims(self) -> list[NodeClaim]:
        return self.view.node_claims

    @functools.cached_property
    def namespaces(self) -> dict[str, dict[str, str]]:
        """Namespace labels, for pod affinity namespace selectors."""
        return {ns.name: dict(ns.metadata.labels) for ns in self.state.sorted(Namespace)}

    @functools.cached_property
    def volumes(self) -> VolumeFacts:
        return VolumeFacts.of(self.state)

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


def pools_and_types(
    state: ClusterState, catalog: Catalog
) -> tuple[dict[str, NodePool], dict[str, list[InstanceType]]]:
    """Every NodePool by name, and the instance types of those whose NodeClass resolves."""
    pools = {p.name: p for p in state.sorted(NodePool)}
    types: dict[str, list[InstanceType]] = {}
    for name, pool in pools.items():
        try:
            node_class = catalog.node_class(pool.spec.template.spec.node_class_ref)
            types[name] = catalog.pool_instance_types(node_class, name, strict=True)
        except NodePoolNotEvaluatedError:
            log.debug("skipping nodepool %s, node overlays are not applied", name)
        except (UnknownNodeClassError, NodeClassNotFoundError, PluginError) as error:
            log.debug("no instance types for nodepool %s: %s", name, error)
    return pools, types


def offering_price(instance_type: InstanceType | None, labels: Mapping[str, str]) -> float:
    """The price of the offering of ``instance_type`` in the node's zone and capacity type."""
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
    #: Sum of the pods' eviction costs.
    eviction_cost: float
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

    def disruption_cost(self, now: datetime) -> float:
        """The pods' eviction costs times the fraction of the node's lifetime left."""
        return self.eviction_cost * lifetime_remaining(self.claim, now)

    def is_empty(self) -> bool:
        return self.reschedule_cost <= 1.0

    def savings_ratio(self) -> float:
        return self.price / self.reschedule_cost

    def same_as(self, other: Candidate) -> bool:
        """Whether ``other`` was made from the same objects and says the same."""
        return (
            self.node is other.node
            and self.claim is other.claim
            and self.pool.spec == other.pool.spec
            and self.instance_type == other.instance_type
            and (self.price, self.eviction_cost, self.reschedule_cost)
            == (other.price, other.eviction_cost, other.reschedule_cost)
            and _same_objects(self.pods, other.pods)
            and _same_objects(self.reschedulable, other.reschedulable)
        )


def _same_objects(first: Sequence[Pod], second: Sequence[Pod]) -> bool:
    return len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))


def is_initialized(node: Node, claim: NodeClaim) -> bool:
    return node.metadata.labels.get(INITIALIZED_LABEL) == "true" and is_true(
        claim.status.conditions, CONDITION_INITIALIZED
    )


@dataclass(frozen=True)
class NodeVerdict:
    """What one node is to disruption, worked out from its Node, its NodeClaim, its pods, its
    NodePool and the PodDisruptionBudgets over its pods (Karpenter's candidate filter).

    It stays true until one of those changes or ``expires`` passes.
    """

    node: Node
    claim: NodeClaim | None
    #: Why the node may not be disrupted, told as a ``DisruptionBlocked`` event (nodes still
    #: starting or already going are skipped without one: both this and ``candidate`` None).
    blocked: str | None = None
    #: Why its pods cannot be evicted now: blocks graceful methods, and eventual ones unless
    #: the NodeClaim has a terminationGracePeriod (its drain is bounded anyway).
    problem: str | None = None
    candidate: Candidate | None = None
    #: When a ``karpenter.sh/do-not-disrupt`` duration on one of its pods runs out.
    expires: datetime | None = None
    #: Counted in its NodePool's disruption budgets (initialized, not terminating).
    counted: bool = False
    #: Counted, and already unavailable (not Ready, or deleting).
    unavailable: bool = False
    #: Tainted ``karpenter.sh/disrupted`` or its NodeClaim marked with ``DisruptionReason``.
    marked: bool = False

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def pool_name(self) -> str:
        return self.node.metadata.labels.get(NODEPOOL_LABEL, "")

    def _bounded(self) -> bool:
        return self.claim is not None and bool(self.claim.spec.termination_grace_period)

    def candidate_for(self, disruption_class: str) -> Candidate | None:
        """The candidate a method of ``disruption_class`` may consider, if any."""
        if self.problem is None or (disruption_class == EVENTUAL and self._bounded()):
            return self.candidate
        return None

    def blocked_for(self, disruption_class: str) -> str | None:
        """The ``DisruptionBlocked`` message for ``disruption_class``, if any."""
        if self.blocked is not None:
            return self.blocked
        if self.candidate is not None and self.candidate_for(disruption_class) is None:
            return self.problem
        return None

    def same_as(self, other: NodeVerdict) -> bool:
        """Whether ``other`` says the same (a fresh evaluation of an unchanged node does)."""
        mine, theirs = self.candidate, other.candidate
        if (mine is None) != (theirs is None):
            return False
        if mine is not None and theirs is not None and not mine.same_as(theirs):
            return False
        return (
            self.node is other.node
            and self.claim is other.claim
            and (self.blocked, self.problem, self.expires)
            == (other.blocked, other.problem, other.expires)
            and (self.counted, self.unavailable, self.marked)
            == (other.counted, other.unavailable, other.marked)
        )


def judge(
    node: Node,
    claim: NodeClaim | None,
    *,
    pool: NodePool | None,
    instance_types: Mapping[str, InstanceType] | None,
    pods: Sequence[Pod],
    pdbs: PdbLimits,
    now: datetime,
    nominated_until: datetime | None = None,
) -> NodeVerdict:
    """The verdict on ``node``: ``pool`` is its NodePool (None: missing), ``instance_types``
    that pool's by name (None: its NodeClass does not resolve), ``pods`` the pods bound to it
    that have not finished, in namespace/name order; ``nominated_until`` when the node's
    nomination for pending pods ends (None: it is not nominated)."""
    if claim is None:
        return NodeVerdict(node, None, marked=_tainted(node))
    counted = is_initialized(node, claim) and not is_true(
        claim.status.conditions, CONDITION_INSTANCE_TERMINATING
    )
    facts = NodeVerdict(
        node,
        claim,
        counted=counted,
        unavailable=counted and (not node.ready or node.deleting or claim.deleting),
        marked=_tainted(node)
        or any(c.type == CONDITION_DISRUPTION_REASON for c in claim.status.conditions),
    )
    # Nodes still starting or already going are skipped quietly: nothing to act on.
    if not is_initialized(node, claim) or node.deleting or claim.deleting:
        return facts
    # A recent provisioning pass counts on this node for a pending pod: not a candidate until
    # the nomination ends (the verdict is worked out again then).
    if nominated_until is not None:
        return replace(facts, blocked=NOMINATED, expires=nominated_until)
    if node.metadata.annotations.get(DO_NOT_DISRUPT_ANNOTATION) == "true":
        return replace(
            facts,
            blocked=f'Disruption is blocked through the "{DO_NOT_DISRUPT_ANNOTATION}" annotation',
        )
    pool_name = node.metadata.labels.get(NODEPOOL_LABEL)
    if pool_name is None:
        return facts
    if pool is None or instance_types is None:
        return replace(facts, blocked=f"NodePool not found (NodePool={pool_name})")
    problem, expires = _pod_problem(pdbs, pods, now)
    reschedulable = [p for p in pods if is_reschedulable(p)]
    labels = node.metadata.labels
    instance_type = instance_types.get(labels.get(INSTANCE_TYPE_LABEL, ""))
    candidate = Candidate(
        node=node,
        claim=claim,
        pool=pool,
        instance_type=instance_type,
        price=offering_price(instance_type, labels),
        pods=list(pods),
        reschedulable=reschedulable,
        eviction_cost=sum(eviction_cost(p) for p in pods),
        reschedule_cost=1.0 + sum(max(0.0, eviction_cost(p)) for p in reschedulable),
    )
    return replace(facts, problem=problem, candidate=candidate, expires=expires)


def _tainted(node: Node) -> bool:
    return any(t.key == DISRUPTED_TAINT_KEY for t in node.spec.taints)


def _pod_problem(
    pdbs: PdbLimits, pods: Sequence[Pod], now: datetime
) -> tuple[str | None, datetime | None]:
    """Why ``pods`` cannot all be evicted now (None: they can), and when a do-not-disrupt
    duration that blocks now runs out."""
    expires = min(
        (until for pod in pods if (until := blocking_until(pod, now)) is not None),
        default=None,
    )
    for pod in pods:
        if blocks_disruption(pod, now):
            return f'Pod has "{DO_NOT_DISRUPT_ANNOTATION}" annotation (Pod={pod.key})', expires
    evictable = [p for p in pods if is_active(p) and owner_kind(p) != "Node"]
    keys = pdbs.blocking(evictable)
    if keys is None:
        return None, expires
    if len(keys) > 1:
        return (
            f"Eviction does not support multiple PDBs (PodDisruptionBudget(s)=[{' '.join(keys)}])",
            expires,
        )
    return f"Pdb prevents pod evictions (PodDisruptionBudget=[{keys[0]}])", expires
