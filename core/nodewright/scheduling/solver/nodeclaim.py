"""A NodeClaim being sized during one solve (Karpenter's scheduling ``NodeClaim``): its pods,
the instance types that could still hold them, and Karpenter's wording when none can."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_RESERVED,
    INSTANCE_TYPE_LABEL,
)
from nodewright.scheduling.model import HostPort, NewNodeClaim, PodRequest
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.resources import (
    CPU,
    MEMORY,
    PODS,
    ResourceList,
    fits,
    format_resources_json,
    merge,
    minimum,
)
from nodewright.scheduling.solver.constraints import (
    LASTING,
    MergeMemo,
    Refusal,
    port_conflict,
)
from nodewright.scheduling.solver.devices import NO_COMMON_TYPE, DeviceRound
from nodewright.scheduling.solver.instancetypes import InstanceTypeOption
from nodewright.scheduling.solver.minvalues import (
    lower_min_values,
    min_values_lowered,
    min_values_shortfall,
    min_values_text,
)
from nodewright.scheduling.solver.nodeclaimtemplate import NodeClaimTemplate
from nodewright.scheduling.solver.preferences import PodState
from nodewright.scheduling.solver.reservations import ReservationError, Reservations
from nodewright.scheduling.topology import Topology

#: A CPU request this large is almost certainly ``M`` typed for ``m``.
_TYPO_CPU = 10**6 * 1000


@dataclass(slots=True)
class Plan:
    requirements: Requirements
    options: list[InstanceTypeOption]
    requests: ResourceList
    #: Reservation IDs the claim would hold; None when no pool offers reserved capacity.
    reserved: frozenset[str] | None = None


class OpenNodeClaim:
    """A NodeClaim opened in this solve: its pods and the types that could still hold them."""

    def __init__(
        self,
        template: NodeClaimTemplate,
        options: list[InstanceTypeOption],
        memo: MergeMemo,
        reservations: Reservations | None = None,
        devices: DeviceRound | None = None,
    ) -> None:
        self.template = template
        self.reservations = reservations
        self.devices = devices
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
        #: Position among claims with as many pods (see
        #: :meth:`~nodewright.scheduling.solver.scheduler.Scheduler._open_claims`).
        self.rank = 0
        #: Grows whenever the claim's requirements narrow.
        self.version = 0

    def plan(
        self, state: PodState, topology: Topology, hostname: str, explain: bool
    ) -> Plan | Refusal:
        """What the claim would look like with the pod added, or why it cannot take it.

        With ``explain`` false the reason may be empty: callers trying many open claims only
        need a yes or no, and working out Karpenter's failure wording costs a full pass.
        """
        pod = state.pod
        problem = self.template.taint_problem(pod.tolerations, state.relaxed_taints)
        if problem is not None:
            return Refusal(problem, lasting=True)
        if pod.host_ports and self.ports:
            conflict = port_conflict(pod.host_ports, self.ports)
            if conflict is not None:
                return Refusal(conflict, lasting=True)
        merged = self._memo.merge(self.requirements, state.requirements)
        if isinstance(merged, str):
            return Refusal(merged, lasting=True)
        if not explain:
            ceiling = self.ceiling()
            for name, value in pod.requests.items():
                if value > 0 and self.requests.get(name, 0) + value > ceiling.get(name, 0):
                    return LASTING
        steady = state.topology is None or not state.topology.volatile
        refusal: Refusal = LASTING
        for volume in pod.volume_requirements or (None,):
            base = merged
            if volume is not None:
                narrowed = self._memo.merge(base, volume)
                if isinstance(narrowed, str):
                    refusal = Refusal(f"incompatible volume requirements, {narrowed}", True)
                    continue
                base = narrowed
            allowed: frozenset[str] | None = None
            if pod.claims and self.devices is not None:
                names = [o.instance_type.name for o in self.options]
                devices = self.devices.plan_claim(hostname, self.template.name, pod, base, names)
                if isinstance(devices, str):
                    refusal = Refusal(devices, lasting=False)
                    continue
                base, allowed = devices
            if state.topology is not None and state.topology.constraining:
                added, group = topology.requirements(state.topology, state.strict, base, hostname)
                if group is not None:
                    reason = ""
                    if explain:
                        reason = group.describe(state.strict.get(group.key), base.get(group.key))
                    refusal = Refusal(reason, lasting=group.monotonic, group=group)
                    continue
                if added:
                    narrowed = self._memo.merge(base, Requirements(added))
                    if isinstance(narrowed, str):
                        refusal = Refusal(narrowed, lasting=steady)
                        continue
                    base = narrowed
            outcome = self._fit(pod, base, explain)
            if isinstance(outcome, Plan) and allowed is not None:
                outcome.options = [o for o in outcome.options if o.instance_type.name in allowed]
                if not outcome.options:
                    refusal = Refusal(NO_COMMON_TYPE, lasting=False)
                    continue
            if isinstance(outcome, Plan) and self.reservations is not None:
                outcome = self.reservations.choose(self, outcome)
                if isinstance(outcome, ReservationError):
                    # Taken reservations come back when other claims narrow: not lasting.
                    refusal = Refusal(outcome, lasting=False)
                    continue
            if isinstance(outcome, Plan):
                return outcome
            refusal = Refusal(outcome, lasting=steady)
        if len(pod.volume_requirements) > 1:
            # Several alternatives failed for different reasons; only a lasting verdict on
            # all of them could be remembered, and that is rare enough not to track.
            return Refusal(refusal.reason, lasting=False)
        return refusal

    def _fitting(self, requests: ResourceList) -> list[InstanceTypeOption]:
        """The options that hold ``requests``; all of them while even the smallest does."""
        options = self.options
        if not options:
            return options
        if self._floor is None:
            self._floor = self.template.floor(options)
        cpu, memory, pods = self._floor
        if (
            requests.get(CPU, 0) <= cpu
            and requests.get(MEMORY, 0) <= memory
            and requests.get(PODS, 0) <= pods
            and all(k in (CPU, MEMORY, PODS) or v <= 0 for k, v in requests.items())
        ):
            return options
        return self.template.fitting(options, requests)

    def ceiling(self) -> ResourceList:
        """Element-wise largest allocatable of the options left: a quick upper bound."""
        if self._ceiling is None:
            self._ceiling = self.template.ceiling(self.options)
        return self._ceiling

    def _fit(self, pod: PodRequest, requirements: Requirements, explain: bool) -> Plan | str:
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
        short = min_values_shortfall(requirements, remaining)
        if short:
            if not self.template.relax_min_values:
                return (
                    f"{min_values_text(short)}, requirements={requirements}, "
                    f"resources={format_resources_json(pod.requests)}"
                )
            requirements = lower_min_values(requirements, short)
        return Plan(requirements, remaining, requests)

    def commit(self, state: PodState, plan: Plan, topology: Topology) -> None:
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
        if pod.claims and self.devices is not None:
            self.devices.commit(pod, [o.instance_type.name for o in plan.options])
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
            roomy = not option.fits_nothing and fits(requests, option.allocatable)
            has_offering = option.has_offering(requirements)
            met |= compatible
            fit |= roomy
            offered |= has_offering
            met_fit |= compatible and roomy and not has_offering
            met_offered |= compatible and has_offering and not roomy
            fit_offered |= roomy and has_offering and not compatible
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
            short = min_values_shortfall(requirements, ranked)
            if short:
                if not self.template.relax_min_values:
                    return (
                        f'pod didn\'t schedule because NodePool "{self.template.name}" '
                        "couldn't meet minValues requirements, keeping the cheapest "
                        f"{max_instance_types} instance types: {min_values_text(short)}"
                    )
                requirements = lower_min_values(requirements, short)
        capacity_types = frozenset().union(*(o.offer(requirements)[1] for o in ranked))
        final = requirements.add(
            Requirement(
                INSTANCE_TYPE_LABEL, False, frozenset(o.instance_type.name for o in ranked)
            ),
            Requirement(CAPACITY_TYPE_LABEL, False, capacity_types),
        )
        overheads = {id(o.group): o.group.overhead for o in ranked}
        requests = merge(self.requests, minimum(list(overheads.values())))
        return NewNodeClaim(
            node_pool=self.template.name,
            requirements=final,
            instance_types=[o.instance_type for o in ranked],
            pods=list(self.pods),
            requests=requests,
            hostname=self.hostname,
            min_values_relaxed=min_values_lowered(self.template.requirements, final),
            dra_drivers=self.devices.drivers(self.hostname) if self.devices is not None else (),
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


def _daemon_port_error(ports: Sequence[HostPort], options: Sequence[InstanceTypeOption]) -> str:
    for option in options:
        conflict = port_conflict(ports, option.daemon_ports)
        if conflict is not None:
            return f"{conflict} (held by daemonset pods)"
    return "host ports are held by daemonset pods"
