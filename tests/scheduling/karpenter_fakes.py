"""Karpenter's fake cloud provider catalog and its test pods, as nodewright objects.

Mirrors ``pkg/cloudprovider/fake`` (``GetInstanceTypes``, ``NewInstanceType``,
``PriceFromResources``): every type defaults to 4 CPU / 4Gi / 5 pods, reserves 100m CPU and
10Mi memory, is sold as spot in zones 1-2 and on-demand in zones 1-3 at one price (0.1 per
CPU, 0.1 per GB of memory, +1 for a GPU), runs linux, windows and darwin, and carries the
fake's own labels ``size`` (small/large), ``special`` (only on large types) and ``integer``
(its CPU count). Unlike ``scheduling_fakes`` (spot discounted), prices match Karpenter's so
"cheapest type" means the same thing in both.

Pods are built as :class:`nodewright.api.core.Pod` objects, like ``test.UnschedulablePod``,
and turned into solver input with :func:`nodewright.scheduling.pods.pod_request`, so the
scenarios exercise pod parsing too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import count

from nodewright.api import core as api
from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import ObjectMeta
from nodewright.scheduling.instancetype import InstanceType, InstanceTypeOverhead, Offering
from nodewright.scheduling.model import (
    DaemonOverheadGroup,
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
)
from nodewright.scheduling.pods import pod_request
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.resources import ResourceList, parse_resources, resources
from nodewright.scheduling.taints import Taint

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
GPU_A = "fake.com/vendor-a"
GPU_B = "fake.com/vendor-b"
SIZE_LABEL = "size"
SPECIAL_LABEL = "special"
INTEGER_LABEL = "integer"
#: The scheduling suite's NodePool allows every capacity type.
ALL_CAPACITY_TYPES = (CAPACITY_TYPE_LABEL, "In", ["spot", "on-demand", "reserved"])

Spec = tuple[str, str, Sequence[str]]

_GIB = 1024**3


def price_from_resources(capacity: Mapping[str, int]) -> float:
    """``fake.PriceFromResources``; capacity in milli-units."""
    price = 0.1 * capacity.get("cpu", 0) / 1000
    price += 0.1 * capacity.get("memory", 0) / 1000 / 1e9
    price += sum(1.0 for gpu in (GPU_A, GPU_B) if capacity.get(gpu, 0))
    return price


def default_offerings(price: float) -> list[Offering]:
    return [
        *(Offering(zone, "spot", price) for zone in ZONES[:2]),
        *(Offering(zone, "on-demand", price) for zone in ZONES),
    ]


def instance_type(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "4Gi",
    pods: str = "5",
    arch: str = "amd64",
    oses: Sequence[str] = ("linux", "windows", "darwin"),
    extra: Mapping[str, str] | None = None,
    offerings: Sequence[Offering] | None = None,
) -> InstanceType:
    """``fake.NewInstanceType``: defaults for missing resources, the fake's labels, offerings."""
    capacity = parse_resources({"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})})
    large = capacity["cpu"] > 4000 and capacity["memory"] > 8 * _GIB * 1000
    requirements = Requirements(
        [
            Requirement.of(INSTANCE_TYPE_LABEL, "In", [name]),
            Requirement.of(ARCH_LABEL, "In", [arch]),
            Requirement.of(OS_LABEL, "In", sorted(oses)),
            Requirement.of(SIZE_LABEL, "In", ["large" if large else "small"]),
            Requirement.of(
                SPECIAL_LABEL, *(("In", ["optional"]) if large else ("DoesNotExist", []))
            ),
            Requirement.of(INTEGER_LABEL, "In", [str(capacity["cpu"] // 1000)]),
        ]
    )
    return InstanceType(
        name,
        requirements,
        capacity,
        InstanceTypeOverhead(kube_reserved=resources(cpu="100m", memory="10Mi")),
    ).with_offerings(
        offerings if offerings is not None else default_offerings(price_from_resources(capacity))
    )


def catalog() -> tuple[InstanceType, ...]:
    """``fake.CloudProvider.GetInstanceTypes`` with no overrides."""
    return (
        instance_type("default-instance-type"),
        instance_type("small-instance-type", cpu="2", memory="2Gi"),
        instance_type("gpu-vendor-instance-type", extra={GPU_A: "2"}),
        instance_type("gpu-vendor-b-instance-type", extra={GPU_B: "2"}),
        instance_type(
            "arm-instance-type",
            cpu="16",
            memory="128Gi",
            arch="arm64",
            oses=("ios", "linux", "windows", "darwin"),
        ),
        instance_type("single-pod-instance-type", pods="1"),
    )


def node_pool(
    name: str = "default",
    *,
    weight: int = 0,
    requirements: Sequence[Spec] = (),
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    instance_types: Sequence[InstanceType] | None = None,
    remaining: ResourceList | None = None,
    daemon_overhead: ResourceList | None = None,
) -> NodePoolTemplate:
    """A NodePool as the solver sees it (requirements, template labels and its own name)."""
    merged = Requirements.of((NODEPOOL_LABEL, "In", [name]), *requirements).add(
        Requirements.from_labels(labels or {})
    )
    return NodePoolTemplate(
        name=name,
        weight=weight,
        requirements=merged,
        taints=tuple(taints),
        instance_types=tuple(instance_types if instance_types is not None else catalog()),
        remaining=remaining,
        daemon_groups=(DaemonOverheadGroup(daemon_overhead),) if daemon_overhead else (),
    )


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
