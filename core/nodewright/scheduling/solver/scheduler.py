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
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from nodewright.scheduling.dra import split_dra_pods
from nodewright.scheduling.model import (
    ExistingNode,
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.repack import repack
from nodewright.scheduling.resources import CPU, MEMORY
from nodewright.scheduling.solver.claimtemplates import ClaimTemplates
from nodewright.scheduling.solver.constraints import MergeMemo, Refusal
from nodewright.scheduling.solver.decision import DecisionWatch
from nodewright.scheduling.solver.devices import DeviceFacts, DeviceRound
from nodewright.scheduling.solver.effectivezone import effective_zone
from nodewright.scheduling.solver.existingnode import ExistingNodeState
from nodewright.scheduling.solver.nodeclaim import OpenNodeClaim, Plan
from nodewright.scheduling.solver.nodeclaimtemplate import NodeClaimTemplate
from nodewright.scheduling.solver.nodeindex import TrialNodes
from nodewright.scheduling.solver.nodetopology import PodGroups, TopologyCheck
from nodewright.scheduling.solver.preferences import PodState
from nodewright.scheduling.solver.reservations import ReservationError, Reservations
from nodewright.scheduling.taints import PREFER_NO_SCHEDULE
from nodewright.scheduling.topology import (
    PlacedPod,
    PodTopology,
    Topology,
    TopologyGroup,
    TopologyTerm,
)

if TYPE_CHECKING:
    from nodewright.scheduling.solver.trial import SolveBase

IGNORE_PREFERENCES = "Ignore"
RESERVED_STRICT = "Strict"
#: Entries kept in the solver's per-shape rejection memo before it starts over.
_MEMO_LIMIT = 2_000_000
#: What :meth:`Scheduler._add` answers when a pod needs a NodeClaim beyond
#: ``max_new_claims``: the solve stops there.
_CAPPED = "the solve has opened as many NodeClaims as it may"


def _queue_order(pod: PodRequest) -> tuple[int, int, int, str]:
    return (-pod.requests.get(CPU, 0), -pod.requests.get(MEMORY, 0), pod.order, pod.uid)


def node_order(node: ExistingNode) -> tuple[bool, str]:
    """The order existing nodes are tried in: initialized ones first, then by name."""
    return (not node.initialized, node.name)


def prefers_no_schedule(templates: Sequence[NodePoolTemplate]) -> bool:
    """Whether a pool taints its nodes PreferNoSchedule (a pod may relax that preference)."""
    return any(taint.effect == PREFER_NO_SCHEDULE for t in templates for taint in t.taints)


class Scheduler:
    """One solve (Karpenter's ``Scheduler``): the queue, the candidates, and the memo tables
    that let pods of one shape skip candidates they have already ruled out."""

    def __init__(
        self,
        existing: Sequence[ExistingNode],
        templates: Sequence[NodePoolTemplate],
        options: SolverOptions,
        pods: Sequence[PodRequest],
        placed: Sequence[PlacedPod],
        *,
        claim_templates: Sequence[NodeClaimTemplate] | None = None,
        built: ClaimTemplates | None = None,
        devices: DeviceFacts | None = None,
    ) -> None:
        """``claim_templates``: ``templates`` already made into NodeClaimTemplates, in
        :func:`~.claimtemplates.ordered_templates` order; else they come from ``built`` (with
        the requirement merges it keeps), or are made for this solve alone."""
        self.options = options
        self.respect = options.preference_policy != IGNORE_PREFERENCES
        #: DRA device allocation; None when pods with claims are skipped.
        self.devices = (
            None if devices is None else DeviceRound(devices, templates, options.well_known_labels)
        )
        self.nodes = [ExistingNodeState(n, self.devices) for n in sorted(existing, key=node_order)]
        #: A trial solve's nodes (shared with the other trials of a pass); None otherwise.
        self.trial: TrialNodes | None = None
        if claim_templates is None:
            claim_templates = (built or ClaimTemplates()).for_solve(templates, options)
        self.templates = list(claim_templates)
        self.usable = [t for t in self.templates if t.options]
        reservations = Reservations(self.usable, options.reserved_offering_mode == RESERVED_STRICT)
        self.reservations = reservations if reservations.capacity else None
        self.prefer_no_schedule_exists = prefers_no_schedule(templates)
        terms, inverse = self._terms(pods)
        if not terms and not inverse and not any(p.anti_affinity for p in placed):
            self.topology = Topology((), (), (), (), ())
        else:
            nodes = [(n.name, n.labels, n.taints) for n in existing if not n.in_flight]
            sources = [t.domain_source() for t in self.templates if t.options]
            self.topology = Topology(terms, inverse, sources, nodes, placed)
        well_known = options.well_known_labels
        self._start(MergeMemo(well_known) if built is None else built.merges(well_known))

    @classmethod
    def trial_of(
        cls,
        base: SolveBase,
        pods: Sequence[PodRequest],
        excluded: Collection[str],
        leaving: Collection[str],
    ) -> Scheduler:
        """A solve over ``base`` without the existing nodes whose name or NodeClaim is in
        ``excluded`` and without the running pods of the nodes named in ``leaving`` (see
        :mod:`.trial`)."""
        self = cls.__new__(cls)
        self.options = base.options
        self.respect = base.options.preference_policy != IGNORE_PREFERENCES
        # Trials leave pods with DRA claims out; a simulation with such pods solves from
        # scratch (see nodewright.controllers.disruption.trials).
        self.devices = None
        self.nodes = []
        positions = base.nodes.named(excluded)
        self.trial = TrialNodes(base.nodes, positions)
        self.templates = base.claim_templates()
        self.usable = [t for t in self.templates if t.options]
        self.reservations = base.reservations()
        self.prefer_no_schedule_exists = base.prefer_no_schedule_exists
        terms, inverse = self._terms(pods)
        if not terms and not inverse and not base.topology.any_anti_affinity(leaving):
            self.topology = Topology((), (), (), (), ())
        else:
            unregistered = base.nodes.registered(positions)
            self.topology = base.topology.topology(terms, inverse, unregistered, leaving)
        self._start(base.memo)
        return self

    def _start(self, memo: MergeMemo) -> None:
        """The state and memo tables of a solve that has not placed anything yet."""
        self.claims: list[OpenNodeClaim] = []
        self.memo = memo
        self.hostnames = 0
        self.ranks = 0
        #: NodeClaims tried from a NodePool for a pod (:attr:`SchedulingResult.claims_tried`).
        self.claims_tried = 0
        #: A trial's watch for a certain "no" (:mod:`.decision`); None: solve to the end.
        self.watch: DecisionWatch | None = None
        #: Claims in the order they were opened or had their requirements narrowed.
        self.changed: list[OpenNodeClaim] = []
        #: Per pod shape: how far into :attr:`changed` it has looked, and the claims it has
        #: not ruled out.
        self.alive: dict[int, tuple[int, set[OpenNodeClaim]]] = {}
        self.memo_size = 0
        #: Per pod shape: claims a topology group refused, by group, with the group's epoch
        #: at the time; they come back when the epoch moves.
        self.parked: dict[int, dict[TopologyGroup, tuple[int, set[OpenNodeClaim]]]] = {}
        #: Every open claim in Karpenter's order, and the sort keys alongside.
        self.order: list[OpenNodeClaim] = []
        self.order_keys: list[tuple[int, int]] = []
        #: Per pod shape: how many leading existing nodes are known to turn it away.
        self.node_skip: dict[int, int] = {}
        self._shapes: dict[tuple[object, ...], int] = {}
        self._topo_keys: dict[tuple[object, ...], int] = {}
        #: Per topology key: claims a topology group refused, with the claim's version, the
        #: group and its epoch at the time.
        self.topo_refused: dict[int, dict[OpenNodeClaim, tuple[int, TopologyGroup, int]]] = {}
        self._pod_topology: dict[
            tuple[str, tuple[tuple[str, str], ...], tuple[TopologyTerm, ...]],
            tuple[PodTopology, int],
        ] = {}
        self._signatures: dict[tuple[tuple[TopologyTerm, ...], tuple[bool, ...]], int] = {}

    def _terms(self, pods: Sequence[PodRequest]) -> tuple[list[TopologyTerm], list[TopologyTerm]]:
        """The topology terms the pods state (preferred ones while preferences are
        respected), and their required anti-affinity terms, in the pods' order."""
        terms: list[TopologyTerm] = []
        inverse: list[TopologyTerm] = []
        for pod in pods:
            terms.extend(pod.topology)
            if self.respect:
                terms.extend(pod.preferred_affinity)
                terms.extend(pod.preferred_anti_affinity)
                terms.extend(pod.schedule_anyway)
            inverse.extend(pod.required_anti_affinity)
        return terms, inverse

    def _prepare(self, state: PodState) -> None:
        """Work out the pod's topology groups and its shape after a (re)set or relaxation."""
        pod = state.pod
        signature = 0  # no topology groups in this solve
        if self.topology.groups or self.topology.inverse:
            active = state.active_terms()
            key = (pod.namespace, state.label_key, active)
            found = self._pod_topology.get(key)
            if found is None:
                topology = self.topology.for_pod(
                    pod.namespace, pod.labels, state.label_key, active, pod.required_anti_affinity
                )
                # The groups' terms and whether each selects the pod, numbered (from 1) so
                # the shape keys below hash a number rather than the terms.
                terms = (tuple(g.term for g in topology.constraining), tuple(topology.selects))
                signature = self._signatures.setdefault(terms, len(self._signatures) + 1)
                found = (topology, signature)
                self._pod_topology[key] = found
            state.topology, signature = found
        shape = (
            # A pod with DRA claims shares nothing learnt with other pods: devices run out.
            pod.uid if pod.dynamic_resources else "",
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
        states = [PodState(p, i, self.respect) for i, p in enumerate(pods)]
        for state in states:
            self._prepare(state)
        zones: dict[str, str] = {}
        if self.options.effective_zones:
            by_shape: dict[int, str] = {}  # pods of one shape have one effective zone
            for state in states:
                zone = by_shape.get(state.shape)
                if zone is None:
                    zone = by_shape[state.shape] = effective_zone(state, self.topology)
                zones[state.pod.key] = zone
        if not keep_order:
            states.sort(key=lambda s: _queue_order(s.pod))
        queue = deque(states)
        last_length: dict[int, int] = {}
        errors: dict[str, str] = {}
        capped = False
        while queue:
            state = queue[0]
            if last_length.get(state.seq) == len(queue):
                break  # a full pass without progress
            error = self._try(state)
            if error == _CAPPED:
                capped = True
                break  # this pod and those after it wait for the next pass
            queue.popleft()
            if error is None:
                errors.pop(state.pod.key, None)
                if self.watch is not None and self.watch.decided:
                    return SchedulingResult(decided_no=True, claims_tried=self.claims_tried)
                continue
            errors[state.pod.key] = error
            state.reset()
            self._prepare(state)
            queue.append(state)
            last_length[state.seq] = len(queue)
        unplaced = {
            s.pod.key: errors[s.pod.key] for s in queue if s.pod.key in errors and not capped
        }
        if self.watch is not None:
            self.watch.unplaced(unplaced)
            if self.watch.decided:
                return SchedulingResult(decided_no=True, claims_tried=self.claims_tried)
        finished: list[NewNodeClaim] = []
        for claim in self.claims:
            outcome = claim.finish(self.options.max_instance_types)
            if isinstance(outcome, str):
                unplaced.update((pod.key, outcome) for pod in claim.pods)
                continue
            finished.append(outcome)
        return SchedulingResult(
            new_node_claims=finished,
            existing_nodes=(
                self.trial.placed()
                if self.trial is not None
                else {n.node.name: n.pods for n in self.nodes if n.pods}
            ),
            errors=unplaced,
            awaiting_reservation={
                key for key, error in unplaced.items() if isinstance(error, ReservationError)
            },
            effective_zones=zones,
            capped=capped,
            claims_tried=self.claims_tried,
        )

    def _try(self, state: PodState) -> str | None:
        """Place the pod, relaxing one preference after each failure (Karpenter's
        ``trySchedule``); the last failure when nothing is left to relax."""
        while True:
            error = self._add(state)
            if error is None:
                return None
            if isinstance(error, ReservationError) or error == _CAPPED:
                # The pod may fit as it is once reserved capacity frees up (or next pass).
                return error
            if not state.relax(self.prefer_no_schedule_exists):
                return error
            self._prepare(state)

    def _add(self, state: PodState) -> str | None:
        if state.pod.claims_problem is not None:
            return state.pod.claims_problem
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
                outcome = Refusal("", known[1].monotonic, known[1])
            else:
                planned = claim.plan(state, topology, claim.hostname, explain=False)
                if isinstance(planned, Plan):
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
        cap = self.options.max_new_claims
        if cap is not None and len(self.claims) >= cap:
            return _CAPPED
        problems: list[str] = []
        hostname = f"hostname-placeholder-{self.hostnames + 1:04d}"
        for template in self.usable:
            options = template.within_limits()
            if isinstance(options, str):
                problems.append(options)
                continue
            claim = OpenNodeClaim(template, options, self.memo, self.reservations, self.devices)
            self.claims_tried += 1
            opened = claim.plan(state, topology, hostname, explain=True)
            if isinstance(opened, Refusal):
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
            if self.watch is not None:
                self.watch.placed(claim, state.pod)
            self._place(claim)
            self.claims.append(claim)
            self.changed.append(claim)
            self.alive[state.shape][1].add(claim)
            template.charge(claim.options)
            return None
        if not problems:
            return "no nodepools found that can launch instance types"
        return "; ".join(problems)

    def _add_to_existing(self, state: PodState) -> bool:
        """The first existing node that takes the pod, in fixed order.

        A node that turns a pod away for a lasting reason turns away every later pod of the
        same shape too (it only fills up), so each shape remembers how many leading nodes it
        can skip.
        """
        if self.trial is not None:
            return self.trial.add(state, self.topology)
        shape = state.shape
        skip = self.node_skip.get(shape, 0)
        topology = self.topology
        check = TopologyCheck(PodGroups(state))
        for index in range(skip, len(self.nodes)):
            node = self.nodes[index]
            refusal = node.plan(state, False, check)
            if refusal is None:
                node.commit(state, topology)
                return True
            if index == skip and refusal.lasting:
                skip += 1
                self.node_skip[shape] = skip
        return False

    def _open_claims(self, shape: int) -> Iterable[OpenNodeClaim]:
        """Open claims that might take a pod of ``shape``, in Karpenter's order.

        Karpenter stable-sorts its claims by pod count before every pod, so among claims with
        equal counts the one that reached the count most recently comes first, and new claims
        go last; :attr:`OpenNodeClaim.rank` encodes that order without re-sorting everything.
        A claim that rejected a shape for a lasting reason keeps rejecting it while its
        requirements stay the same, so each shape keeps the claims it has not ruled out and
        picks up those opened or narrowed since (:attr:`changed`).
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

    def _place(self, claim: OpenNodeClaim) -> None:
        key = (len(claim.pods), claim.rank)
        index = bisect_left(self.order_keys, key)
        self.order_keys.insert(index, key)
        self.order.insert(index, claim)

    def _commit(self, claim: OpenNodeClaim, state: PodState, plan: Plan) -> None:
        narrowed = plan.requirements is not claim.requirements
        index = bisect_left(self.order_keys, (len(claim.pods), claim.rank))
        del self.order_keys[index]
        del self.order[index]
        claim.commit(state, plan, self.topology)
        if self.watch is not None:
            self.watch.placed(claim, state.pod)
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
    devices: DeviceFacts | None = None,
    built: ClaimTemplates | None = None,
) -> SchedulingResult:
    """Place ``pods`` on ``existing`` nodes or on new NodeClaims from ``templates``.

    ``placed`` are the pods already running (not those being placed), for topology counts
    and for the required anti-affinity they impose. Pods that cannot be placed appear in
    ``errors`` with Karpenter's explanation. Without ``devices`` pods with DRA claims are
    left out with Karpenter's ``IGNORE_DRA_REQUESTS`` error; with them their claims are
    allocated (:mod:`nodewright.scheduling.solver.devices`). ``built`` keeps the NodePools'
    NodeClaimTemplates from solve to solve (:mod:`.claimtemplates`); without it they are
    made for this solve.
    """
    skipped: dict[str, str] = {}
    if devices is None:
        pods, skipped = split_dra_pods(pods)
    scheduler = Scheduler(existing, templates, options, pods, placed, built=built, devices=devices)
    result = scheduler.solve(pods)
    zones = result.effective_zones
    # A capped solve is not repacked: all its NodeClaims are created, and the run that
    # capped it stops at its launch limit.
    if options.repack and not result.capped:
        plain = replace(options, repack=False, effective_zones=False)

        def in_order(batch: Sequence[PodRequest], template: NodePoolTemplate) -> SchedulingResult:
            lone = None if built is None else [built.lone(template, plain)]
            return Scheduler((), [template], plain, batch, (), claim_templates=lone).solve(
                batch, keep_order=True
            )

        placed_terms = {term for pod in placed for term in pod.anti_affinity}
        tried = result.claims_tried
        result = repack(result, pods, templates, placed_terms, in_order)
        result.claims_tried = tried
    result.errors.update(skipped)
    result.effective_zones = zones
    return result
