"""The provisioning solver: place pending pods on existing nodes, or size new NodeClaims.

This follows Karpenter's scheduler (``pkg/controllers/provisioning/scheduling``) decision for
decision, because users read its outcomes and its messages:

* pods are tried largest first (CPU, then memory), each failure going to the back of the
  queue, until a full pass over the queue makes no progress;
* a pod goes to the first existing node that takes it (initialized nodes first, then by
  name), else to a NodeClaim opened earlier in this solve (fewest pods first), else to a new
  NodeClaim from the first NodePool that can launch one (heaviest weight first, equal
  weights by name descending);
* a NodeClaim keeps every instance type that could still hold all its pods, and the result
  lists them cheapest first rather than choosing one;
* a pod that fits nowhere has one preference relaxed (first ORed required term, then the
  heaviest preferred term, then PreferNoSchedule taints) and is retried;
* reserved capacity is handed out per NodeClaim, no more than each reservation can take,
  and (in ``Strict`` mode) a pod that could use a reservation but finds it all taken waits
  for the next pass rather than fall back to other capacity or lighter NodePools.

Everything here is pure. Per-instance-type data (allocatable, available offerings) is
computed once per solve, and requirement merges and compatibility sets are memoised on
their (hash-cached) :class:`~nodewright.scheduling.requirements.Requirements`, so pods that
ask for the same thing share the work.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter

from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_RESERVED,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    KNOWN_EPHEMERAL_TAINTS,
    ZONE_LABEL,
)
from nodewright.scheduling.dra import split_dra_pods
from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.model import (
    DaemonOverheadGroup,
    ExistingNode,
    HostPort,
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.repack import repack
from nodewright.scheduling.requirements import (
    DOES_NOT_EXIST,
    NOT_IN,
    Requirement,
    Requirements,
)
from nodewright.scheduling.resources import (
    CPU,
    MEMORY,
    PODS,
    ResourceList,
    format_resources_json,
    maximum,
    merge,
    subtract,
)
from nodewright.scheduling.taints import PREFER_NO_SCHEDULE, Taint, Toleration
from nodewright.scheduling.topology import (
    DomainSource,
    PlacedPod,
    PodTopology,
    Topology,
    TopologyGroup,
    TopologyTerm,
)

#: The ``nodes`` key of NodePool limits counts NodeClaims; one node in milli-units.
NODES = "nodes"
ONE_NODE = 1000
IGNORE_PREFERENCES = "Ignore"
MIN_VALUES_BEST_EFFORT = "BestEffort"
RESERVED_STRICT = "Strict"
#: Entries kept in the solver's per-shape rejection memo before it starts over.
_MEMO_LIMIT = 2_000_000
#: A CPU request this large is almost certainly ``M`` typed for ``m``.
_TYPO_CPU = 10**6 * 1000
#: The overhead group of an instance type no daemonset pod lands on.
_NO_DAEMONS = DaemonOverheadGroup({})

# -- helpers -------------------------------------------------------------------------------


def _fits(requests: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
    for name, value in requests.items():
        if value > 0 and value > allocatable.get(name, 0):
            return False
    return True


def offering_matches(offering: Offering, requirements: Requirements) -> bool:
    """True when a node bought through ``offering`` satisfies ``requirements``."""
    return offering.matches(requirements)


def _untolerated(
    tolerations: Sequence[Toleration], taints: Iterable[Taint], tolerate_prefer_no_schedule: bool
) -> list[Taint]:
    """Taints the pod does not tolerate, Karpenter's way: every effect counts, including
    ``PreferNoSchedule`` until that preference is relaxed."""
    return [
        taint
        for taint in taints
        if not (tolerate_prefer_no_schedule and taint.effect == PREFER_NO_SCHEDULE)
        and not any(t.tolerates(taint) for t in tolerations)
    ]


def _taint_error(taints: Sequence[Taint]) -> str:
    return "; ".join(f"did not tolerate taint (taint={taint})" for taint in taints)


def _port_text(port: HostPort) -> str:
    return f"IP={port.ip} Port={port.port} Proto={port.protocol}"


def _port_conflict(wanted: Sequence[HostPort], used: Sequence[HostPort]) -> str | None:
    for port in wanted:
        for other in used:
            if port.conflicts(other):
                return (
                    f"checking host port usage, {_port_text(port)} conflicts with existing "
                    f"HostPort configuration {_port_text(other)}"
                )
    return None


def _is_ephemeral(taint: Taint, startup: Sequence[Taint]) -> bool:
    if (taint.key, taint.effect) in KNOWN_EPHEMERAL_TAINTS:
        return True
    if taint.key.startswith("readiness.k8s.io/"):
        return True
    return any(s.key == taint.key and s.effect == taint.effect for s in startup)


# -- instance types --------------------------------------------------------------------------


class _TypeOption:
    """An instance type with what the solver asks of it precomputed.

    ``allocatable`` is what is left for pods once the daemonset pods of the type's overhead
    group are counted, so fit checks compare pod requests alone. CPU, memory and pod slots
    are plain attributes because nearly every fit check is about them; what each offering
    set costs under given requirements is cached per requirements (claims from one pool
    share few distinct requirement sets).
    """

    __slots__ = (
        "_offers",
        "allocatable",
        "cpu",
        "daemon_ports",
        "extras",
        "fits_nothing",
        "group",
        "index",
        "instance_type",
        "memory",
        "offerings",
        "pods",
        "reservation_labels",
        "reserved",
    )

    def __init__(
        self,
        index: int,
        instance_type: InstanceType,
        allocatable: ResourceList,
        offerings: tuple[Offering, ...],
        group: DaemonOverheadGroup = _NO_DAEMONS,
    ) -> None:
        self.index = index
        self.instance_type = instance_type
        if group.overhead:
            allocatable = subtract(allocatable, group.overhead)
        self.allocatable = allocatable
        #: The daemons alone do not fit: no pod can go there.
        self.fits_nothing = any(v < 0 for v in allocatable.values())
        self.group = group
        self.daemon_ports = group.host_ports
        #: Available offerings only; unavailable ones never launch.
        self.offerings = offerings
        #: Those of them in a capacity reservation.
        self.reserved = tuple(o for o in offerings if o.reservation is not None)
        self.cpu = -1 if self.fits_nothing else allocatable.get(CPU, 0)
        self.memory = allocatable.get(MEMORY, 0)
        self.pods = allocatable.get(PODS, 0)
        #: Every other resource (GPUs, ephemeral storage...).
        self.extras = tuple((k, v) for k, v in allocatable.items() if k not in (CPU, MEMORY, PODS))
        #: Labels that name a reservation: offerings outside one do not carry them.
        self.reservation_labels: frozenset[str] = frozenset()
        self._offers: dict[Requirements, tuple[float, frozenset[str]]] = {}

    def offer(self, requirements: Requirements) -> tuple[float, frozenset[str]]:
        """The cheapest price and the capacity types of offerings ``requirements`` allow."""
        found = self._offers.get(requirements)
        if found is None:
            matching = [o for o in self.offerings if offering_matches(o, requirements)]
            if self.reservation_labels and _names_a_reservation(
                requirements, self.reservation_labels
            ):
                matching = [o for o in matching if o.reservation is not None]
            found = (
                min((o.price for o in matching), default=float("inf")),
                frozenset(o.capacity_type for o in matching),
            )
            self._offers[requirements] = found
        return found

    def has_offering(self, requirements: Requirements) -> bool:
        return bool(self.offer(requirements)[1])

    def cheapest(self, requirements: Requirements) -> float:
        return self.offer(requirements)[0]

    def compatible(self, requirements: Requirements) -> bool:
        return not self.instance_type.requirements.intersects(requirements)


def _names_a_reservation(requirements: Requirements, labels: frozenset[str]) -> bool:
    """True when ``requirements`` need one of the reservation ``labels`` to be present, which
    only reserved offerings can satisfy (the others lack them, as if ``DoesNotExist``)."""
    for label in labels:
        requirement = requirements.get(label)
        if requirement is not None and requirement.operator not in (NOT_IN, DOES_NOT_EXIST):
            return True
    return False


def _fitting(options: Sequence[_TypeOption], requests: Mapping[str, int]) -> list[_TypeOption]:
    """The options whose allocatable holds ``requests``."""
    cpu = requests.get(CPU, 0)
    memory = requests.get(MEMORY, 0)
    pods = requests.get(PODS, 0)
    others = [(k, v) for k, v in requests.items() if v > 0 and k not in (CPU, MEMORY, PODS)]
    if not others:
        return [o for o in options if o.cpu >= cpu and o.memory >= memory and o.pods >= pods]
    return [
        o
        for o in options
        if o.cpu >= cpu
        and o.memory >= memory
        and o.pods >= pods
        and all(o.allocatable.get(k, 0) >= v for k, v in others)
    ]


def order_by_price(
    instance_types: Iterable[InstanceType], requirements: Requirements
) -> list[InstanceType]:
    """Instance types by their cheapest available offering compatible with ``requirements``
    (types without one last), ties by name."""
    options = [
        _TypeOption(i, it, it.allocatable(), tuple(o for o in it.offerings if o.available))
        for i, it in enumerate(instance_types)
    ]
    options.sort(key=lambda o: (o.cheapest(requirements), o.instance_type.name))
    return [o.instance_type for o in options]


# -- node pools ------------------------------------------------------------------------------


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


class _Template:
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
        options: list[_TypeOption] = []
        for it in template.instance_types:
            option = _TypeOption(
                len(options),
                it,
                it.allocatable(),
                tuple(o for o in it.offerings if o.available),
                _group_of(it.name, template.daemon_groups),
            )
            option.reservation_labels = reservation_labels
            if option.compatible(self.requirements) and option.has_offering(self.requirements):
                options.append(option)
                option.index = len(options) - 1
        self.options = options
        self.taints_tuple = tuple(template.taints)
        self._within_limits: list[_TypeOption] | str | None = None
        self._compatible: dict[Requirements, frozenset[int]] = {}
        self._ranked: dict[Requirements, list[_TypeOption]] = {}
        self._tolerations: dict[tuple[tuple[Toleration, ...], bool], str | None] = {}
        self._port_blocked: dict[tuple[HostPort, ...], frozenset[int]] = {}
        overheads = [g.overhead for g in template.daemon_groups if g.overhead]
        #: Smallest and largest daemonset overhead, for failure messages.
        self.overhead_bounds: tuple[ResourceList, ResourceList] | None = (
            (_smallest(overheads), maximum(overheads)) if overheads else None
        )

    def port_blocked(self, ports: tuple[HostPort, ...]) -> frozenset[int]:
        """Indices of types whose daemonset pods already hold one of ``ports``."""
        found = self._port_blocked.get(ports)
        if found is None:
            found = frozenset(
                o.index
                for o in self.options
                if o.daemon_ports and _port_conflict(ports, o.daemon_ports) is not None
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
        """
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
            untolerated = _untolerated(tolerations, self.taints, relaxed)
            self._tolerations[key] = _taint_error(untolerated) if untolerated else None
        return self._tolerations[key]

    def ranked(self, requirements: Requirements) -> list[_TypeOption]:
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

    def within_limits(self) -> list[_TypeOption] | str:
        """Types that would not breach the pool's limits, or why none can be launched."""
        if self._within_limits is not None:
            return self._within_limits
        remaining = self.remaining
        if remaining is None:
            result: list[_TypeOption] | str = self.options
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

    def charge(self, options: Sequence[_TypeOption]) -> None:
        """Count a new NodeClaim against the limits, pessimistically at its largest option."""
        if self.remaining is None or not options:
            return
        for name in self.remaining:
            if name == NODES:
                self.remaining[name] -= ONE_NODE
            else:
                self.remaining[name] -= max(o.instance_type.capacity.get(name, 0) for o in options)
        self._within_limits = None


# -- NodeClaims being sized ------------------------------------------------------------------


@dataclass(slots=True)
class _Plan:
    requirements: Requirements
    options: list[_TypeOption]
    requests: ResourceList
    #: Reservation IDs the claim would hold; None when no pool offers reserved capacity.
    reserved: frozenset[str] | None = None


class ReservationError(str):
    """Why a pod waits for reserved capacity: the message of a refusal that must not turn
    into a fallback to other capacity, a lighter NodePool, or a relaxed preference."""


class _Reservations:
    """Reserved capacity handed out in one solve (Karpenter's ``ReservationManager``).

    A NodeClaim holds every compatible reservation it could still launch into, so it counts
    against each of them until it is finished and pinned to them.
    """

    def __init__(self, templates: Sequence[_Template], strict: bool) -> None:
        self.strict = strict
        #: Instances each reservation can still take in this solve. Several pools may offer
        #: one reservation, with counts read at different times: the lowest is believed.
        self.capacity: dict[str, int] = {}
        for template in templates:
            for option in template.options:
                for offering in option.reserved:
                    reservation = offering.reservation
                    assert reservation is not None
                    known = self.capacity.get(reservation.id)
                    if known is None or reservation.capacity < known:
                        self.capacity[reservation.id] = reservation.capacity

    def choose(self, claim: _Claim, plan: _Plan) -> _Plan | ReservationError:
        """``plan`` with the reservations the claim would hold, or why it must not go on."""
        compatible = False
        chosen: set[str] = set()
        held = claim.reserved
        for option in plan.options:
            for offering in option.reserved:
                reservation = offering.reservation
                assert reservation is not None
                if not offering.matches(plan.requirements):
                    continue
                compatible = True
                if reservation.id in held or self.capacity.get(reservation.id, 0) > 0:
                    chosen.add(reservation.id)
        if self.strict and not chosen:
            if compatible:
                return ReservationError(
                    "one or more instance types with compatible reserved offerings are "
                    "available, but could not be reserved"
                )
            if held:
                return ReservationError(
                    "satisfying updated nodeclaim constraints would remove all compatible "
                    "reserved offering options"
                )
        plan.reserved = frozenset(chosen)
        return plan

    def hold(self, claim: _Claim, reserved: frozenset[str]) -> None:
        for taken in reserved - claim.reserved:
            self.capacity[taken] -= 1
        for released in claim.reserved - reserved:
            self.capacity[released] += 1
        claim.reserved = reserved


@dataclass(frozen=True, slots=True)
class _Refusal:
    """Why a candidate turned a pod away.

    ``lasting`` refusals hold for every later pod of the same shape while the candidate's
    requirements stay as they are (it only fills up); the solver's memo relies on that.
    A refusal by a topology ``group`` whose answers can turn from no to yes holds until the
    group's epoch moves. ``reason`` may be empty when the caller did not ask for one.
    """

    reason: str
    lasting: bool
    group: TopologyGroup | None = None


_LASTING = _Refusal("", lasting=True)
_PASSING = _Refusal("", lasting=False)


class _Claim:
    """A NodeClaim opened in this solve: its pods and the types that could still hold them."""

    def __init__(
        self,
        template: _Template,
        options: list[_TypeOption],
        memo: _MergeMemo,
        reservations: _Reservations | None = None,
    ) -> None:
        self.template = template
        self.reservations = reservations
        #: Reservation IDs this claim counts against.
        self.reserved: frozenset[str] = frozenset()
        self.requirements = template.requirements
        self.options = options
        #: Requests of its pods; each type's daemonset overhead is already out of its
        #: allocatable, and the smallest is added when the claim is finished.
        self.requests: ResourceList = {}
        self.pods: list[PodRequest] = []
        self.ports: list[HostPort] = []
        self._ceiling: ResourceList | None = None
        self._floor: tuple[int, int, int] | None = None
        self.hostname = ""
        self._memo = memo
        #: Position among claims with as many pods (see :meth:`_Solver._open_claims`).
        self.rank = 0
        #: Grows whenever the claim's requirements narrow.
        self.version = 0

    def plan(
        self, state: _PodState, topology: Topology, hostname: str, explain: bool
    ) -> _Plan | _Refusal:
        """What the claim would look like with the pod added, or why it cannot take it.

        With ``explain`` false the reason may be empty: callers trying many open claims only
        need a yes or no, and working out Karpenter's failure wording costs a full pass.
        """
        pod = state.pod
        problem = self.template.taint_problem(pod.tolerations, state.relaxed_taints)
        if problem is not None:
            return _Refusal(problem, lasting=True)
        if pod.host_ports and self.ports:
            conflict = _port_conflict(pod.host_ports, self.ports)
            if conflict is not None:
                return _Refusal(conflict, lasting=True)
        merged = self._memo.merge(self.requirements, state.requirements)
        if isinstance(merged, str):
            return _Refusal(merged, lasting=True)
        if not explain:
            ceiling = self.ceiling()
            for name, value in pod.requests.items():
                if value > 0 and self.requests.get(name, 0) + value > ceiling.get(name, 0):
                    return _LASTING
        steady = state.topology is None or not state.topology.volatile
        refusal: _Refusal = _LASTING
        for volume in pod.volume_requirements or (None,):
            base = merged
            if volume is not None:
                narrowed = self._memo.merge(base, volume)
                if isinstance(narrowed, str):
                    refusal = _Refusal(f"incompatible volume requirements, {narrowed}", True)
                    continue
                base = narrowed
            if state.topology is not None and state.topology.constraining:
                added, group = topology.requirements(state.topology, state.strict, base, hostname)
                if group is not None:
                    reason = ""
                    if explain:
                        reason = group.describe(state.strict.get(group.key), base.get(group.key))
                    refusal = _Refusal(reason, lasting=group.monotonic, group=group)
                    continue
                if added:
                    narrowed = self._memo.merge(base, Requirements(added))
                    if isinstance(narrowed, str):
                        refusal = _Refusal(narrowed, lasting=steady)
                        continue
                    base = narrowed
            outcome = self._fit(pod, base, explain)
            if isinstance(outcome, _Plan) and self.reservations is not None:
                outcome = self.reservations.choose(self, outcome)
                if isinstance(outcome, ReservationError):
                    # Taken reservations come back when other claims narrow: not lasting.
                    refusal = _Refusal(outcome, lasting=False)
                    continue
            if isinstance(outcome, _Plan):
                return outcome
            refusal = _Refusal(outcome, lasting=steady)
        if len(pod.volume_requirements) > 1:
            # Several alternatives failed for different reasons; only a lasting verdict on
            # all of them could be remembered, and that is rare enough not to track.
            return _Refusal(refusal.reason, lasting=False)
        return refusal

    def _fitting(self, requests: ResourceList) -> list[_TypeOption]:
        """The options that hold ``requests``; all of them while even the smallest does."""
        options = self.options
        if not options:
            return options
        if self._floor is None:
            self._floor = (
                min(map(_CPU_OF, options)),
                min(map(_MEMORY_OF, options)),
                min(map(_PODS_OF, options)),
            )
        cpu, memory, pods = self._floor
        if (
            requests.get(CPU, 0) <= cpu
            and requests.get(MEMORY, 0) <= memory
            and requests.get(PODS, 0) <= pods
            and all(k in (CPU, MEMORY, PODS) or v <= 0 for k, v in requests.items())
        ):
            return options
        return _fitting(options, requests)

    def ceiling(self) -> ResourceList:
        """Element-wise largest allocatable of the options left: a quick upper bound."""
        if self._ceiling is None:
            self._ceiling = _ceiling(self.options)
        return self._ceiling

    def _fit(self, pod: PodRequest, requirements: Requirements, explain: bool) -> _Plan | str:
        """The instance types that still fit everything with the pod added."""
        requests = merge(self.requests, pod.requests)
        if requirements is self.requirements:
            remaining = self._fitting(requests)
        else:
            compatible = self.template.compatible_ids(requirements)
            remaining = [o for o in self._fitting(requests) if o.index in compatible]
        if pod.host_ports and remaining:
            blocked = self.template.port_blocked(pod.host_ports)
            if blocked:
                remaining = [o for o in remaining if o.index not in blocked]
                if not remaining:
                    return _daemon_port_error(pod.host_ports, self.options)
        if not remaining:
            return self._explain(pod, requirements, requests) if explain else ""
        short = _min_values_shortfall(requirements, remaining)
        if short:
            if not self.template.relax_min_values:
                return (
                    f"{_min_values_text(short)}, requirements={requirements}, "
                    f"resources={format_resources_json(pod.requests)}"
                )
            requirements = _lower_min_values(requirements, short)
        return _Plan(requirements, remaining, requests)

    def commit(self, state: _PodState, plan: _Plan, topology: Topology) -> None:
        pod = state.pod
        if len(plan.options) != len(self.options):
            self._ceiling = None
            self._floor = None
        if plan.requirements is not self.requirements:
            self.version += 1
        self.requirements = plan.requirements
        self.options = plan.options
        self.requests = plan.requests
        if plan.reserved is not None and self.reservations is not None:
            self.reservations.hold(self, plan.reserved)
        self.pods.append(pod)
        self.ports.extend(pod.host_ports)
        if state.topology is not None:
            topology.register_hostname(self.hostname)
            topology.record(
                state.topology,
                self.template.taints_tuple,
                plan.requirements,
                self.hostname,
                allow_undefined=True,
            )

    def _explain(self, pod: PodRequest, requirements: Requirements, requests: ResourceList) -> str:
        """Karpenter's account of why no instance type survived (``FailureReason``)."""
        met = fit = offered = met_fit = met_offered = fit_offered = False
        for option in self.options:
            compatible = option.compatible(requirements)
            fits = not option.fits_nothing and _fits(requests, option.allocatable)
            has_offering = option.has_offering(requirements)
            met |= compatible
            fit |= fits
            offered |= has_offering
            met_fit |= compatible and fits and not has_offering
            met_offered |= compatible and has_offering and not fits
            fit_offered |= fits and has_offering and not compatible
        if not met and not fit and not offered:
            reason = (
                "no instance type met the scheduling requirements or had enough resources or "
                "had a required offering"
            )
        elif not met and not fit:
            reason = "no instance type met the scheduling requirements or had enough resources"
        elif not met and not offered:
            reason = "no instance type met the scheduling requirements or had a required offering"
        elif not fit and not offered:
            reason = "no instance type had enough resources or had a required offering"
        elif not met:
            reason = "no instance type met all requirements"
        elif not fit:
            reason = "no instance type has enough resources"
            if requests.get(CPU, 0) >= _TYPO_CPU:
                reason += " (CPU request >= 1 Million, m vs M typo?)"
        elif not offered:
            reason = "no instance type has the required offering"
        elif met_fit:
            reason = (
                "no instance type which met the scheduling requirements and had enough "
                "resources, had a required offering"
            )
        elif fit_offered:
            reason = (
                "no instance type which had enough resources and the required offering met "
                "the scheduling requirements"
            )
        elif met_offered:
            reason = (
                "no instance type which met the scheduling requirements and the required "
                "offering had the required resources"
            )
        else:
            reason = "no instance type met the requirements/resources/offering tuple"
        bounds = self.template.overhead_bounds
        if bounds is None:
            asked = format_resources_json(pod.requests)
        else:
            low = format_resources_json(merge(bounds[0], pod.requests))
            high = format_resources_json(merge(bounds[1], pod.requests))
            asked = low if low == high else f"min={low}, max={high}"
        return (
            f"no instance type satisfied resources {asked} and "
            f"requirements {requirements} ({reason})"
        )

    def finish(self, max_instance_types: int) -> NewNodeClaim | str:
        """The NodeClaim to create: its types cheapest first, pinned in its requirements; or
        why it cannot be (keeping only the cheapest ``max_instance_types`` types breaks
        minValues under the Strict policy)."""
        requirements = self.requirements
        kept = {o.index for o in self.options}
        if self.reserved:
            # Launch into the reservations counted for this claim and nothing else, so two
            # claims never race for one reserved slot; a reserved node also drifts when the
            # provider relabels it on-demand (the reservation ended).
            requirements = self._pinned(requirements)
            kept = {o.index for o in self.options if o.has_offering(requirements)}
        ranked = [o for o in self.template.ranked(requirements) if o.index in kept]
        if len(ranked) > max_instance_types:
            del ranked[max_instance_types:]
            short = _min_values_shortfall(requirements, ranked)
            if short:
                if not self.template.relax_min_values:
                    return (
                        f'pod didn\'t schedule because NodePool "{self.template.name}" '
                        "couldn't meet minValues requirements, keeping the cheapest "
                        f"{max_instance_types} instance types: {_min_values_text(short)}"
                    )
                requirements = _lower_min_values(requirements, short)
        capacity_types = frozenset().union(*(o.offer(requirements)[1] for o in ranked))
        final = requirements.add(
            Requirement(
                INSTANCE_TYPE_LABEL, False, frozenset(o.instance_type.name for o in ranked)
            ),
            Requirement(CAPACITY_TYPE_LABEL, False, capacity_types),
        )
        overheads = {id(o.group): o.group.overhead for o in ranked}
        requests = merge(self.requests, _smallest(list(overheads.values())))
        return NewNodeClaim(
            node_pool=self.template.name,
            requirements=final,
            instance_types=[o.instance_type for o in ranked],
            pods=list(self.pods),
            requests=requests,
            hostname=self.hostname,
            min_values_relaxed=_min_values_lowered(self.template.requirements, final),
        )

    def _pinned(self, requirements: Requirements) -> Requirements:
        labels: dict[str, set[str]] = {}
        for option in self.options:
            for offering in option.reserved:
                reservation = offering.reservation
                if reservation is not None and reservation.id in self.reserved:
                    labels.setdefault(reservation.label, set()).add(reservation.id)
        return requirements.add(
            Requirement(CAPACITY_TYPE_LABEL, False, frozenset((CAPACITY_TYPE_RESERVED,))),
            *(Requirement(label, False, frozenset(ids)) for label, ids in labels.items()),
        )


_CPU_OF = attrgetter("cpu")
_MEMORY_OF = attrgetter("memory")
_PODS_OF = attrgetter("pods")


def _ceiling(options: Sequence[_TypeOption]) -> ResourceList:
    """Element-wise largest allocatable: a quick upper bound for what a claim can hold."""
    if not options:
        return {}
    ceiling: ResourceList = {
        CPU: max(map(_CPU_OF, options)),
        MEMORY: max(map(_MEMORY_OF, options)),
        PODS: max(map(_PODS_OF, options)),
    }
    for option in options:
        for name, value in option.extras:
            if value > ceiling.get(name, -1):
                ceiling[name] = value
    return ceiling


def _group_of(name: str, groups: Sequence[DaemonOverheadGroup]) -> DaemonOverheadGroup:
    for group in groups:
        if group.instance_types is None or name in group.instance_types:
            return group
    return _NO_DAEMONS


def _smallest(lists: Sequence[Mapping[str, int]]) -> ResourceList:
    """Element-wise smallest (a resource some list lacks counts as 0), as Karpenter's
    ``MinResources``."""
    if not lists:
        return {}
    keys = set().union(*lists)
    smallest = {k: min(values.get(k, 0) for values in lists) for k in keys}
    return {k: v for k, v in smallest.items() if v}


def _daemon_port_error(ports: Sequence[HostPort], options: Sequence[_TypeOption]) -> str:
    for option in options:
        conflict = _port_conflict(ports, option.daemon_ports)
        if conflict is not None:
            return f"{conflict} (held by daemonset pods)"
    return "host ports are held by daemonset pods"


def _min_values_shortfall(
    requirements: Requirements, options: Sequence[_TypeOption]
) -> dict[str, int]:
    """Keys whose minValues ``options`` cannot meet, with how many values they do offer."""
    short: dict[str, int] = {}
    for key, requirement in requirements.items():
        if requirement.min_values is None:
            continue
        values: set[str] = set()
        for option in options:
            found = option.instance_type.requirements.get(key)
            if found is not None and not found.complement:
                values |= found.values
        if len(values) < requirement.min_values:
            short[key] = len(values)
    return short


def _min_values_text(short: Mapping[str, int]) -> str:
    return f"minValues requirement is not met for label(s) [{' '.join(sorted(short))}]"


def _lower_min_values(requirements: Requirements, short: Mapping[str, int]) -> Requirements:
    """BestEffort: minValues lowered to what the remaining types offer."""
    return Requirements(
        replace(r, min_values=short[key]) if key in short else r for key, r in requirements.items()
    )


def _min_values_lowered(template: Requirements, final: Requirements) -> bool:
    for key, requirement in template.items():
        if requirement.min_values is None:
            continue
        now = final.get(key)
        if (
            now is not None
            and now.min_values is not None
            and now.min_values < requirement.min_values
        ):
            return True
    return False


class _MergeMemo:
    """Memoised ``compatible`` + ``add`` of a claim's requirements with a pod's.

    Keys in ``well_known`` may be required by the pod although the claim does not define
    them: every instance type does (Karpenter's ``AllowUndefinedWellKnownLabels``).
    """

    def __init__(self, well_known: frozenset[str]) -> None:
        self._table: dict[tuple[Requirements, Requirements], Requirements | str] = {}
        self._well_known = well_known

    def merge(self, base: Requirements, incoming: Requirements) -> Requirements | str:
        key = (base, incoming)
        found = self._table.get(key)
        if found is None:
            problems = base.compatibility_problems(incoming, self._well_known)
            if problems:
                found = "incompatible requirements, " + "; ".join(problems)
            else:
                merged = base.add(incoming)
                found = base if merged == base else merged
            self._table[key] = found
        return found


# -- existing nodes --------------------------------------------------------------------------


class _Node:
    """An existing node or in-flight NodeClaim, with what this solve has placed on it."""

    def __init__(self, node: ExistingNode) -> None:
        self.node = node
        managed = node.node_claim is not None or node.node_pool is not None or node.in_flight
        if managed and not node.initialized:
            self.taints = tuple(t for t in node.taints if not _is_ephemeral(t, node.startup_taints))
        else:
            self.taints = node.taints
        remaining = dict(node.allocatable)
        for name, value in node.requested.items():
            remaining[name] = remaining.get(name, 0) - value
        self.remaining = remaining
        self.ports = list(node.host_ports)
        self.pods: list[PodRequest] = []
        self.hostname = node.labels.get(HOSTNAME_LABEL, node.name)
        self.label_requirements = Requirements.from_labels(
            {**node.labels, HOSTNAME_LABEL: self.hostname}
        )
        self.volumes = {driver: set(ids) for driver, ids in node.volumes.items()}

    def _volume_problem(self, pod: PodRequest) -> bool:
        limits = self.node.volume_limits
        for driver, ids in pod.volumes.items():
            limit = limits.get(driver)
            if limit is None:
                continue
            attached = self.volumes.get(driver, set())
            if len(attached | ids) > limit:
                return True
        return False

    def plan(self, state: _PodState, topology: Topology) -> _Refusal | None:
        """None when the pod fits here (kube-scheduler's view plus Karpenter's topology)."""
        pod = state.pod
        if _untolerated(pod.tolerations, self.taints, state.relaxed_taints):
            return _LASTING
        if pod.host_ports and _port_conflict(pod.host_ports, self.ports) is not None:
            return _LASTING
        remaining = self.remaining
        for name, value in pod.requests.items():
            if value > 0 and value > remaining.get(name, 0):
                return _LASTING
        if any(value < 0 for value in remaining.values()):
            return _LASTING
        labels = self.node.labels
        if not state.requirements.matches_labels(labels):
            return _LASTING
        if pod.volumes and self._volume_problem(pod):
            return _LASTING
        if pod.volume_requirements and not any(
            alternative.matches_labels(labels) for alternative in pod.volume_requirements
        ):
            return _LASTING
        if state.topology is not None and state.topology.constraining:
            added, group = topology.requirements(
                state.topology, state.strict, self.label_requirements, self.hostname
            )
            if group is not None:
                return _LASTING if group.monotonic else _PASSING
            for requirement in added:
                domain = labels.get(requirement.key)
                if domain is None or not requirement.has(domain):
                    return _PASSING if state.topology.volatile else _LASTING
        return None

    def commit(self, state: _PodState, topology: Topology) -> None:
        pod = state.pod
        remaining = self.remaining
        for name, value in pod.requests.items():
            remaining[name] = remaining.get(name, 0) - value
        self.ports.extend(pod.host_ports)
        for driver, ids in pod.volumes.items():
            self.volumes.setdefault(driver, set()).update(ids)
        self.pods.append(pod)
        if state.topology is not None:
            topology.record(
                state.topology,
                self.taints,
                self.label_requirements,
                self.hostname,
                allow_undefined=False,
            )


# -- pods ------------------------------------------------------------------------------------


class _PodState:
    """A queued pod and how far its preferences have been relaxed.

    Karpenter relaxes in this order, one step per failed attempt: the first of several ORed
    required node-affinity terms, the heaviest preferred pod-affinity term, the heaviest
    preferred pod anti-affinity term, the heaviest preferred node-affinity term, one
    ScheduleAnyway spread, then a toleration of PreferNoSchedule taints.
    """

    __slots__ = (
        "affinity",
        "anti_affinity",
        "anyway",
        "label_key",
        "pod",
        "preferred",
        "relaxed_taints",
        "required",
        "requirements",
        "respect",
        "seq",
        "shape",
        "strict",
        "topo_key",
        "topology",
    )

    def __init__(self, pod: PodRequest, seq: int, respect_preferences: bool) -> None:
        self.pod = pod
        self.seq = seq
        self.respect = respect_preferences
        self.label_key = tuple(sorted(pod.labels.items()))
        self.topology: PodTopology | None = None
        self.shape = 0
        self.topo_key = 0
        self.reset()

    def reset(self) -> None:
        """Back to every preference (a pod that failed is retried in full later)."""
        pod = self.pod
        respect = self.respect
        self.required = 0
        self.preferred = 0 if respect else len(pod.preferred_terms)
        self.affinity = 0 if respect else len(pod.preferred_affinity)
        self.anti_affinity = 0 if respect else len(pod.preferred_anti_affinity)
        self.anyway: list[TopologyTerm] = list(pod.schedule_anyway) if respect else []
        self.relaxed_taints = False
        self._update()

    def _update(self) -> None:
        terms = self.pod.requirement_terms or (Requirements(),)
        self.strict = terms[self.required]
        active = self.strict
        if self.preferred < len(self.pod.preferred_terms):
            active = active.add(self.pod.preferred_terms[self.preferred][1])
        self.requirements = active

    def active_terms(self) -> tuple[TopologyTerm, ...]:
        pod = self.pod
        return (
            *pod.topology,
            *pod.preferred_affinity[self.affinity :],
            *pod.preferred_anti_affinity[self.anti_affinity :],
            *self.anyway,
        )

    def relax(self, prefer_no_schedule_exists: bool) -> bool:
        """Drop one preference (Karpenter's order); False when nothing is left to drop."""
        pod = self.pod
        if self.required < len(pod.requirement_terms) - 1:
            self.required += 1
        elif self.affinity < len(pod.preferred_affinity):
            self.affinity += 1
        elif self.anti_affinity < len(pod.preferred_anti_affinity):
            self.anti_affinity += 1
        elif self.preferred < len(pod.preferred_terms):
            self.preferred += 1
        elif self.anyway:
            # Karpenter removes the first and moves the last into its place.
            last = self.anyway.pop()
            if self.anyway:
                self.anyway[0] = last
        elif prefer_no_schedule_exists and not self.relaxed_taints:
            self.relaxed_taints = True
        else:
            return False
        self._update()
        return True


def _queue_order(pod: PodRequest) -> tuple[int, int, int, str]:
    return (-pod.requests.get(CPU, 0), -pod.requests.get(MEMORY, 0), pod.order, pod.uid)


# -- the solver ------------------------------------------------------------------------------


class _Solver:
    def __init__(
        self,
        existing: Sequence[ExistingNode],
        templates: Sequence[NodePoolTemplate],
        options: SolverOptions,
        pods: Sequence[PodRequest],
        placed: Sequence[PlacedPod],
    ) -> None:
        self.options = options
        self.respect = options.preference_policy != IGNORE_PREFERENCES
        self.nodes = [_Node(n) for n in sorted(existing, key=lambda n: (not n.initialized, n.name))]
        ordered = sorted(templates, key=lambda t: t.name, reverse=True)
        ordered.sort(key=lambda t: t.weight, reverse=True)
        relax = options.min_values_policy == MIN_VALUES_BEST_EFFORT
        labels = frozenset(
            o.reservation.label
            for t in templates
            for it in t.instance_types
            for o in it.offerings
            if o.reservation is not None
        )
        self.templates = [_Template(t, relax, labels) for t in ordered]
        self.usable = [t for t in self.templates if t.options]
        reservations = _Reservations(self.usable, options.reserved_offering_mode == RESERVED_STRICT)
        self.reservations = reservations if reservations.capacity else None
        self.prefer_no_schedule_exists = any(
            taint.effect == PREFER_NO_SCHEDULE for t in templates for taint in t.taints
        )
        self.topology = self._topology(pods, existing, placed)
        self.claims: list[_Claim] = []
        self.memo = _MergeMemo(options.well_known_labels)
        self.hostnames = 0
        self.ranks = 0
        #: Claims in the order they were opened or had their requirements narrowed.
        self.changed: list[_Claim] = []
        #: Per pod shape: how far into :attr:`changed` it has looked, and the claims it has
        #: not ruled out.
        self.alive: dict[int, tuple[int, set[_Claim]]] = {}
        self.memo_size = 0
        #: Per pod shape: claims a topology group refused, by group, with the group's epoch
        #: at the time; they come back when the epoch moves.
        self.parked: dict[int, dict[TopologyGroup, tuple[int, set[_Claim]]]] = {}
        #: Every open claim in Karpenter's order, and the sort keys alongside.
        self.order: list[_Claim] = []
        self.order_keys: list[tuple[int, int]] = []
        #: Per pod shape: how many leading existing nodes are known to turn it away.
        self.node_skip: dict[int, int] = {}
        self._shapes: dict[tuple[object, ...], int] = {}
        self._topo_keys: dict[tuple[object, ...], int] = {}
        #: Per topology key: claims a topology group refused, with the claim's version, the
        #: group and its epoch at the time.
        self.topo_refused: dict[int, dict[_Claim, tuple[int, TopologyGroup, int]]] = {}
        self._pod_topology: dict[
            tuple[str, tuple[tuple[str, str], ...], tuple[TopologyTerm, ...]],
            tuple[PodTopology, tuple[object, ...]],
        ] = {}

    def _topology(
        self,
        pods: Sequence[PodRequest],
        existing: Sequence[ExistingNode],
        placed: Sequence[PlacedPod],
    ) -> Topology:
        terms: list[TopologyTerm] = []
        inverse: list[TopologyTerm] = []
        for pod in pods:
            terms.extend(pod.topology)
            if self.respect:
                terms.extend(pod.preferred_affinity)
                terms.extend(pod.preferred_anti_affinity)
                terms.extend(pod.schedule_anyway)
            inverse.extend(pod.required_anti_affinity)
        if not terms and not inverse and not any(p.anti_affinity for p in placed):
            return Topology((), (), (), (), ())
        nodes = [(n.name, n.labels, n.taints) for n in existing if not n.in_flight]
        return Topology(
            terms,
            inverse,
            [t.domain_source() for t in self.templates if t.options],
            nodes,
            placed,
        )

    def _prepare(self, state: _PodState) -> None:
        """Work out the pod's topology groups and its shape after a (re)set or relaxation."""
        pod = state.pod
        signature: tuple[object, ...] = ()
        if self.topology.groups or self.topology.inverse:
            active = state.active_terms()
            key = (pod.namespace, state.label_key, active)
            found = self._pod_topology.get(key)
            if found is None:
                topology = self.topology.for_pod(
                    pod.namespace, pod.labels, state.label_key, active, pod.required_anti_affinity
                )
                signature = (
                    tuple(g.term for g in topology.constraining),
                    tuple(topology.selects),
                )
                found = (topology, signature)
                self._pod_topology[key] = found
            state.topology, signature = found
        shape = (
            tuple(sorted(pod.requests.items())),
            state.requirements,
            state.strict,
            pod.tolerations,
            pod.host_ports,
            state.relaxed_taints,
            pod.volume_requirements,
            tuple(sorted(pod.volumes.items())),
            signature,
        )
        shape_id = self._shapes.get(shape)
        if shape_id is None:
            shape_id = len(self._shapes)
            self._shapes[shape] = shape_id
        state.shape = shape_id
        # Topology answers do not depend on the pod's size: pods that differ only in their
        # requests share what they learn about which claims' domains refuse them.
        topo = (signature, state.strict, state.requirements, pod.volume_requirements)
        topo_id = self._topo_keys.get(topo)
        if topo_id is None:
            topo_id = len(self._topo_keys)
            self._topo_keys[topo] = topo_id
        state.topo_key = topo_id

    def solve(self, pods: Sequence[PodRequest], keep_order: bool = False) -> SchedulingResult:
        states = [_PodState(p, i, self.respect) for i, p in enumerate(pods)]
        for state in states:
            self._prepare(state)
        if not keep_order:
            states.sort(key=lambda s: _queue_order(s.pod))
        queue = deque(states)
        last_length: dict[int, int] = {}
        errors: dict[str, str] = {}
        while queue:
            state = queue[0]
            if last_length.get(state.seq) == len(queue):
                break  # a full pass without progress
            queue.popleft()
            error = self._try(state)
            if error is None:
                errors.pop(state.pod.key, None)
                continue
            errors[state.pod.key] = error
            state.reset()
            self._prepare(state)
            queue.append(state)
            last_length[state.seq] = len(queue)
        unplaced = {s.pod.key: errors[s.pod.key] for s in queue if s.pod.key in errors}
        finished: list[NewNodeClaim] = []
        for claim in self.claims:
            outcome = claim.finish(self.options.max_instance_types)
            if isinstance(outcome, str):
                unplaced.update((pod.key, outcome) for pod in claim.pods)
                continue
            finished.append(outcome)
        return SchedulingResult(
            new_node_claims=finished,
            existing_nodes={n.node.name: n.pods for n in self.nodes if n.pods},
            errors=unplaced,
            awaiting_reservation={
                key for key, error in unplaced.items() if isinstance(error, ReservationError)
            },
        )

    def _try(self, state: _PodState) -> str | None:
        """Place the pod, relaxing one preference after each failure (Karpenter's
        ``trySchedule``); the last failure when nothing is left to relax."""
        while True:
            error = self._add(state)
            if error is None:
                return None
            if isinstance(error, ReservationError):
                # The pod may fit as it is once reserved capacity frees up.
                return error
            if not state.relax(self.prefer_no_schedule_exists):
                return error
            self._prepare(state)

    def _add(self, state: _PodState) -> str | None:
        if self._add_to_existing(state):
            return None
        topology = self.topology
        shape = state.shape
        refused = self.topo_refused.get(state.topo_key)
        if refused is None:
            refused = self.topo_refused[state.topo_key] = {}
        for claim in self._open_claims(shape):
            known = refused.get(claim)
            if (
                known is not None
                and known[0] == claim.version
                and (known[1].monotonic or known[1].epoch == known[2])
            ):
                outcome = _Refusal("", known[1].monotonic, known[1])
            else:
                planned = claim.plan(state, topology, claim.hostname, explain=False)
                if isinstance(planned, _Plan):
                    self._commit(claim, state, planned)
                    return None
                outcome = planned
                if outcome.group is not None:
                    refused[claim] = (claim.version, outcome.group, outcome.group.epoch)
            if outcome.lasting:
                self.alive[shape][1].discard(claim)
            elif outcome.group is not None:
                self.alive[shape][1].discard(claim)
                parked = self.parked.setdefault(shape, {})
                epoch, claims = parked.get(outcome.group, (outcome.group.epoch, set()))
                if epoch != outcome.group.epoch:
                    self.alive[shape][1].update(claims)
                    claims = set()
                claims.add(claim)
                parked[outcome.group] = (outcome.group.epoch, claims)
        problems: list[str] = []
        hostname = f"hostname-placeholder-{self.hostnames + 1:04d}"
        for template in self.usable:
            options = template.within_limits()
            if isinstance(options, str):
                problems.append(options)
                continue
            claim = _Claim(template, options, self.memo, self.reservations)
            opened = claim.plan(state, topology, hostname, explain=True)
            if isinstance(opened, _Refusal):
                if isinstance(opened.reason, ReservationError):
                    # No fallback to lighter pools while compatible reservations exist.
                    return opened.reason
                problems.append(
                    f'incompatible with nodepool "{template.name}", '
                    f"{template.overhead_text()}{opened.reason}"
                )
                continue
            self.hostnames += 1
            claim.hostname = hostname
            # Karpenter appends new claims after every claim with as many pods.
            self.ranks += 1
            claim.rank = self.ranks
            claim.commit(state, opened, topology)
            self._place(claim)
            self.claims.append(claim)
            self.changed.append(claim)
            self.alive[state.shape][1].add(claim)
            template.charge(claim.options)
            return None
        if not problems:
            return "no nodepools found that can launch instance types"
        return "; ".join(problems)

    def _add_to_existing(self, state: _PodState) -> bool:
        """The first existing node that takes the pod, in fixed order.

        A node that turns a pod away for a lasting reason turns away every later pod of the
        same shape too (it only fills up), so each shape remembers how many leading nodes it
        can skip.
        """
        shape = state.shape
        skip = self.node_skip.get(shape, 0)
        topology = self.topology
        for index in range(skip, len(self.nodes)):
            node = self.nodes[index]
            refusal = node.plan(state, topology)
            if refusal is None:
                node.commit(state, topology)
                return True
            if index == skip and refusal.lasting:
                skip += 1
                self.node_skip[shape] = skip
        return False

    def _open_claims(self, shape: int) -> Iterable[_Claim]:
        """Open claims that might take a pod of ``shape``, in Karpenter's order.

        Karpenter stable-sorts its claims by pod count before every pod, so among claims with
        equal counts the one that reached the count most recently comes first, and new claims
        go last; :attr:`_Claim.rank` encodes that order without re-sorting everything. A claim
        that rejected a shape for a lasting reason keeps rejecting it while its requirements
        stay the same, so each shape keeps the claims it has not ruled out and picks up those
        opened or narrowed since (:attr:`changed`).
        """
        cursor, alive = self.alive.get(shape, (0, set()))
        parked = self.parked.get(shape)
        if parked:
            for group, (epoch, claims) in list(parked.items()):
                if group.epoch != epoch:
                    alive.update(claims)
                    del parked[group]
        if cursor < len(self.changed):
            fresh = self.changed[cursor:]
            alive.update(fresh)
            if parked:
                for _, claims in parked.values():
                    claims.difference_update(fresh)
            self.memo_size += len(fresh)
        if self.memo_size > _MEMO_LIMIT:
            # A cache, not state: dropping it only costs re-checks.
            self.alive = {}
            self.parked = {}
            self.memo_size = len(alive)
        self.alive[shape] = (len(self.changed), alive)
        if len(alive) * 8 < len(self.order):
            return sorted(alive, key=lambda c: (len(c.pods), c.rank))
        # Lazily: most pods settle on one of the first claims.
        return (claim for claim in self.order if claim in alive)

    def _place(self, claim: _Claim) -> None:
        key = (len(claim.pods), claim.rank)
        index = bisect_left(self.order_keys, key)
        self.order_keys.insert(index, key)
        self.order.insert(index, claim)

    def _commit(self, claim: _Claim, state: _PodState, plan: _Plan) -> None:
        narrowed = plan.requirements is not claim.requirements
        index = bisect_left(self.order_keys, (len(claim.pods), claim.rank))
        del self.order_keys[index]
        del self.order[index]
        claim.commit(state, plan, self.topology)
        self.ranks += 1
        claim.rank = -self.ranks
        self._place(claim)
        if narrowed:
            self.changed.append(claim)


def solve(
    pods: Sequence[PodRequest],
    existing: Sequence[ExistingNode],
    templates: Sequence[NodePoolTemplate],
    options: SolverOptions = SolverOptions(),  # noqa: B008 - frozen, safe to share
    *,
    placed: Sequence[PlacedPod] = (),
) -> SchedulingResult:
    """Place ``pods`` on ``existing`` nodes or on new NodeClaims from ``templates``.

    ``placed`` are the pods already running (not those being placed), for topology counts
    and for the required anti-affinity they impose. Pods that cannot be placed appear in
    ``errors`` with Karpenter's explanation.
    """
    pods, skipped = split_dra_pods(pods)
    result = _Solver(existing, templates, options, pods, placed).solve(pods)
    if options.repack:
        plain = replace(options, repack=False)

        def in_order(batch: Sequence[PodRequest], template: NodePoolTemplate) -> SchedulingResult:
            return _Solver((), [template], plain, batch, ()).solve(batch, keep_order=True)

        result = repack(result, pods, templates, placed, in_order)
    result.errors.update(skipped)
    return result
