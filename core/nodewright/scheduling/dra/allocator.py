"""The device allocator of one scheduling pass (Karpenter's ``dynamicresources.Allocator``).

``allocate(target, claims)`` asks whether a pod's claims can be met on a target: an existing
node (one instance type, its published devices or, while it is not initialized, its instance
type's templates) or a NodeClaim being sized (several instance types, each with its
templates). Claims already allocated in the cluster only narrow where the pod may go (their
allocation's node selector); a claim allocated earlier in this pass for a template device is
tied to that NodeClaim. The others are searched depth first, one instance type at a time:
claim by claim, request by request, device by device, published devices before templates,
backtracking when a selector, a ``matchAttribute`` constraint or a device's reach rules a
choice out. Instance types the search fails on are dropped; the reach a chosen device imposes
carries over to the next instance type, so the answer is one set of requirements a single
NodeClaim can hold.

Nothing changes until the solver places the pod and calls :meth:`Allocator.commit`; devices
of instance types the solver later drops are given back with :meth:`Allocator.release`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api.cel.parse import CelError
from nodewright.api.labels import WELL_KNOWN_LABELS
from nodewright.api.resource import MAX_RESULTS_PER_CLAIM
from nodewright.scheduling.dra.claims import ClaimSpec, RequestSpec
from nodewright.scheduling.dra.constraints import (
    AttributeBindings,
    MatchAttribute,
    try_constraints,
)
from nodewright.scheduling.dra.devices import DeviceID, ResourceSliceTemplate
from nodewright.scheduling.dra.pools import (
    Candidate,
    Pool,
    PublishedSlice,
    filter_pools,
    gather_pools,
)
from nodewright.scheduling.dra.tracker import Tracker
from nodewright.scheduling.requirements import Requirements

#: Device tries one ``allocate`` may make before it gives up (Karpenter stops after 5 s).
SEARCH_BUDGET = 200_000
NO_INSTANCE_TYPE = "no instance type can satisfy the allocation"
#: Said when a device that would have matched is one nodewright does not allocate.
UNSUPPORTED_DEVICES = (
    "matching devices that share counters or allow multiple allocations are not allocated "
    "by nodewright"
)


class AllocationError(Exception):
    """The claims cannot be met on the target, in Karpenter's words."""


@dataclass(frozen=True)
class Target:
    """Where a pod might go: an existing node, or a NodeClaim being sized."""

    #: Unique in the pass (a node's name, a NodeClaim's placeholder hostname).
    id: str
    node_pool: str
    requirements: Requirements
    instance_types: tuple[str, ...]
    #: Template devices per instance type (none for an initialized node).
    templates: Mapping[str, Sequence[ResourceSliceTemplate]] = field(default_factory=dict)
    #: The node's name; empty for a NodeClaim not launched yet.
    node_name: str = ""


@dataclass
class ClaimAllocation:
    """A claim allocated in this pass: for its NodeClaim, per instance type."""

    node_claim: str
    devices: dict[str, list[tuple[DeviceID, bool]]] = field(default_factory=dict)
    contributed: dict[str, Requirements] = field(default_factory=dict)
    used_templates: bool = False
    #: Per instance type: (request name, device) in request order, as a claim's
    #: ``status.allocation`` lists them.
    results: dict[str, list[tuple[str, DeviceID]]] = field(default_factory=dict)

    @property
    def requirements(self) -> Requirements:
        """Where a pod sharing the claim may go, whichever instance type launches."""
        return Requirements().add(*self.contributed.values())


@dataclass
class Allocation:
    """What ``allocate`` found: the instance types that can meet the claims and the node
    requirements that come with them; :meth:`Allocator.commit` records it."""

    target: str
    instance_types: tuple[str, ...]
    requirements: Requirements
    devices: dict[str, list[tuple[DeviceID, bool]]] = field(default_factory=dict)
    claims: dict[str, ClaimAllocation] = field(default_factory=dict)


@dataclass
class _Request:
    spec: RequestSpec
    #: For ``All``: the matching published devices, and template devices per instance type.
    cluster: list[Candidate] = field(default_factory=list)
    templates: dict[str, list[Candidate]] = field(default_factory=dict)


@dataclass
class _Claim:
    spec: ClaimSpec
    requests: list[_Request]
    constraints: list[MatchAttribute]


class _Search:
    """One instance type's depth-first search over the unallocated claims."""

    def __init__(
        self,
        allocator: Allocator,
        target: Target,
        claims: list[_Claim],
        *,
        instance_type: str,
        requirements: Requirements,
        pools: list[Pool],
        templates: list[Candidate],
    ) -> None:
        self.allocator = allocator
        self.target = target
        self.claims = claims
        self.instance_type = instance_type
        self.requirements = requirements
        self.pools = pools
        self.templates = templates
        #: (claim index, request name, device) in the order chosen.
        self.chosen: list[tuple[int, str, Candidate]] = []
        self.chosen_ids: set[tuple[DeviceID, bool]] = set()

    def slots(self, request: _Request) -> int:
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

    def attempt(self, claim: int, request: int, slot: int, candidate: Candidate) -> bool:
        allocator = self.allocator
        allocator.steps += 1
        if allocator.steps > SEARCH_BUDGET:
            raise AllocationError(
                f"device search gave up after {SEARCH_BUDGET} tries; simplify the claims"
            )
        identity = (candidate.id, candidate.template)
        if identity in self.chosen_ids:
            return False
        if allocator.tracker.taken(
            candidate.id, candidate.template, self.target.id, self.instance_type
        ):
            return False
        data = self.claims[claim]
        spec = data.requests[request].spec
        if not allocator.selected(candidate, claim, request, spec):
            return False
        if not candidate.device.allocatable:
            allocator.unsupported_matched = True
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
        self.chosen.append((claim, spec.name, candidate))
        self.chosen_ids.add(identity)
        if self.run(claim, request, slot + 1):
            return True
        self.chosen.pop()
        self.chosen_ids.discard(identity)
        self.requirements = before
        self.pools = pools
        for constraint in reversed(added):
            constraint.remove(spec.name)
        return False


class Allocator:
    """Device allocation for one scheduling pass."""

    def __init__(
        self,
        slices: Sequence[PublishedSlice],
        allocated: frozenset[DeviceID] = frozenset(),
        bindings: AttributeBindings | None = None,
        deleting_pods: frozenset[str] = frozenset(),
        allow_undefined: frozenset[str] = WELL_KNOWN_LABELS,
    ) -> None:
        self.slices = tuple(slices)
        self.tracker = Tracker(preallocated=allocated)
        self.bindings: AttributeBindings = bindings or {}
        self.deleting_pods = deleting_pods
        self.allow_undefined = allow_undefined
        #: Claims allocated in this pass, by ``namespace/name``.
        self.claims: dict[str, ClaimAllocation] = {}
        self.steps = 0
        #: A device nodewright does not allocate matched a request in the last search.
        self.unsupported_matched = False
        self._matches: dict[tuple[DeviceID, bool, int, int], bool] = {}

    # -- the search ------------------------------------------------------------------------

    def selected(self, candidate: Candidate, claim: int, request: int, spec: RequestSpec) -> bool:
        """All of the request's selectors accept the device (an evaluation error: no)."""
        key = (candidate.id, candidate.template, claim, request)
        known = self._matches.get(key)
        if known is None:
            try:
                known = _matches(candidate, spec)
            except CelError:
                known = False
            self._matches[key] = known
        return known

    def _classify(
        self, target: Target, claims: Sequence[ClaimSpec]
    ) -> tuple[Requirements, list[ClaimSpec]]:
        requirements = target.requirements
        unallocated: list[ClaimSpec] = []
        for claim in claims:
            if claim.allocated and not self._moving(claim):
                topology = claim.allocation_topology
                if topology is not None:
                    if not requirements.compatible(topology, self.allow_undefined):
                        raise AllocationError(
                            f'ResourceClaim "{claim.key}": in-cluster allocation topology is '
                            "incompatible with NodeClaim requirements"
                        )
                    requirements = requirements.add(topology)
                continue
            earlier = self.claims.get(claim.key)
            if earlier is not None:
                if earlier.used_templates:
                    if earlier.node_claim != target.id:
                        raise AllocationError(
                            f'ResourceClaim "{claim.key}": claim is bound to a different '
                            "in-flight NodeClaim"
                        )
                    continue
                shared = earlier.requirements
                if shared:
                    if not requirements.compatible(shared, self.allow_undefined):
                        raise AllocationError(
                            f'ResourceClaim "{claim.key}": in-memory allocation topology is '
                            "incompatible with NodeClaim requirements"
                        )
                    requirements = requirements.add(shared)
                continue
            unallocated.append(claim)
        return requirements, unallocated

    def _moving(self, claim: ClaimSpec) -> bool:
        """Every consumer of the claim is a pod leaving its node: re-allocate it."""
        return (
            bool(claim.reserved_pods)
            and not claim.reserved_by_other
            and all(uid in self.deleting_pods for uid in claim.reserved_pods)
        )

    def _prepare(
        self,
        claims: list[ClaimSpec],
        pools: list[Pool],
        templates: Mapping[str, list[Candidate]],
    ) -> list[_Claim]:
        prepared: list[_Claim] = []
        for claim in claims:
            if claim.problem is not None:
                raise AllocationError(f'validating claim "{claim.name}": {claim.problem}')
            requests: list[_Request] = []
            for spec in claim.requests:
                request = _Request(spec)
                if spec.all_devices:
                    request.cluster = self._all_in_cluster(claim, spec, pools)
                    for instance_type, candidates in templates.items():
                        matched = [c for c in candidates if _all_matches(claim, spec, c)]
                        if matched or request.cluster:
                            request.templates[instance_type] = matched
                requests.append(request)
            self._check_total(claim, requests)
            constraints = [MatchAttribute(m.attribute, m.requests) for m in claim.match_attributes]
            prepared.append(_Claim(claim, requests, constraints))
        return prepared

    def _all_in_cluster(
        self, claim: ClaimSpec, spec: RequestSpec, pools: list[Pool]
    ) -> list[Candidate]:
        matched: list[Candidate] = []
        for pool in pools:
            where = f'validating claim "{claim.name}": claim "{claim.name}" request "{spec.name}"'
            if pool.invalid:
                raise AllocationError(
                    f"{where}: pool {pool.driver}/{pool.name} is invalid (duplicate device names)"
                )
            if pool.incomplete:
                raise AllocationError(
                    f"{where}: pool {pool.driver}/{pool.name} is incomplete (missing slices)"
                )
            matched.extend(c for c in pool.devices if _all_matches(claim, spec, c))
        return matched

    @staticmethod
    def _check_total(claim: ClaimSpec, requests: list[_Request]) -> None:
        limit = MAX_RESULTS_PER_CLAIM
        base = sum(r.spec.count + len(r.cluster) for r in requests)
        if base > limit:
            raise AllocationError(
                f'validating claim "{claim.name}": claim "{claim.name}" requests {base} total '
                f"devices, exceeding maximum of {limit}"
            )
        types = {t for r in requests for t in r.templates}
        pruned = 0
        for instance_type in types:
            if base + sum(len(r.templates.get(instance_type, ())) for r in requests) > limit:
                pruned += 1
                for r in requests:
                    r.templates.pop(instance_type, None)
        if types and pruned == len(types):
            raise AllocationError(
                f'validating claim "{claim.name}": claim "{claim.name}": all instance types '
                "pruned, no instance type can satisfy this claim without exceeding the maximum "
                f"of {limit} devices"
            )

    def allocate(self, target: Target, claims: Sequence[ClaimSpec]) -> Allocation:
        """Whether ``claims`` (a pod's, in order) can be met on ``target``; raises
        :class:`AllocationError` saying why not."""
        if not claims:
            return Allocation(target.id, target.instance_types, Requirements())
        requirements, unallocated = self._classify(target, claims)
        if not unallocated:
            return Allocation(target.id, target.instance_types, requirements)
        self.steps = 0
        self.unsupported_matched = False
        self._matches = {}
        pools = gather_pools(self.slices, requirements, target.node_name, self.allow_undefined)
        templates = {
            name: [
                Candidate(d, DeviceID(s.driver, s.pool, d.name), True)
                for s in target.templates.get(name, ())
                for d in s.devices
            ]
            for name in target.instance_types
        }
        prepared = self._prepare(unallocated, pools, templates)
        result = Allocation(target.id, (), requirements)
        metas = [ClaimAllocation(target.id) for _ in prepared]
        surviving: list[str] = []
        for instance_type in target.instance_types:
            bindings = self.bindings
            for claim in prepared:
                for constraint in claim.constraints:
                    constraint.reset(
                        bindings.get((constraint.attribute, target.node_pool, instance_type), {})
                    )
            search = _Search(
                self,
                target,
                prepared,
                instance_type=instance_type,
                requirements=requirements,
                pools=pools,
                templates=templates.get(instance_type, []),
            )
            if not search.run():
                continue
            surviving.append(instance_type)
            chosen = [(c.id, c.template) for _, _, c in search.chosen]
            result.devices[instance_type] = chosen
            for index, request_name, candidate in search.chosen:
                meta = metas[index]
                meta.devices.setdefault(instance_type, []).append(
                    (candidate.id, candidate.template)
                )
                meta.results.setdefault(instance_type, []).append((request_name, candidate.id))
                meta.used_templates = meta.used_templates or candidate.template
                if candidate.topology is not None:
                    meta.contributed[instance_type] = meta.contributed.get(
                        instance_type, Requirements()
                    ).add(candidate.topology)
            # The next instance type may not need requirements this one rules out.
            requirements = search.requirements
        if not surviving:
            if self.unsupported_matched:
                raise AllocationError(f"{NO_INSTANCE_TYPE} ({UNSUPPORTED_DEVICES})")
            raise AllocationError(NO_INSTANCE_TYPE)
        result.instance_types = tuple(surviving)
        result.requirements = requirements
        result.claims = {claim.spec.key: meta for claim, meta in zip(prepared, metas, strict=True)}
        return result

    # -- the pass's state ------------------------------------------------------------------

    def commit(self, allocation: Allocation) -> None:
        """Record a placed pod's allocation."""
        for instance_type, devices in allocation.devices.items():
            self.tracker.take(allocation.target, instance_type, devices)
        for key, meta in allocation.claims.items():
            self.claims[key] = meta

    def release(self, target: str, instance_types: Sequence[str]) -> None:
        """``target`` will not launch as ``instance_types``: free their devices."""
        if not instance_types:
            return
        self.tracker.release(target, instance_types)
        for meta in self.claims.values():
            if meta.node_claim != target:
                continue
            for instance_type in instance_types:
                meta.contributed.pop(instance_type, None)
                meta.devices.pop(instance_type, None)

    def drivers(self, target: str) -> list[str]:
        """The drivers of devices allocated for pods placed on ``target``, sorted."""
        return sorted(
            {
                device.driver
                for meta in self.claims.values()
                if meta.node_claim == target
                for devices in meta.devices.values()
                for device, _ in devices
            }
        )


def _matches(candidate: Candidate, spec: RequestSpec) -> bool:
    device = candidate.device.selector_input(candidate.id.driver)
    return all(program.matches(device) for program in spec.selectors)


def _all_matches(claim: ClaimSpec, spec: RequestSpec, candidate: Candidate) -> bool:
    try:
        return _matches(candidate, spec)
    except CelError as exc:
        raise AllocationError(
            f'validating claim "{claim.name}": claim "{claim.name}" request "{spec.name}": '
            f"CEL expression evaluation failed: {exc}"
        ) from None
