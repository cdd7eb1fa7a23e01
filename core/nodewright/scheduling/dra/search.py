"""One instance type's depth-first search for devices that meet a pod's claims.

Claim by claim, request by request, slot by slot: published devices first, then the
instance type's template devices. A device is tried when it is free (a whole device no one
holds; a shared device with room for the request's share), its pool's counter sets can still
pay for it (a partitionable device), the request's selectors accept it, the claim's
``matchAttribute`` constraints hold, and its reach fits the node requirements so far. Every
choice is undone exactly when the search backtracks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from nodewright.scheduling.dra.capacity import add, fits
from nodewright.scheduling.dra.claims import ClaimSpec, RequestSpec
from nodewright.scheduling.dra.constraints import MatchAttribute, try_constraints
from nodewright.scheduling.dra.counters import Counters, PoolKey, draw, has_room
from nodewright.scheduling.dra.devices import DeviceID
from nodewright.scheduling.dra.pools import Candidate, Pool, filter_pools
from nodewright.scheduling.requirements import Requirements

if TYPE_CHECKING:
    from nodewright.scheduling.dra.allocator import Allocator, Target

#: Device tries one ``allocate`` may make before it gives up (Karpenter stops after 5 s).
SEARCH_BUDGET = 200_000


class AllocationError(Exception):
    """The claims cannot be met on the target, in Karpenter's words."""


@dataclass
class Request:
    spec: RequestSpec
    #: For ``All``: the matching published devices, and template devices per instance type.
    cluster: list[Candidate] = field(default_factory=list)
    templates: dict[str, list[Candidate]] = field(default_factory=dict)


@dataclass
class Claim:
    spec: ClaimSpec
    requests: list[Request]
    constraints: list[MatchAttribute]


@dataclass(frozen=True)
class Choice:
    """A device chosen for a request, with the share it takes when it is a shared device."""

    claim: int
    request: str
    candidate: Candidate
    share: Mapping[str, Fraction] | None = None


class Search:
    """One instance type's search over the unallocated claims."""

    def __init__(
        self,
        allocator: Allocator,
        target: Target,
        claims: list[Claim],
        *,
        instance_type: str,
        requirements: Requirements,
        pools: list[Pool],
        templates: list[Candidate],
        template_budget: Mapping[PoolKey, Counters],
    ) -> None:
        self.allocator = allocator
        self.target = target
        self.claims = claims
        self.instance_type = instance_type
        self.requirements = requirements
        self.pools = pools
        self.templates = templates
        self.template_budget = template_budget
        self.chosen: list[Choice] = []
        #: Whole devices chosen so far.
        self.chosen_ids: set[tuple[DeviceID, bool]] = set()
        #: Shared devices chosen so far, and what the choices take of them.
        self.shares: dict[tuple[DeviceID, bool], dict[str, Fraction]] = {}
        #: Pools (published or template) the chosen partitionable devices draw on, and how much.
        self.drawn: dict[tuple[PoolKey, bool], Counters] = {}

    def slots(self, request: Request) -> int:
        if request.spec.all_devices:
            return len(request.cluster) + len(request.templates.get(self.instance_type, ()))
        return request.spec.count

    def run(self, claim: int = 0, request: int = 0, slot: int = 0) -> bool:
        while True:
            if claim >= len(self.claims):
                return True
            requests = self.claims[claim].requests
            if request >= len(requests):
                claim, request, slot = claim + 1, 0, 0
                continue
            if slot >= self.slots(requests[request]):
                request, slot = request + 1, 0
                continue
            break
        current = requests[request]
        if current.spec.all_devices:
            pinned = [*current.cluster, *current.templates.get(self.instance_type, ())]
            return self.attempt(claim, request, slot, pinned[slot])
        for pool in self.pools:
            if pool.incomplete:
                continue
            for candidate in pool.devices:
                if self.attempt(claim, request, slot, candidate):
                    return True
        return any(self.attempt(claim, request, slot, c) for c in self.templates)

    def _free(
        self, candidate: Candidate, spec: RequestSpec
    ) -> tuple[bool, dict[str, Fraction] | None]:
        """Whether the device is free for the request, and the share it would take of a
        shared device."""
        allocator = self.allocator
        identity = (candidate.id, candidate.template)
        device = candidate.device
        if device.allow_multiple_allocations:
            share = allocator.share(candidate, spec)
            if share is None:
                return False, None
            used = allocator.tracker.capacity_used(
                candidate.id, candidate.template, self.target.id, self.instance_type
            )
            return fits(device, share, [*used, self.shares.get(identity, {})]), share
        if identity in self.chosen_ids:
            return False, None
        taken = allocator.tracker.taken(
            candidate.id, candidate.template, self.target.id, self.instance_type
        )
        return not taken, None

    def _payable(self, candidate: Candidate) -> bool:
        """Whether the device's pool still has the counters it uses up."""
        device = candidate.device
        if not device.consumes_counters:
            return True
        pool = (candidate.id.driver, candidate.id.pool)
        left = self.allocator.tracker.counters_left(
            pool,
            self.template_budget if candidate.template else None,
            self.target.id,
            self.instance_type,
        )
        return has_room(device, left, self.drawn.get((pool, candidate.template), {}))

    def attempt(self, claim: int, request: int, slot: int, candidate: Candidate) -> bool:
        allocator = self.allocator
        allocator.steps += 1
        if allocator.steps > SEARCH_BUDGET:
            raise AllocationError(
                f"device search gave up after {SEARCH_BUDGET} tries; simplify the claims"
            )
        data = self.claims[claim]
        spec = data.requests[request].spec
        free, share = self._free(candidate, spec)
        if not free or not self._payable(candidate):
            return False
        if not allocator.selected(candidate, claim, request, spec):
            return False
        added = try_constraints(data.constraints, spec.name, candidate)
        if added is None:
            return False
        before = self.requirements
        pools = self.pools
        if candidate.topology is not None:
            if not before.compatible(candidate.topology, allocator.allow_undefined):
                for constraint in reversed(added):
                    constraint.remove(spec.name)
                return False
            self.requirements = before.add(candidate.topology)
            self.pools = filter_pools(
                pools, self.requirements, self.target.node_name, allocator.allow_undefined
            )
        self._hold(Choice(claim, spec.name, candidate, share), 1)
        if self.run(claim, request, slot + 1):
            return True
        self._hold(self.chosen[-1], -1)
        self.requirements = before
        self.pools = pools
        for constraint in reversed(added):
            constraint.remove(spec.name)
        return False

    def _hold(self, choice: Choice, sign: int) -> None:
        """Take (``sign`` 1) or give back (-1) what ``choice`` holds."""
        candidate = choice.candidate
        identity = (candidate.id, candidate.template)
        if sign > 0:
            self.chosen.append(choice)
        else:
            self.chosen.pop()
        if choice.share is not None:
            add(self.shares.setdefault(identity, {}), choice.share, sign)
        elif sign > 0:
            self.chosen_ids.add(identity)
        else:
            self.chosen_ids.discard(identity)
        if candidate.device.consumes_counters:
            pool = (candidate.id.driver, candidate.id.pool)
            draw(self.drawn.setdefault((pool, candidate.template), {}), candidate.device, sign)
