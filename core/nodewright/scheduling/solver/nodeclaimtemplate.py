"""A NodePool during one solve (Karpenter's ``NodeClaimTemplate``): the types it can launch,
the limits it has left, its topology domains, and memo tables its claims share."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from nodewright.api.labels import ZONE_LABEL
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import HostPort, NodePoolTemplate
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import (
    CPU,
    MEMORY,
    PODS,
    ResourceList,
    format_resources_json,
    maximum,
    minimum,
)
from nodewright.scheduling.solver.constraints import port_conflict, taint_error, untolerated
from nodewright.scheduling.solver.instancetypes import (
    InstanceTypeOption,
    allocatable_ceiling,
    allocatable_floor,
    options_fitting,
    overhead_group,
)
from nodewright.scheduling.taints import Toleration
from nodewright.scheduling.topology import DomainSource

#: The ``nodes`` key of NodePool limits counts NodeClaims; one node in milli-units.
NODES = "nodes"
ONE_NODE = 1000
#: Sets of options whose bounds a pool keeps before it starts over.
_BOUNDS_KEPT = 1024
#: Narrowings by requests a pool keeps before it starts over.
_FITTING_KEPT = 512


def _reachable_zones(
    instance_type: InstanceType, requirements: Requirements
) -> dict[str, bool] | None:
    """Zone -> whether a non-fallback offering reaches it, over the offerings whose labels
    ``requirements`` allow (capacity type aside, as Karpenter's domains ignore it); None for
    a type without offerings."""
    if not instance_type.offerings:
        return None
    zones: dict[str, bool] = {}
    for offering in instance_type.offerings:
        allowed = True
        for key, value in offering.labels.items():
            requirement = requirements.get(key)
            if requirement is not None and not requirement.has(value):
                allowed = False
                break
        if allowed:
            zones[offering.zone] = zones.get(offering.zone, False) or not offering.fallback
    return zones


class NodeClaimTemplate:
    """A NodePool during one solve: its launchable types, limits left, and memo tables."""

    def __init__(
        self,
        template: NodePoolTemplate,
        relax_min_values: bool = False,
        reservation_labels: frozenset[str] = frozenset(),
    ) -> None:
        self.name = template.name
        #: BestEffort minValues: lower them to what is achievable instead of failing.
        self.relax_min_values = relax_min_values
        self.requirements = template.requirements
        self.taints = template.taints
        self.daemon_groups = template.daemon_groups
        self.remaining: ResourceList | None = (
            dict(template.remaining) if template.remaining is not None else None
        )
        options: list[InstanceTypeOption] = []
        for it in template.instance_types:
            option = InstanceTypeOption(
                len(options),
                it,
                it.allocatable(),
                tuple(o for o in it.offerings if o.available),
                overhead_group(it.name, template.daemon_groups),
            )
            option.reservation_labels = reservation_labels
            if option.compatible(self.requirements) and option.has_offering(self.requirements):
                options.append(option)
                option.index = len(options) - 1
        self.options = options
        self.taints_tuple = tuple(template.taints)
        self._within_limits: list[InstanceTypeOption] | str | None = None
        self._compatible: dict[Requirements, frozenset[int]] = {}
        self._ranked: dict[Requirements, list[InstanceTypeOption]] = {}
        self._tolerations: dict[tuple[tuple[Toleration, ...], bool], str | None] = {}
        self._port_blocked: dict[tuple[HostPort, ...], frozenset[int]] = {}
        #: The same options -> their smallest and largest allocatable, each once asked for
        #: (:meth:`floor`, :meth:`ceiling`).
        self._bounds: dict[
            tuple[InstanceTypeOption, ...], tuple[tuple[int, int, int] | None, ResourceList | None]
        ] = {}
        #: (options, requests) -> those of the options that hold the requests.
        self._fitting: dict[tuple[object, ...], list[InstanceTypeOption]] = {}
        overheads = [g.overhead for g in template.daemon_groups if g.overhead]
        #: Smallest and largest daemonset overhead, for failure messages.
        self.overhead_bounds: tuple[ResourceList, ResourceList] | None = (
            (minimum(overheads), maximum(overheads)) if overheads else None
        )
        self._domains: DomainSource | None = None

    def fork(self, remaining: ResourceList | None) -> NodeClaimTemplate:
        """This pool for another solve: the same types and memo tables (what they hold
        depends on the pool alone), its own limits left (``remaining``)."""
        forked = copy.copy(self)
        forked.remaining = dict(remaining) if remaining is not None else None
        forked._within_limits = None
        return forked

    def floor(self, options: Sequence[InstanceTypeOption]) -> tuple[int, int, int]:
        """What every one of ``options`` (this pool's) holds: see
        :func:`~nodewright.scheduling.solver.instancetypes.allocatable_floor`."""
        key = tuple(options)
        floor, ceiling = self._bounds.get(key, (None, None))
        if floor is None:
            floor = allocatable_floor(options)
            self._keep_bounds(key, floor, ceiling)
        return floor

    def ceiling(self, options: Sequence[InstanceTypeOption]) -> ResourceList:
        """The element-wise largest allocatable of ``options`` (this pool's; read-only): see
        :func:`~nodewright.scheduling.solver.instancetypes.allocatable_ceiling`."""
        key = tuple(options)
        floor, ceiling = self._bounds.get(key, (None, None))
        if ceiling is None:
            ceiling = allocatable_ceiling(options)
            self._keep_bounds(key, floor, ceiling)
        return ceiling

    def fitting(
        self, options: Sequence[InstanceTypeOption], requests: ResourceList
    ) -> list[InstanceTypeOption]:
        """Those of ``options`` (this pool's) that hold ``requests``: see
        :func:`~nodewright.scheduling.solver.instancetypes.options_fitting`. The list is
        shared: read it, never change it."""
        others = tuple(
            (name, value)
            for name, value in requests.items()
            if value > 0 and name not in (CPU, MEMORY, PODS)
        )
        key = (
            tuple(options),
            requests.get(CPU, 0),
            requests.get(MEMORY, 0),
            requests.get(PODS, 0),
            others,
        )
        found = self._fitting.get(key)
        if found is None:
            found = options_fitting(options, requests)
            if len(self._fitting) >= _FITTING_KEPT:
                self._fitting.clear()
            self._fitting[key] = found
        return found

    def _keep_bounds(
        self,
        key: tuple[InstanceTypeOption, ...],
        floor: tuple[int, int, int] | None,
        ceiling: ResourceList | None,
    ) -> None:
        # Claims of one pool narrow its options the same few ways in solve after solve (the
        # same requests cut the same types), so few distinct sets come back thousands of
        # times; the key holds the options themselves, so it names the same objects for as
        # long as it is kept.
        if len(self._bounds) >= _BOUNDS_KEPT:
            self._bounds.clear()
        self._bounds[key] = (floor, ceiling)

    def port_blocked(self, ports: tuple[HostPort, ...]) -> frozenset[int]:
        """Indices of types whose daemonset pods already hold one of ``ports``."""
        found = self._port_blocked.get(ports)
        if found is None:
            found = frozenset(
                o.index
                for o in self.options
                if o.daemon_ports and port_conflict(ports, o.daemon_ports) is not None
            )
            self._port_blocked[ports] = found
        return found

    def overhead_text(self) -> str:
        """The ``daemonset overhead=`` part of a failure message ("" without daemons)."""
        if self.overhead_bounds is None:
            return ""
        low, high = self.overhead_bounds
        if low == high:
            return f"daemonset overhead={format_resources_json(low)}, "
        return (
            f"daemonset overhead=min={format_resources_json(low)} "
            f"max={format_resources_json(high)}, "
        )

    def domain_source(self) -> DomainSource:
        """The topology domains this pool's nodes can have (Karpenter's ``buildDomainGroups``).

        A type's zones are those of its offerings whose labels the pool allows: a pool
        restricted to Azure's ``placement-scope In [zonal]`` does not reach the regional
        zone ``0``. Zones reached only through fallback offerings are marked as such.
        Worked out once: it depends on the pool's types and requirements alone, which its
        forks share.
        """
        if self._domains is None:
            self._domains = self._domain_source()
        return self._domains

    def _domain_source(self) -> DomainSource:
        domains: dict[str, set[str]] = {}
        preferred_zones: set[str] = set()
        for option in self.options:
            instance_type = option.instance_type
            merged = self.requirements.add(instance_type.requirements)
            reachable = _reachable_zones(instance_type, self.requirements)
            for key, requirement in merged.items():
                if requirement.complement:
                    continue
                values = requirement.values
                if key == ZONE_LABEL and reachable is not None:
                    values = values & reachable.keys()
                    preferred_zones.update(z for z in values if reachable[z])
                domains.setdefault(key, set()).update(values)
        for key, requirement in self.requirements.items():
            if not requirement.complement:
                domains.setdefault(key, set()).update(requirement.values)
        fallback = frozenset(domains.get(ZONE_LABEL, set()) - preferred_zones)
        return DomainSource(
            {k: frozenset(v) for k, v in domains.items()},
            self.taints_tuple,
            {ZONE_LABEL: fallback} if fallback else {},
        )

    def taint_problem(self, tolerations: tuple[Toleration, ...], relaxed: bool) -> str | None:
        key = (tolerations, relaxed)
        if key not in self._tolerations:
            refused = untolerated(tolerations, self.taints, relaxed)
            self._tolerations[key] = taint_error(refused) if refused else None
        return self._tolerations[key]

    def ranked(self, requirements: Requirements) -> list[InstanceTypeOption]:
        """Every option, cheapest offering under ``requirements`` first, ties by name."""
        found = self._ranked.get(requirements)
        if found is None:
            found = sorted(
                self.options, key=lambda o: (o.offer(requirements)[0], o.instance_type.name)
            )
            self._ranked[requirements] = found
        return found

    def compatible_ids(self, requirements: Requirements) -> frozenset[int]:
        """Indices of types that meet ``requirements`` and can be bought under them."""
        found = self._compatible.get(requirements)
        if found is None:
            found = frozenset(
                o.index
                for o in self.options
                if o.compatible(requirements) and o.has_offering(requirements)
            )
            self._compatible[requirements] = found
        return found

    def within_limits(self) -> list[InstanceTypeOption] | str:
        """Types that would not breach the pool's limits, or why none can be launched."""
        if self._within_limits is not None:
            return self._within_limits
        remaining = self.remaining
        if remaining is None:
            result: list[InstanceTypeOption] | str = self.options
        elif NODES in remaining and remaining[NODES] < ONE_NODE:
            result = f'node limits have been exhausted for nodepool: "{self.name}"'
        else:
            limited = [
                o
                for o in self.options
                if all(
                    o.instance_type.capacity.get(name, 0) <= value
                    for name, value in remaining.items()
                    if name != NODES
                )
            ]
            result = (
                limited
                if limited
                else f'all available instance types exceed limits for nodepool: "{self.name}"'
            )
        self._within_limits = result
        return result

    def charge(self, options: Sequence[InstanceTypeOption]) -> None:
        """Count a new NodeClaim against the limits, pessimistically at its largest option."""
        if self.remaining is None or not options:
            return
        for name in self.remaining:
            if name == NODES:
                self.remaining[name] -= ONE_NODE
            else:
                self.remaining[name] -= max(o.instance_type.capacity.get(name, 0) for o in options)
        self._within_limits = None
