"""NodePools over Karpenter's fake catalog, and its test pods, as nodewright objects.

The catalog is the test kit's (:func:`nodewright.testing.karpenter_instance_types`), priced as
Karpenter prices it (unlike ``scheduling_fakes``, whose spot is discounted), so "cheapest type"
means the same thing here and in Karpenter's suite.

Pods are built as :class:`nodewright.api.core.Pod` objects, like ``test.UnschedulablePod``,
and turned into solver input with :func:`nodewright.scheduling.pods.pod_request`, so the
scenarios exercise pod parsing too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import count
from typing import Any

from nodewright.api import core as api
from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    WELL_KNOWN_LABELS,
    ZONE_LABEL,
)
from nodewright.api.meta import ObjectMeta
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import (
    ExistingNode,
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.pods import pod_request
from nodewright.scheduling.solver.scheduler import solve
from nodewright.testing.catalog import (
    CPU_LABEL,
    SIZE_LABEL,
    SPECIAL_LABEL,
    karpenter_instance_types,
)
from tests.scheduling import scheduling_fakes

#: The scheduling suite's NodePool allows every capacity type.
ALL_CAPACITY_TYPES = (CAPACITY_TYPE_LABEL, "In", ["spot", "on-demand", "reserved"])

Spec = tuple[str, str, Sequence[str]]


def node_pool(
    name: str = "default",
    *,
    instance_types: Sequence[InstanceType] | None = None,
    **fields: Any,
) -> NodePoolTemplate:
    """:func:`tests.scheduling.scheduling_fakes.node_pool` over Karpenter's fake catalog at
    Karpenter's own prices unless ``instance_types``."""
    types = instance_types if instance_types is not None else karpenter_instance_types()
    return scheduling_fakes.node_pool(name, instance_types=types, **fields)


# -- pods ------------------------------------------------------------------------------------

_names = count(1)


def _expressions(specs: Iterable[Spec]) -> list[api.NodeSelectorRequirement]:
    return [api.NodeSelectorRequirement(key=k, operator=o, values=list(v)) for k, o, v in specs]


def container(
    cpu: str | None = None,
    memory: str | None = None,
    *,
    extra: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    host_ports: Sequence[int] = (),
    restart_policy: str | None = None,
) -> api.Container:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra or {})
    return api.Container(
        name=f"c{next(_names)}",
        image="pause",
        resources=api.ResourceRequirements(requests=requests, limits=dict(limits or {})),
        ports=[api.ContainerPort(container_port=p, host_port=p) for p in host_ports],
        restart_policy=restart_policy,
    )


def make_pod(
    cpu: str | None = None,
    memory: str | None = None,
    *,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    required: Sequence[Sequence[Spec]] = (),
    preferred: Sequence[tuple[int, Sequence[Spec]]] = (),
    tolerations: Sequence[api.Toleration] = (),
    host_ports: Sequence[int] = (),
    init_containers: Sequence[api.Container] = (),
    overhead: Mapping[str, str] | None = None,
    spread: Sequence[api.TopologySpreadConstraint] = (),
    pod_affinity: Sequence[api.PodAffinityTerm] = (),
    pod_anti_affinity: Sequence[api.PodAffinityTerm] = (),
    volumes: Sequence[str] = (),
) -> api.Pod:
    """``test.UnschedulablePod``: one container with these requests, pending."""
    name = name or f"pod-{next(_names):05d}"
    node_affinity = None
    if required or preferred:
        node_affinity = api.NodeAffinity(
            required_during_scheduling_ignored_during_execution=(
                api.NodeSelector(
                    node_selector_terms=[
                        api.NodeSelectorTerm(match_expressions=_expressions(term))
                        for term in required
                    ]
                )
                if required
                else None
            ),
            preferred_during_scheduling_ignored_during_execution=[
                api.PreferredSchedulingTerm(
                    weight=weight,
                    preference=api.NodeSelectorTerm(match_expressions=_expressions(term)),
                )
                for weight, term in preferred
            ],
        )
    affinity = api.Affinity(
        node_affinity=node_affinity,
        pod_affinity=(
            api.PodAffinity(required_during_scheduling_ignored_during_execution=list(pod_affinity))
            if pod_affinity
            else None
        ),
        pod_anti_affinity=(
            api.PodAffinity(
                required_during_scheduling_ignored_during_execution=list(pod_anti_affinity)
            )
            if pod_anti_affinity
            else None
        ),
    )
    return api.Pod(
        metadata=ObjectMeta(
            name=name, namespace="default", uid=f"uid-{name}", labels=dict(labels or {})
        ),
        spec=api.PodSpec(
            node_selector=dict(node_selector or {}),
            affinity=affinity,
            tolerations=list(tolerations),
            containers=[container(cpu, memory, extra=extra, limits=limits, host_ports=host_ports)],
            init_containers=list(init_containers),
            overhead=dict(overhead or {}),
            topology_spread_constraints=list(spread),
            volumes=[
                api.Volume(
                    name=claim,
                    persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(claim_name=claim),
                )
                for claim in volumes
            ],
        ),
        status=api.PodStatus(
            phase="Pending",
            conditions=[
                api.PodCondition(type="PodScheduled", status="False", reason="Unschedulable")
            ],
        ),
    )


def requests_for(pods: Sequence[api.Pod]) -> list[PodRequest]:
    """Solver input for ``pods``, in creation order."""
    return [pod_request(p, order=i) for i, p in enumerate(pods)]


def selector(labels: Mapping[str, str]) -> api.LabelSelector:
    return api.LabelSelector(match_labels=dict(labels))


def zonal_spread(
    labels: Mapping[str, str], *, max_skew: int = 1, min_domains: int | None = None
) -> api.TopologySpreadConstraint:
    return api.TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=ZONE_LABEL,
        when_unsatisfiable="DoNotSchedule",
        label_selector=selector(labels),
        min_domains=min_domains,
    )


# -- one provisioning pass ------------------------------------------------------------------

#: Karpenter's fake provider makes its own labels well known.
FAKE_OPTIONS = SolverOptions(
    well_known_labels=WELL_KNOWN_LABELS | {SIZE_LABEL, SPECIAL_LABEL, CPU_LABEL}
)
#: The scheduling suite's NodePool: every capacity type, nothing else.
SUITE_POOL = [ALL_CAPACITY_TYPES]
AMD64 = {ARCH_LABEL: "amd64"}


def provision(
    pods: Sequence[api.Pod],
    pools: Sequence[NodePoolTemplate] | None = None,
    existing: Sequence[ExistingNode] = (),
) -> SchedulingResult:
    """One provisioning pass: pods parsed from their spec, the suite's NodePool by default."""
    templates = pools if pools is not None else [node_pool(requirements=SUITE_POOL)]
    return solve(requests_for(pods), existing, templates, FAKE_OPTIONS)


def claim_of(result: SchedulingResult, pod: api.Pod) -> NewNodeClaim:
    """The NodeClaim ``pod`` was placed on (fails if it stayed pending or went elsewhere)."""
    for claim in result.new_node_claims:
        if any(p.name == pod.name for p in claim.pods):
            return claim
    raise AssertionError(f"{pod.name} is not on a new NodeClaim; errors: {result.errors}")


def scheduled(result: SchedulingResult, pod: api.Pod) -> bool:
    placed = [p for c in result.new_node_claims for p in c.pods]
    placed += [p for pods in result.existing_nodes.values() for p in pods]
    return any(p.name == pod.name for p in placed)


def error_of(result: SchedulingResult, pod: api.Pod) -> str:
    return result.errors[f"default/{pod.name}"]


def pods_per_zone(result: SchedulingResult) -> list[int]:
    """Karpenter's ``ExpectSkew`` on zones: pods per zone, smallest first. A NodeClaim not
    pinned to one zone counts under ``None`` (and so breaks a zonal expectation)."""
    counts: Counter[str | None] = Counter()
    for claim in result.new_node_claims:
        counts[zone_of(claim)] += len(claim.pods)
    assert None not in counts, f"NodeClaims not pinned to a zone: {counts}"
    return sorted(counts.values())


def node_label(claim: NewNodeClaim, key: str) -> str | None:
    """The label a node launched for ``claim`` would carry: set by its requirements, else by
    the launched instance type."""
    requirement = claim.requirements.get(key)
    if requirement is not None and not requirement.complement and len(requirement.values) == 1:
        return next(iter(requirement.values))
    found = claim.instance_types[0].requirements.get(key)
    if found is not None and not found.complement and len(found.values) == 1:
        return next(iter(found.values))
    return None


def in_flight(claim: NewNodeClaim, name: str) -> ExistingNode:
    """The not-yet-ready node the fake provider makes of ``claim``: cheapest type, first
    offering that fits the claim's requirements, its pods already counted."""
    chosen = claim.instance_types[0]
    offering = next(o for o in chosen.offerings if o.matches(claim.requirements))
    labels = {
        **{k: v for k, v in claim.requirements.labels().items() if k != HOSTNAME_LABEL},
        **chosen.requirements.labels(),
        ZONE_LABEL: offering.zone,
        CAPACITY_TYPE_LABEL: offering.capacity_type,
        HOSTNAME_LABEL: name,
    }
    return ExistingNode(
        name=name,
        labels=labels,
        taints=(),
        allocatable=chosen.allocatable(),
        requested=claim.requests,
        initialized=False,
        node_claim=name,
        node_pool=claim.node_pool,
        in_flight=True,
    )


# -- reading results -------------------------------------------------------------------------


def launched_type(claim: NewNodeClaim) -> str:
    """What the fake provider launches for a NodeClaim: its cheapest option."""
    return claim.instance_types[0].name


def zone_of(claim: NewNodeClaim) -> str | None:
    """The zone the node for ``claim`` must land in, or None while the provider may still
    choose among several (the zones where its cheapest type is sold under its requirements)."""
    zones = {
        o.zone
        for o in claim.instance_types[0].offerings
        if o.available and o.matches(claim.requirements)
    }
    return next(iter(zones)) if len(zones) == 1 else None
