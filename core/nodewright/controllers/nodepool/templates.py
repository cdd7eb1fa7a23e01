"""NodePools as the solver sees them: requirements, taints, instance types that can launch,
the room left under the pool's limits, and the daemonset pods that would run on each type.

Provisioning and disruption's rescheduling simulations both build their templates here, so a
replacement is judged against the same pools a pending pod would be.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.apps import DaemonSet
from nodewright.api.core import Pod
from nodewright.api.karpenter import NodePool
from nodewright.api.labels import WELL_KNOWN_LABELS
from nodewright.controllers.state.cluster import ClusterView
from nodewright.controllers.state.solverdata import node_pool_requirements
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import DaemonOverheadGroup, NodePoolTemplate
from nodewright.scheduling.pods import (
    has_dra_requirements,
    pod_host_ports,
    pod_requests,
    pod_requirement_terms,
    pod_tolerations,
    taints_from_api,
)
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import ResourceList, merge, parse_resources
from nodewright.scheduling.taints import Taint, tolerates_all


def node_pool_template(
    pool: NodePool,
    instance_types: Sequence[InstanceType],
    view: ClusterView,
    pods_of_daemons: Sequence[Pod],
    well_known: frozenset[str] = WELL_KNOWN_LABELS,
) -> NodePoolTemplate | None:
    """The pool as the solver sees it, or None when no instance type can be launched from it."""
    requirements = node_pool_requirements(pool)
    if not any(_launchable(it, requirements) for it in instance_types):
        return None
    taints = taints_from_api(pool.spec.template.spec.taints)
    return NodePoolTemplate(
        name=pool.name,
        weight=pool.spec.weight or 0,
        requirements=requirements,
        taints=taints,
        instance_types=tuple(instance_types),
        remaining=_remaining(pool, view),
        daemon_groups=daemon_overhead_groups(
            pods_of_daemons, requirements, taints, instance_types, well_known
        ),
    )


def _launchable(instance_type: InstanceType, requirements: Requirements) -> bool:
    """True when the pool's requirements allow this type and one of its available offerings."""
    if not instance_type.requirements.meets(requirements):
        return False
    return any(o.available and o.matches(requirements) for o in instance_type.offerings)


def _remaining(pool: NodePool, view: ClusterView) -> ResourceList | None:
    """The pool's limits less what its NodeClaims already hold (None when unlimited)."""
    if not pool.spec.limits:
        return None
    limits = parse_resources(pool.spec.limits)
    used: list[ResourceList] = []
    count = 0
    for claim in view.state.claims_of_pool(pool.name).values():
        count += 1
        capacity = claim.status.capacity or claim.spec.resources.requests
        used.append(parse_resources(capacity))
    total = merge(*used)
    total["nodes"] = count * 1000
    return {name: limits[name] - total.get(name, 0) for name in limits}


def daemon_pods(daemonsets: Sequence[DaemonSet], dra: bool = False) -> list[Pod]:
    """The pod each daemonset would run on a node; one with DRA claims is not counted as node
    overhead unless ``dra`` (Karpenter with ``IGNORE_DRA_REQUESTS``, see
    :mod:`nodewright.scheduling.dra`)."""
    pods = [Pod(metadata=d.spec.template.metadata, spec=d.spec.template.spec) for d in daemonsets]
    return pods if dra else [p for p in pods if not has_dra_requirements(p)]


def daemon_overhead_groups(
    daemon_pods: Sequence[Pod],
    requirements: Requirements,
    taints: Sequence[Taint],
    instance_types: Sequence[InstanceType],
    well_known: frozenset[str] = WELL_KNOWN_LABELS,
) -> tuple[DaemonOverheadGroup, ...]:
    """The pool's instance types grouped by the daemonset pods that would run on them.

    A daemonset pod runs on a type when it tolerates the pool's taints and one of its
    required node-affinity terms is compatible with both the pool's requirements and the
    type's labels (custom keys the type does not define are not held against it).
    """
    tolerant = [p for p in daemon_pods if tolerates_all(pod_tolerations(p), taints) is None]
    terms = {
        index: [t for t in pod_requirement_terms(p) if requirements.compatible(t, well_known)]
        for index, p in enumerate(tolerant)
    }
    members: dict[tuple[int, ...], list[str]] = {}
    for instance_type in instance_types:
        landing = tuple(
            index
            for index, pod_terms in terms.items()
            if any(instance_type.requirements.meets(t) for t in pod_terms)
        )
        members.setdefault(landing, []).append(instance_type.name)
    groups: list[DaemonOverheadGroup] = []
    for landing, names in members.items():
        if not landing:
            continue
        pods = [tolerant[index] for index in landing]
        groups.append(
            DaemonOverheadGroup(
                overhead=merge(*(pod_requests(p) for p in pods)),
                instance_types=frozenset(names),
                host_ports=tuple(port for p in pods for port in pod_host_ports(p)),
            )
        )
    return tuple(groups)
