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
from fractions import Fraction

from nodewright.api.cel.parse import CelError
from nodewright.api.labels import WELL_KNOWN_LABELS
from nodewright.api.resource import MAX_RESULTS_PER_CLAIM
from nodewright.scheduling.dra.capacity import add, consumed_capacity
from nodewright.scheduling.dra.claims import ClaimSpec, RequestSpec
from nodewright.scheduling.dra.cluster import HeldDevices
from nodewright.scheduling.dra.constraints import (
    AttributeBindings,
    MatchAttribute,
)
from nodewright.scheduling.dra.counters import (
    Counters,
    PoolKey,
    cluster_budgets,
    draw,
    template_budgets,
)
from nodewright.scheduling.dra.devices import DeviceID, ResourceSliceTemplate
from nodewright.scheduling.dra.pools import (
    Candidate,
    Pool,
    PublishedSlice,
    current_slices,
    gather_pools,
)
from nodewright.scheduling.dra.search import (
    AllocationError,
    Choice,
    Claim,
    Request,
    Search,
)
from nodewright.scheduling.dra.tracker import Tracker
from nodewright.scheduling.requirements import Requirements

NO_INSTANCE_TYPE = "no instance type can satisfy the allocation"


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
    #: Per instance type: (request name, device, the share taken of a shared device) in
    #: request order, as a claim's ``status.allocation`` lists them.
    results: dict[str, list[tuple[str, DeviceID, Mapping[str, Fraction] | None]]] = field(
        default_factory=dict
    )

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
    #: Per instance type: what is taken of shared devices, and drawn on counter sets.
    shares: dict[str, dict[tuple[DeviceID, bool], dict[str, Fraction]]] = field(
        default_factory=dict
    )
    counters: dict[str, dict[tuple[PoolKey, bool], Counters]] = field(default_factory=dict)


class Allocator:
    """Device allocation for one scheduling pass."""

    def __init__(
        self,
        slices: Sequence[PublishedSlice],
        held: HeldDevices | None = None,
        bindings: AttributeBindings | None = None,
        deleting_pods: frozenset[str] = frozenset(),
        allow_undefined: frozenset[str] = WELL_KNOWN_LABELS,
    ) -> None:
        self.slices = tuple(slices)
        #: Each pool's current slices, grouped once for every target the pass allocates on.
        self._current = current_slices(self.slices)
        held = held or HeldDevices()
        self.tracker = Tracker(
            preallocated=held.exclusive,
            preallocated_capacity=held.shared,
            budgets=cluster_budgets(self._current, held),
        )
        self.bindings: AttributeBindings = bindings or {}
        self.deleting_pods = deleting_pods
        self.allow_undefined = allow_undefined
        #: Claims allocated in this pass, by ``namespace/name``.
        self.claims: dict[str, ClaimAllocation] = {}
        self.steps = 0
        self._matches: dict[tuple[DeviceID, bool, int, int], bool] = {}
        self._shares: dict[tuple[DeviceID, bool, int], dict[str, Fraction] | None] = {}

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

    def share(self, candidate: Candidate, spec: RequestSpec) -> dict[str, Fraction] | None:
        """What one allocation of the shared device for ``spec`` takes (None: it cannot)."""
        key = (candidate.id, candidate.template, id(spec))
        if key not in self._shares:
            self._shares[key] = consumed_capacity(candidate.device, spec.capacity)
        return self._shares[key]

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
    ) -> list[Claim]:
        prepared: list[Claim] = []
        for claim in claims:
            if claim.problem is not None:
                raise AllocationError(f'validating claim "{claim.name}": {claim.problem}')
            requests: list[Request] = []
            for spec in claim.requests:
                request = Request(spec)
                if spec.all_devices:
                    request.cluster = self._all_in_cluster(claim, spec, pools)
                    for instance_type, candidates in templates.items():
                        matched = [c for c in candidates if _all_matches(claim, spec, c)]
                        if matched or request.cluster:
                            request.templates[instance_type] = matched
                requests.append(request)
            self._check_total(claim, requests)
            constraints = [MatchAttribute(m.attribute, m.requests) for m in claim.match_attributes]
            prepared.append(Claim(claim, requests, constraints))
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
    def _check_total(claim: ClaimSpec, requests: list[Request]) -> None:
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
        self._matches = {}
        self._shares = {}
        pools = gather_pools(self._current, requirements, target.node_name, self.allow_undefined)
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
            search = Search(
                self,
                target,
                prepared,
                instance_type=instance_type,
                requirements=requirements,
                pools=pools,
                templates=templates.get(instance_type, []),
                template_budget=template_budgets(
                    (s.driver, s.pool, s.shared_counters)
                    for s in target.templates.get(instance_type, ())
                ),
            )
            if not search.run():
                continue
            surviving.append(instance_type)
            _record(result, instance_type, search.chosen)
            for choice in search.chosen:
                candidate = choice.candidate
                meta = metas[choice.claim]
                meta.devices.setdefault(instance_type, []).append(
                    (candidate.id, candidate.template)
                )
                meta.results.setdefault(instance_type, []).append(
                    (choice.request, candidate.id, choice.share)
                )
                meta.used_templates = meta.used_templates or candidate.template
                if candidate.topology is not None:
                    meta.contributed[instance_type] = meta.contributed.get(
                        instance_type, Requirements()
                    ).add(candidate.topology)
            # The next instance type may not need requirements this one rules out.
            requirements = search.requirements
        if not surviving:
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
        self.tracker.take_shares(allocation.target, allocation.shares, allocation.counters)
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


def _record(result: Allocation, instance_type: str, chosen: Sequence[Choice]) -> None:
    """What the choices for ``instance_type`` hold: whole devices, shares of shared devices,
    draws on counter sets."""
    whole = result.devices.setdefault(instance_type, [])
    shares = result.shares.setdefault(instance_type, {})
    drawn = result.counters.setdefault(instance_type, {})
    for choice in chosen:
        candidate = choice.candidate
        identity = (candidate.id, candidate.template)
        if choice.share is None:
            whole.append(identity)
        else:
            add(shares.setdefault(identity, {}), choice.share)
        if candidate.device.consumes_counters:
            pool = (candidate.id.driver, candidate.id.pool)
            draw(drawn.setdefault((pool, candidate.template), {}), candidate.device)


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
