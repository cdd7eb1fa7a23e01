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

#: Groupings a :class:`DaemonGroupMemo` keeps before it starts over.
_GROUPINGS_KEPT = 64

#: Each tolerant daemon pod's required terms that the pool allows.
_Terms = tuple[tuple[Requirements, ...], ...]


class DaemonGroupMemo:
    """Which daemon pods land on which of a catalog's types, kept from call to call.

    A controller builds its pools' templates pass after pass from the same catalog lists
    (the catalog hands out one list per answer) and the same daemonsets; grouping a catalog
    of a thousand types by the daemon pods' terms is then the same answer every time. It is
    kept per list of types (held, so the key names the same objects while it is kept) and
    per the daemon pods' terms.
    """

    def __init__(self) -> None:
        self._kept: dict[
            tuple[_Terms, int], tuple[Sequence[InstanceType], dict[tuple[int, ...], list[str]]]
        ] = {}

    def members(
        self, terms: _Terms, instance_types: Sequence[InstanceType]
    ) -> dict[tuple[int, ...], list[str]]:
        key = (terms, id(instance_types))
        kept = self._kept.get(key)
        if kept is not None:  # the entry holds its list, so no other list has that id
            return kept[1]
        members = _members(terms, instance_types)
        if len(self._kept) >= _GROUPINGS_KEPT:
            self._kept.clear()
        self._kept[key] = (instance_types, members)
        return members


def node_pool_template(
    pool: NodePool,
    instance_types: Sequence[InstanceType],
    view: ClusterView,
    pods_of_daemons: Sequence[Pod],
    well_known: frozenset[str] = WELL_KNOWN_LABELS,
    *,
    memo: DaemonGroupMemo | None = None,
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
            pods_of_daemons, requirements, taints, instance_types, well_known, memo=memo
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
    *,
    memo: DaemonGroupMemo | None = None,
) -> tuple[DaemonOverheadGroup, ...]:
    """The pool's instance types grouped by the daemonset pods that would run on them.

    A daemonset pod runs on a type when it tolerates the pool's taints and one of its
    required node-affinity terms is compatible with both the pool's requirements and the
    type's labels (custom keys the type does not define are not held against it).
    """
    tolerant = [p for p in daemon_pods if tolerates_all(pod_tolerations(p), taints) is None]
    terms = tuple(
        tuple(t for t in pod_requirement_terms(p) if requirements.compatible(t, well_known))
        for p in tolerant
    )
    if memo is not None:
        members = memo.members(terms, instance_types)
    else:
        members = _members(terms, instance_types)
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


def _members(
    terms: _Terms, instance_types: Sequence[InstanceType]
) -> dict[tuple[int, ...], list[str]]:
    """The types' names by the indices (into ``terms``) of the daemon pods that land there."""
    members: dict[tuple[int, ...], list[str]] = {}
    for instance_type in instance_types:
        landing = tuple(
            index
            for index, pod_terms in enumerate(terms)
            if any(instance_type.requirements.meets(t) for t in pod_terms)
        )
        members.setdefault(landing, []).append(instance_type.name)
    return members
