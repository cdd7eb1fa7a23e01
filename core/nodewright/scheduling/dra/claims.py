"""ResourceClaims as the allocator reads them: what each asks for, and whether (and where)
the cluster has already allocated it.

Reading a claim never fails: a claim nodewright cannot allocate keeps the reason (a missing
DeviceClass, a ``firstAvailable`` request, a selector it does not evaluate ...) in
:attr:`ClaimSpec.problem`, in Karpenter's words, and the allocator reports it for the pod
that needs the claim allocated. A claim already allocated needs no such reading.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from nodewright.api.cel.parse import CelError, CelUnsupported
from nodewright.api.cel.program import Program, compile_selector
from nodewright.api.quantity import QuantityError, exact_quantity
from nodewright.api.resource import (
    ALL,
    MAX_RESULTS_PER_CLAIM,
    DeviceClass,
    DeviceSelector,
    ResourceClaim,
)
from nodewright.scheduling.dra.devices import DeviceID
from nodewright.scheduling.dra.pools import selector_terms
from nodewright.scheduling.requirements import Requirements


class ClaimProblem(ValueError):
    """A claim nodewright cannot allocate, in words for a FailedScheduling event."""


@dataclass(frozen=True)
class RequestSpec:
    """One ``exactly`` request: its selectors (the class's, then its own) and how many."""

    name: str
    selectors: tuple[Program, ...]
    #: Every matching device (``All``) rather than ``count`` of them.
    all_devices: bool = False
    count: int = 1
    #: ``capacity.requests``: what it asks of a shared device's capacities.
    capacity: Mapping[str, Fraction] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class MatchAttributeSpec:
    attribute: str
    requests: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ClaimSpec:
    """A ResourceClaim, read."""

    namespace: str
    name: str
    requests: tuple[RequestSpec, ...] = ()
    match_attributes: tuple[MatchAttributeSpec, ...] = ()
    #: Why nodewright cannot allocate it (None: it can).
    problem: str | None = None
    #: ``status.allocation`` is set.
    allocated: bool = False
    #: Where the allocated devices are reachable from (the allocation's node selector, its
    #: terms together), None for anywhere.
    allocation_topology: Requirements | None = None
    #: The allocated devices.
    devices: tuple[DeviceID, ...] = ()
    #: Shared devices among them, with what the claim's results take of their capacities.
    consumed: Mapping[DeviceID, Mapping[str, Fraction]] = field(default_factory=dict, hash=False)
    #: UIDs of the pods in ``status.reservedFor``.
    reserved_pods: tuple[str, ...] = ()
    #: ``status.reservedFor`` names something other than a pod.
    reserved_by_other: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _selectors(
    selectors: Iterable[DeviceSelector], where: str, class_name: str | None
) -> tuple[Program, ...]:
    programs: list[Program] = []
    for selector in selectors:
        if selector.cel is None:
            if class_name is not None:
                raise ClaimProblem(
                    f'{where}: DeviceClass "{class_name}" has unsupported selector type '
                    "(only CEL is supported)"
                )
            raise ClaimProblem(f"{where}: unsupported selector type (only CEL is supported)")
        expression = selector.cel.expression
        try:
            programs.append(compile_selector(expression))
        except CelUnsupported as exc:
            raise ClaimProblem(
                f'{where}: CEL expression "{expression}" is not supported by nodewright: {exc}'
            ) from None
        except CelError as exc:
            raise ClaimProblem(
                f'{where}: CEL expression "{expression}" failed to compile: {exc}'
            ) from None
    return tuple(programs)


def _read(claim: ResourceClaim, classes: Mapping[str, DeviceClass]) -> ClaimSpec:
    name = claim.name
    constraints: list[MatchAttributeSpec] = []
    for constraint in claim.spec.devices.constraints:
        if constraint.match_attribute:
            constraints.append(
                MatchAttributeSpec(constraint.match_attribute, frozenset(constraint.requests))
            )
        elif constraint.distinct_attribute:
            raise ClaimProblem(f'claim "{name}": DistinctAttribute constraints not done yet')
        else:
            raise ClaimProblem(f'claim "{name}": unsupported constraint type')
    requests: list[RequestSpec] = []
    for request in claim.spec.devices.requests:
        where = f'claim "{name}" request "{request.name}"'
        exact = request.exactly
        if exact is None:
            raise ClaimProblem(f"{where}: only Exactly requests are supported")
        device_class = classes.get(exact.device_class_name)
        if device_class is None:
            raise ClaimProblem(
                f'{where}: DeviceClass "{exact.device_class_name}" not found: '
                f'deviceclasses.resource.k8s.io "{exact.device_class_name}" not found'
            )
        capacity: dict[str, Fraction] = {}
        for capacity_name, amount in (exact.capacity.requests if exact.capacity else {}).items():
            try:
                capacity[capacity_name] = exact_quantity(amount)
            except QuantityError as exc:
                raise ClaimProblem(f"{where}: capacity request {capacity_name!r}: {exc}") from None
        selectors = _selectors(device_class.spec.selectors, where, exact.device_class_name)
        selectors += _selectors(exact.selectors, where, None)
        all_devices = exact.allocation_mode == ALL
        count = 0 if all_devices else (exact.count if exact.count is not None else 1)
        requests.append(RequestSpec(request.name, selectors, all_devices, count, capacity))
    total = sum(r.count for r in requests)
    if total > MAX_RESULTS_PER_CLAIM:
        raise ClaimProblem(
            f'claim "{name}" requests {total} total devices, exceeding maximum of '
            f"{MAX_RESULTS_PER_CLAIM}"
        )
    return ClaimSpec(claim.namespace, name, tuple(requests), tuple(constraints))


def read_claim(claim: ResourceClaim, classes: Mapping[str, DeviceClass]) -> ClaimSpec:
    """``claim`` as plain data, resolving its DeviceClasses in ``classes`` (by name)."""
    try:
        spec = _read(claim, classes)
    except ClaimProblem as exc:
        spec = ClaimSpec(claim.namespace, claim.name, problem=str(exc))
    status = claim.status
    spec = replace(
        spec,
        reserved_pods=tuple(r.uid for r in status.reserved_for if r.is_pod),
        reserved_by_other=any(not r.is_pod for r in status.reserved_for),
    )
    allocation = status.allocation
    if allocation is None:
        return spec
    topology = None
    if allocation.node_selector is not None:
        topology = Requirements().add(*selector_terms(allocation.node_selector))
    consumed: dict[DeviceID, dict[str, Fraction]] = {}
    for r in allocation.devices.results:
        if r.consumed_capacity is None:
            continue
        share = consumed.setdefault(DeviceID(r.driver, r.pool, r.device), {})
        for name, amount in r.consumed_capacity.items():
            try:
                share[name] = share.get(name, Fraction(0)) + exact_quantity(amount)
            except QuantityError:
                continue
    return replace(
        spec,
        allocated=True,
        allocation_topology=topology,
        devices=tuple(DeviceID(r.driver, r.pool, r.device) for r in allocation.devices.results),
        consumed=consumed,
    )
