"""The solver's inputs and outputs.

The provisioning controller builds these from cluster state;
:func:`nodewright.scheduling.solver.scheduler.solve` consumes and produces them without I/O,
so the same solver serves provisioning, consolidation simulations, benchmarks and property
tests.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.api import core as api
from nodewright.api.labels import HOSTNAME_LABEL, WELL_KNOWN_LABELS
from nodewright.scheduling.dra.claims import ClaimSpec
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import ResourceList
from nodewright.scheduling.taints import Taint, Toleration
from nodewright.scheduling.topology import ANTI_AFFINITY, PlacedPod, TopologyTerm

__all__ = [
    "DaemonOverheadGroup",
    "ExistingNode",
    "HostPort",
    "NewNodeClaim",
    "NodePoolTemplate",
    "PlacedPod",
    "PodRequest",
    "SchedulingResult",
    "SolverOptions",
    "TopologyTerm",
]


@dataclass(frozen=True, slots=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    ip: str = "0.0.0.0"

    def conflicts(self, other: HostPort) -> bool:
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("0.0.0.0", "::", "")
        return self.ip in wildcard or other.ip in wildcard or self.ip == other.ip


@dataclass(frozen=True)
class PodRequest:
    """What one pending pod needs from a node.

    ``requirement_terms`` are the pod's node requirements, one entry per ORed required
    node-affinity term (each already intersected with the nodeSelector); a pod with no
    affinity has exactly one term. ``preferred_terms`` are preferred node-affinity terms,
    heaviest first; while preferences are respected, the heaviest is treated as required.
    """

    namespace: str
    name: str
    uid: str
    requests: ResourceList
    requirement_terms: tuple[Requirements, ...] = (Requirements(),)
    preferred_terms: tuple[tuple[int, Requirements], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    priority: int = 0
    #: Position in creation order (creationTimestamp, then UID), used to break ties.
    order: int = 0
    #: Hard topology: DoNotSchedule spreads and required pod affinity and anti-affinity.
    topology: tuple[TopologyTerm, ...] = ()
    #: Preferred pod affinity and anti-affinity terms, heaviest first, and ScheduleAnyway
    #: spreads: required while preferences are respected, relaxed one at a time.
    preferred_affinity: tuple[TopologyTerm, ...] = ()
    preferred_anti_affinity: tuple[TopologyTerm, ...] = ()
    schedule_anyway: tuple[TopologyTerm, ...] = ()
    #: ORed node requirements the pod's volumes impose (empty: none).
    volume_requirements: tuple[Requirements, ...] = ()
    #: CSI driver -> volumes the pod mounts, for attach limits.
    volumes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: The pod asks for Dynamic Resource Allocation devices (``resourceClaims``).
    dynamic_resources: bool = False
    #: Its ResourceClaims, read (with ``IGNORE_DRA_REQUESTS=false``).
    claims: tuple[ClaimSpec, ...] = ()
    #: Why its claims cannot be read now (one not made yet): it waits for a later pass.
    claims_problem: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def required_anti_affinity(self) -> tuple[TopologyTerm, ...]:
        return tuple(t for t in self.topology if t.kind == ANTI_AFFINITY)

    def at(self, order: int) -> PodRequest:
        """This request at position ``order``: ``dataclasses.replace(self, order=order)``
        without running ``__init__`` again (a consolidation search makes one per pod per
        simulated candidate)."""
        copied = object.__new__(PodRequest)
        copied.__dict__.update(self.__dict__)
        copied.__dict__["order"] = order
        return copied


@dataclass(frozen=True)
class ExistingNode:
    """A node, or an in-flight NodeClaim not yet registered, that pods may be placed on."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: ResourceList
    #: Requests of pods already bound or nominated to it (daemonsets included).
    requested: ResourceList
    host_ports: tuple[HostPort, ...] = ()
    initialized: bool = True
    #: The NodeClaim behind it, if nodewright manages it.
    node_claim: str | None = None
    node_pool: str | None = None
    #: True for a NodeClaim that has not registered a Node yet.
    in_flight: bool = False
    #: The NodeClaim's startup taints; ignored (like known ephemeral taints) until initialized.
    startup_taints: tuple[Taint, ...] = ()
    #: CSI driver -> how many volumes the node can attach (from its CSINode).
    volume_limits: Mapping[str, int] = field(default_factory=dict)
    #: CSI driver -> volumes already attached by pods running there.
    volumes: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @functools.cached_property
    def label_requirements(self) -> Requirements:
        """Its labels, hostname included, as requirements: built once per node version
        rather than in every trial scheduling that considers the node."""
        hostname = self.labels.get(HOSTNAME_LABEL, self.name)
        return Requirements.from_labels({**self.labels, HOSTNAME_LABEL: hostname})


@dataclass(frozen=True)
class DaemonOverheadGroup:
    """Instance types of a NodePool on which the same daemonset pods would run.

    Karpenter's ``DaemonOverheadGroup``: a daemonset whose node affinity picks some
    instance types (``arch: arm64``) only weighs on those, so each type is checked against
    its own group's overhead.
    """

    #: Requests of those daemonset pods together.
    overhead: ResourceList
    #: Names of the instance types; None for every type of the pool.
    instance_types: frozenset[str] | None = None
    #: Host ports those daemonset pods hold on every such node.
    host_ports: tuple[HostPort, ...] = ()


@dataclass(frozen=True)
class NodePoolTemplate:
    """A NodePool as the solver sees it: what a new NodeClaim from it would look like."""

    name: str
    weight: int
    #: NodePool requirements, template labels and ``karpenter.sh/nodepool`` as one set.
    requirements: Requirements
    taints: tuple[Taint, ...]
    #: Instance types with their offerings (unavailable offerings included).
    instance_types: tuple[InstanceType, ...]
    #: Limits minus current usage; None when the pool has no limits.
    remaining: ResourceList | None = None
    #: Daemonset pods that would land on a node of this pool, by instance type; a type in
    #: no group runs none.
    daemon_groups: tuple[DaemonOverheadGroup, ...] = ()


@dataclass(frozen=True)
class SolverOptions:
    #: ``Respect`` treats the heaviest preferences as required (relaxing them when they
    #: cannot be met); ``Ignore`` drops them.
    preference_policy: str = "Respect"
    #: Karpenter's cap on instance types carried by one NodeClaim.
    max_instance_types: int = 600
    #: Repack unconstrained pods when that is cheaper (see :mod:`nodewright.scheduling.repack`).
    repack: bool = True
    #: Labels every instance type defines (Karpenter's and the providers'): a pod may ask
    #: for them although its NodePool does not mention them.
    well_known_labels: frozenset[str] = WELL_KNOWN_LABELS
    #: ``Strict`` leaves pods pending when fewer instance types than a requirement's
    #: minValues remain; ``BestEffort`` lowers minValues to what remains.
    min_values_policy: str = "Strict"
    #: ``Strict`` (provisioning) leaves a pod pending when the reserved capacity it could use
    #: is all handed out in this solve; ``Fallback`` (disruption simulations) lets it use
    #: other capacity.
    reserved_offering_mode: str = "Strict"
    #: Default topology spread constraints given to pods without their own; the solver reads
    #: them from the pods, the callers that build pod requests stamp them on.
    default_spread: tuple[api.TopologySpreadConstraint, ...] = ()
    #: Work out each pod's effective zone as the solve begins (the provisioner's
    #: pending-pods metric; see :mod:`nodewright.scheduling.solver.effectivezone`).
    effective_zones: bool = False
    #: ``IGNORE_DRA_REQUESTS=false``: the callers read pods' ResourceClaims and the cluster's
    #: devices and hand them to the solve (its ``devices``).
    dra: bool = False
    #: The most NodeClaims one solve opens (None: no bound). Once it has opened that many,
    #: the solve stops where it is and the pods not yet placed wait, unreported, for the
    #: next pass: a simulation passes what its launch limit leaves, so a pass never plans
    #: more nodes than the run may launch (:mod:`nodewright.simulation.limits`).
    max_new_claims: int | None = None


@dataclass
class NewNodeClaim:
    """A NodeClaim the solver wants created, and the pods it was sized for."""

    node_pool: str
    #: Final requirements: the template's, intersected with every pod's, plus
    #: ``node.kubernetes.io/instance-type In [...]`` and ``karpenter.sh/capacity-type In [...]``.
    requirements: Requirements
    #: Options, cheapest compatible available offering first; at most ``max_instance_types``.
    instance_types: list[InstanceType]
    pods: list[PodRequest]
    #: Pod requests plus the smallest daemonset overhead among its instance types' groups.
    requests: ResourceList
    #: A placeholder name used while solving (``hostname-placeholder-0001``).
    hostname: str = ""
    #: BestEffort lowered a minValues of its NodePool's requirements.
    min_values_relaxed: bool = False
    #: DRA drivers whose devices were allocated to its pods (Karpenter's
    #: ``karpenter.sh/requested-dra-drivers``), sorted.
    dra_drivers: tuple[str, ...] = ()


@dataclass
class SchedulingResult:
    new_node_claims: list[NewNodeClaim] = field(default_factory=list)
    #: Existing node (or in-flight NodeClaim) name → pods expected to land there.
    existing_nodes: dict[str, list[PodRequest]] = field(default_factory=dict)
    #: Pod key (``namespace/name``) → why it cannot be scheduled, in Karpenter's words.
    errors: dict[str, str] = field(default_factory=dict)
    #: Keys of pods in ``errors`` that only wait for reserved capacity to be counted again:
    #: no FailedScheduling for them, the next pass places them.
    awaiting_reservation: set[str] = field(default_factory=set)
    #: Pod key → its effective zone as the solve began (with ``effective_zones`` only).
    effective_zones: dict[str, str] = field(default_factory=dict)
    #: The solve stopped at ``max_new_claims``: pods it did not reach are in no field.
    capped: bool = False
    #: How many times the solve tried to open a NodeClaim from a NodePool for a pod: the
    #: costliest step of a solve (every instance type is weighed), counted as work.
    claims_tried: int = field(default=0, compare=False)
    #: A trial solve stopped as soon as its consolidation answer was sure to be "no"
    #: (:mod:`nodewright.scheduling.solver.decision`): no other field is complete.
    decided_no: bool = False

    def scheduled_count(self) -> int:
        return sum(len(c.pods) for c in self.new_node_claims) + sum(
            len(p) for p in self.existing_nodes.values()
        )
