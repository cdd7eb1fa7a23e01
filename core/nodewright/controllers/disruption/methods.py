"""The disruption methods, tried in Karpenter's order each loop until one acts: emptiness,
static drift, drift, multi-node consolidation, single-node consolidation.

Each turns candidates into at most one :class:`Command`: the candidates to delete and the
replacements to launch first. Consolidation keeps a command only when it deletes, or
replaces with exactly one strictly cheaper NodeClaim.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

from nodewright.api.apps import DaemonSet
from nodewright.api.core import Node, Pod
from nodewright.api.duration import DurationError, parse_optional_duration
from nodewright.api.karpenter import (
    CONDITION_CONSOLIDATABLE,
    CONDITION_DRIFTED,
    NodeClaim,
    NodePool,
)
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    INSTANCE_TYPE_LABEL,
)
from nodewright.api.meta import KubeObject, find_condition, is_true
from nodewright.controllers.disruption.balanced import BalancedEvaluator, Score
from nodewright.controllers.disruption.candidates import (
    EVENTUAL,
    GRACEFUL,
    REASON_DRIFTED,
    REASON_EMPTY,
    REASON_UNDERUTILIZED,
    Candidate,
    Snapshot,
)
from nodewright.controllers.disruption.rescheduling import (
    PodRequests,
    Rescheduling,
    node_pool_templates,
    simulate,
)
from nodewright.controllers.events import EventRecorder
from nodewright.controllers.staticpools import nodes_allowed, static_node_counts, static_replacement
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import NewNodeClaim, NodePoolTemplate, SolverOptions
from nodewright.scheduling.requirements import Requirement, Requirements

WHEN_EMPTY = "WhenEmpty"
#: Spot-to-spot replacement needs this many cheaper spot types, and launches only that many.
SPOT_TO_SPOT_MIN_TYPES = 15
#: Multi-node consolidation looks at no more candidates than this.
MULTI_NODE_MAX_CANDIDATES = 100
#: Unconsolidatable events repeat at most this often.
UNCONSOLIDATABLE_DEDUPE = timedelta(minutes=15)
#: A "nothing to consolidate" verdict is reused this long if nothing changes.
CONSOLIDATED_TTL = timedelta(minutes=5)


@dataclass
class Command:
    """Delete ``candidates``, after launching ``replacements`` and waiting for them."""

    method: Method
    candidates: list[Candidate]
    replacements: list[NewNodeClaim] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return self.method.reason

    @property
    def decision(self) -> str:
        return "Replace" if self.replacements else "Delete"

    def label(self, candidate: Candidate | None = None) -> str:
        """``<method>/<decision>`` as Karpenter's events word it (``Consolidation/Delete``)."""
        if candidate is None and self.candidates:
            candidate = self.candidates[0]
        return f"{self.method.word(candidate)}/{self.decision}"

    def savings(self) -> float:
        """Candidates' prices less the cheapest price of each replacement's first type."""
        cost = sum(c.price for c in self.candidates)
        for replacement in self.replacements:
            if replacement.instance_types:
                first = replacement.instance_types[0]
                cost -= min(_compatible_offerings(first, replacement.requirements), default=0.0)
        return cost

    def describe_for(self, candidate: Candidate) -> str:
        """The command as one of its nodes' events tell it (Karpenter's ``StringForNode``)."""
        if len(self.candidates) == 1:
            return self.describe()
        return (
            f"{self.decision.lower()}: [{candidate.name}] "
            f"(part of {len(self.candidates)}-node consolidation)"
        )

    def describe(self) -> str:
        nodes = ", ".join(c.name for c in self.candidates)
        pools = ",".join(sorted({c.pool.name for c in self.candidates}))
        text = f"{self.label()}: nodepools=[{pools}]: [{nodes}]"
        if self.replacements:
            count = len(self.replacements)
            text += f" -> [{count} replacement{'s' if count != 1 else ''}]"
        return f"{text} (savings: ${self.savings():.2f})"


class Context:
    """What a method may use during one loop: the snapshot, events, solver options."""

    def __init__(
        self,
        snapshot: Snapshot,
        events: EventRecorder,
        daemonsets: Sequence[DaemonSet],
        solver_options: SolverOptions,
        spot_to_spot: bool,
        *,
        requests: PodRequests | None = None,
        virtual: Sequence[Pod] = (),
        candidates: Callable[[], Sequence[Candidate]] | None = None,
    ) -> None:
        self.snapshot = snapshot
        #: CapacityBuffer virtual pods: pending pods every simulation must place too.
        self.virtual = virtual
        #: Every consolidation candidate of the pass, whichever method may take it.
        self._all_candidates = candidates
        self.events = events
        self.solver_options = solver_options
        self.spot_to_spot = spot_to_spot
        self._daemonsets = daemonsets
        self._requests = requests
        self._templates: list[NodePoolTemplate] | None = None

    @property
    def now(self) -> datetime:
        return self.snapshot.now

    def templates(self) -> list[NodePoolTemplate]:
        if self._templates is None:
            self._templates = node_pool_templates(
                self.snapshot, self._daemonsets, self.solver_options.well_known_labels
            )
        return self._templates

    @functools.cached_property
    def balanced(self) -> BalancedEvaluator:
        """This pass's scoring of consolidation moves (Balanced pools)."""
        every = self._all_candidates
        return BalancedEvaluator(self.snapshot, every if every is not None else list, self.events)

    def candidate_events(self, command: Command) -> None:
        """``ConsolidationCandidate`` on each node of a replace command, as Karpenter sends it
        for every replacement it computes, whatever the pool's policy."""
        savings = command.savings()
        for candidate in command.candidates:
            message = (
                f"Consolidation candidate: {command.describe_for(candidate)} "
                f"(savings: ${savings:.2f})"
            )
            for obj in (candidate.node, candidate.claim):
                self.events.publish(obj, "ConsolidationCandidate", message)

    def simulate(self, candidates: Sequence[Candidate]) -> Rescheduling:
        return simulate(
            self.snapshot,
            self.templates(),
            candidates,
            self.solver_options,
            self._requests,
            virtual=self.virtual,
        )

    def unconsolidatable(self, candidate: Candidate, message: str) -> None:
        for obj in (candidate.node, candidate.claim):
            self.events.publish(obj, "Unconsolidatable", message, dedupe=UNCONSOLIDATABLE_DEDUPE)

    def blocked(self, candidate: Candidate, message: str) -> None:
        for obj in (candidate.node, candidate.claim):
            self.events.publish(obj, "DisruptionBlocked", message)


@dataclass(frozen=True)
class Eligibility:
    """A method's answer for one candidate: whether to consider it, and the
    ``Unconsolidatable`` message explaining a refusal a user can act on (an event)."""

    eligible: bool
    unconsolidatable: str | None = None


_NO = Eligibility(False)


class Method(Protocol):
    #: The budget reason: ``Empty``, ``Drifted`` or ``Underutilized``.
    reason: str
    #: ``graceful`` or ``eventual``.
    disruption_class: str
    #: Whether the command waits 15 s and is validated again before it starts.
    validated: bool

    def word(self, candidate: Candidate | None) -> str: ...

    def eligibility(self, candidate: Candidate) -> Eligibility:
        """Whether to consider ``candidate`` (a function of the candidate alone)."""
        ...

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None: ...


def _disabled(candidate: Candidate) -> Eligibility:
    return Eligibility(False, f'NodePool "{candidate.pool.name}" has consolidation disabled')


def consolidate_after(candidate: Candidate) -> timedelta | None:
    try:
        return parse_optional_duration(candidate.pool.spec.disruption.consolidate_after)
    except DurationError:
        return None


#: The kinds consolidation decisions depend on: a change to any of them makes the cluster
#: "unconsolidated" again.
CONSOLIDATION_KINDS: tuple[type[KubeObject], ...] = (Node, NodeClaim, Pod, NodePool)


def fingerprint(snapshot: Snapshot) -> int:
    """A counter of the changes consolidation decisions depend on (not events)."""
    state = snapshot.state
    return sum(state.kind_version(kind) for kind in CONSOLIDATION_KINDS)


class _Memo:
    """Karpenter's "consolidated" memo: skip a search whose inputs have not changed.

    Karpenter leaves a search that budgets held back unmarked, so it runs again on every pass
    while nothing changes; that repeats the same trial scheduling (the costliest thing an idle
    cluster does) for the same answer. Here such a search is remembered with the candidates it
    was allowed to try: it is skipped while nothing changed and the budgets allow the same
    candidates, and runs again as soon as either differs (a budget schedule opening, a node
    leaving), which is when Karpenter's could find something new.
    """

    def __init__(self) -> None:
        #: (fingerprint, when, the candidates tried when budgets held some back, else None)
        self._state: tuple[int, datetime, tuple[str, ...] | None] | None = None

    def fresh(self, context: Context, tried: Sequence[Candidate] | None = None) -> bool:
        """Whether nothing changed since the search was marked (with ``tried``: since a search
        held back by budgets tried exactly these candidates)."""
        if self._state is None:
            return False
        digest, at, marked = self._state
        if digest != fingerprint(context.snapshot) or context.now - at >= CONSOLIDATED_TTL:
            return False
        return marked is None or (tried is not None and marked == _names(tried))

    def mark(self, context: Context, tried: Sequence[Candidate] | None = None) -> None:
        """Remember a search that found nothing (``tried``: the candidates budgets allowed,
        when they held others back)."""
        names = None if tried is None else _names(tried)
        self._state = (fingerprint(context.snapshot), context.now, names)


def _names(candidates: Sequence[Candidate]) -> tuple[str, ...]:
    return tuple(candidate.node.name for candidate in candidates)


# -- emptiness --------------------------------------------------------------------------------


class Emptiness:
    """Delete every empty, consolidatable node the budgets allow, in one command."""

    reason = REASON_EMPTY
    disruption_class = GRACEFUL
    validated = True

    def __init__(self, holds_buffer: Callable[[str], bool] | None = None) -> None:
        self.memo = _Memo()
        #: Whether a node holds CapacityBuffer virtual pods: such a node is not empty.
        self.holds_buffer = holds_buffer

    def _holds_buffer(self, candidate: Candidate) -> bool:
        check = self.holds_buffer
        return check is not None and (check(candidate.name) or check(candidate.claim.name))

    def word(self, candidate: Candidate | None) -> str:
        # Karpenter's WhenEmpty pools removed empty nodes through "emptiness"; pools that
        # consolidate underutilized nodes remove them as part of consolidation.
        if (
            candidate is not None
            and candidate.pool.spec.disruption.consolidation_policy == WHEN_EMPTY
        ):
            return "Emptiness"
        return "Consolidation"

    def eligibility(self, candidate: Candidate) -> Eligibility:
        if candidate.pool.spec.replicas is not None:
            return _NO
        if consolidate_after(candidate) is None:
            return _disabled(candidate)
        return Eligibility(
            candidate.is_empty()
            and is_true(candidate.claim.status.conditions, CONDITION_CONSOLIDATABLE)
        )

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        if self.memo.fresh(context):
            return None
        chosen: list[Candidate] = []
        constrained = False
        for candidate in sorted(candidates, key=lambda c: -c.savings_ratio()):
            if not candidate.is_empty() or self._holds_buffer(candidate):
                continue
            if budgets.get(candidate.pool.name, 0) <= 0:
                constrained = True
                continue
            chosen.append(candidate)
            budgets[candidate.pool.name] -= 1
        if not chosen:
            if not constrained:
                self.memo.mark(context)
            return None
        return Command(self, chosen)


# -- drift ------------------------------------------------------------------------------------


class Drift:
    """Replace drifted nodes one at a time, oldest drift first, empty nodes before others."""

    reason = REASON_DRIFTED
    disruption_class = EVENTUAL
    validated = False

    def word(self, candidate: Candidate | None) -> str:
        return "Drift"

    def eligibility(self, candidate: Candidate) -> Eligibility:
        # Static pools' drifted nodes are StaticDrift's.
        return Eligibility(
            candidate.pool.spec.replicas is None
            and is_true(candidate.claim.status.conditions, CONDITION_DRIFTED)
        )

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        def drifted_at(candidate: Candidate) -> datetime:
            condition = find_condition(candidate.claim.status.conditions, CONDITION_DRIFTED)
            return (condition.last_transition_time if condition else None) or context.now

        ordered = sorted(candidates, key=lambda c: (bool(c.reschedulable), drifted_at(c), c.name))
        for candidate in ordered:
            if budgets.get(candidate.pool.name, 0) <= 0:
                continue
            rescheduling = context.simulate([candidate])
            if not rescheduling.all_scheduled():
                context.blocked(candidate, _sentence(rescheduling.error_text()))
                continue
            return Command(self, [candidate], list(rescheduling.result.new_node_claims))
        return None


# -- static drift -----------------------------------------------------------------------------


class StaticDrift:
    """Replace drifted nodes of static NodePools, each by a fresh NodeClaim of its pool.

    As Karpenter's: no rescheduling simulation (a static pool's size does not follow its
    pods); a pool still scaling down waits; as many as its Drifted budget allows and its
    ``limits.nodes`` leaves room for, one command each, all started in the same pass.
    """

    reason = REASON_DRIFTED
    disruption_class = EVENTUAL
    validated = False

    def word(self, candidate: Candidate | None) -> str:
        return "Drift"

    def eligibility(self, candidate: Candidate) -> Eligibility:
        return Eligibility(
            candidate.pool.spec.replicas is not None
            and is_true(candidate.claim.status.conditions, CONDITION_DRIFTED)
        )

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        commands = self.commands(context, budgets, candidates)
        return commands[0] if commands else None

    def commands(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> list[Command]:
        by_pool: dict[str, list[Candidate]] = {}
        for candidate in sorted(candidates, key=lambda c: c.name):
            by_pool.setdefault(candidate.pool.name, []).append(candidate)
        commands: list[Command] = []
        for name, members in sorted(by_pool.items()):
            pool = members[0].pool
            allowed = budgets.get(name, 0)
            if allowed <= 0:
                continue
            counts = static_node_counts(context.snapshot.state, name)
            if counts.active + counts.pending_disruption > (pool.spec.replicas or 0):
                continue  # scaling down first
            room = nodes_allowed(pool, counts, min(allowed, len(members)))
            for candidate in members[:room]:
                commands.append(Command(self, [candidate], [static_replacement(pool)]))
        return commands


# -- consolidation ----------------------------------------------------------------------------


class _Consolidation:
    reason = REASON_UNDERUTILIZED
    disruption_class = GRACEFUL
    validated = True

    def __init__(self) -> None:
        self.memo = _Memo()

    def word(self, candidate: Candidate | None) -> str:
        return "Consolidation"

    def eligibility(self, candidate: Candidate) -> Eligibility:
        if candidate.pool.spec.replicas is not None:
            return _NO
        labels = candidate.node.metadata.labels
        if candidate.instance_type is None:
            return Eligibility(
                False, f'Instance Type "{labels.get(INSTANCE_TYPE_LABEL, "")}" not found'
            )
        for key in (CAPACITY_TYPE_LABEL, "topology.kubernetes.io/zone"):
            if key not in labels:
                return Eligibility(False, f'Node does not have label "{key}"')
        if consolidate_after(candidate) is None:
            return _disabled(candidate)
        if candidate.is_empty():
            return _NO
        if candidate.pool.spec.disruption.consolidation_policy == WHEN_EMPTY:
            return Eligibility(
                False,
                f'NodePool "{candidate.pool.name}" has consolidation policy WhenEmpty, '
                "but node is not empty",
            )
        return Eligibility(is_true(candidate.claim.status.conditions, CONDITION_CONSOLIDATABLE))

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        raise NotImplementedError

    @staticmethod
    def order(candidates: Sequence[Candidate]) -> list[Candidate]:
        return sorted(candidates, key=lambda c: (-c.savings_ratio(), c.name))

    def consolidation(self, context: Context, candidates: Sequence[Candidate]) -> Command | None:
        """Karpenter's ``computeConsolidation``: delete, replace with one cheaper, or nothing."""
        single = candidates[0] if len(candidates) == 1 else None
        rescheduling = context.simulate(candidates)
        if not rescheduling.all_scheduled():
            if single is not None:
                context.unconsolidatable(single, _sentence(rescheduling.error_text()))
            return None
        new = rescheduling.result.new_node_claims
        if not new:
            return Command(self, list(candidates))
        if len(new) != 1:
            if single is not None:
                context.unconsolidatable(
                    single, f"Can't remove without creating {len(new)} candidates"
                )
            return None
        price = sum(c.price for c in candidates)
        replacement = _order_by_price(new[0])
        capacity = replacement.requirements.get(CAPACITY_TYPE_LABEL)
        all_spot = all(c.capacity_type == CAPACITY_TYPE_SPOT for c in candidates)
        if all_spot and (capacity is None or capacity.has(CAPACITY_TYPE_SPOT)):
            return self._spot_to_spot(context, candidates, replacement, price)
        cheaper = _cheaper(replacement, price)
        if cheaper is None:
            if single is not None:
                context.unconsolidatable(single, "Can't replace with a cheaper node")
            return None
        capacity = cheaper.requirements.get(CAPACITY_TYPE_LABEL)
        if capacity is None or (
            capacity.has(CAPACITY_TYPE_SPOT) and capacity.has(CAPACITY_TYPE_ON_DEMAND)
        ):
            # Priced assuming spot: never let an on-demand launch make it dearer. When no
            # option has spot capacity now (an offering that just failed to launch, say),
            # the node is left alone rather than replaced by a launch bound to fail, which
            # would be tried again at once, forever.
            cheaper = _require_capacity_type(cheaper, CAPACITY_TYPE_SPOT)
            if not cheaper.instance_types or not _satisfies_min_values(cheaper):
                if single is not None:
                    context.unconsolidatable(single, "Can't replace with a cheaper node")
                return None
        command = Command(self, list(candidates), [cheaper])
        context.candidate_events(command)
        return command

    def _spot_to_spot(
        self,
        context: Context,
        candidates: Sequence[Candidate],
        replacement: NewNodeClaim,
        price: float,
    ) -> Command | None:
        single = candidates[0] if len(candidates) == 1 else None
        if not context.spot_to_spot:
            if single is not None:
                context.unconsolidatable(
                    single,
                    "SpotToSpotConsolidation is disabled, can't replace a spot node with a "
                    "spot node",
                )
            return None
        spot = _require_capacity_type(replacement, CAPACITY_TYPE_SPOT)
        cheaper = _cheaper(spot, price)
        if cheaper is None:
            if single is not None:
                context.unconsolidatable(single, "Can't replace with a cheaper node")
            return None
        if single is None:
            command = Command(self, list(candidates), [cheaper])
            context.candidate_events(command)
            return command
        if len(cheaper.instance_types) < SPOT_TO_SPOT_MIN_TYPES:
            context.unconsolidatable(
                single,
                f"SpotToSpotConsolidation requires {SPOT_TO_SPOT_MIN_TYPES} cheaper instance "
                "type options than the current candidate to consolidate, got "
                f"{len(cheaper.instance_types)}",
            )
            return None
        keep = max(SPOT_TO_SPOT_MIN_TYPES, _min_values_needed(cheaper))
        command = Command(
            self, list(candidates), [_with_types(cheaper, cheaper.instance_types[:keep])]
        )
        context.candidate_events(command)
        return command


class MultiNodeConsolidation(_Consolidation):
    """Find the largest prefix of candidates (at least two) that one command can remove."""

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        if self.memo.fresh(context):
            return None
        allowed: list[Candidate] = []
        constrained = False
        for candidate in self.order(candidates):
            if budgets.get(candidate.pool.name, 0) <= 0:
                constrained = True
                continue
            allowed.append(candidate)
            budgets[candidate.pool.name] -= 1
        tried = allowed[:MULTI_NODE_MAX_CANDIDATES]
        if constrained and self.memo.fresh(context, tried):
            return None
        command = self._first_n(context, tried)
        if command is None:
            self.memo.mark(context, tried if constrained else None)
        return command

    def _first_n(self, context: Context, candidates: list[Candidate]) -> Command | None:
        if len(candidates) < 2:
            return None
        low, high = 1, len(candidates) - 1
        best: Command | None = None
        best_scores: dict[str, Score] = {}
        #: The last move Balanced scoring turned down, told once when nothing is found.
        rejected: tuple[Command, dict[str, Score]] | None = None
        while low <= high:
            middle = (low + high) // 2
            batch = candidates[: middle + 1]
            command = self.consolidation(context, batch)
            if command is not None and command.replacements:
                narrowed = _filter_out_same_type(command.replacements[0], batch)
                command = replace(command, replacements=[narrowed]) if narrowed else None
            if command is not None:
                approved, scores = context.balanced.evaluate(command.candidates, command.savings())
                if not approved:
                    rejected = (command, scores)
                    command = None
                else:
                    best_scores = scores
            if command is not None:
                best = command
                low = middle + 1
            else:
                high = middle - 1
        if best is not None:
            context.balanced.multi_node_outcome(best.candidates, best_scores, approved=True)
        elif rejected is not None:
            context.balanced.multi_node_outcome(rejected[0].candidates, rejected[1], approved=False)
        return best


class SingleNodeConsolidation(_Consolidation):
    """Try candidates one by one (NodePools interleaved); the first that works wins."""

    def compute(
        self, context: Context, budgets: dict[str, int], candidates: list[Candidate]
    ) -> Command | None:
        if self.memo.fresh(context):
            return None
        ordered = _interleave(self.order(candidates))
        tried = [c for c in ordered if budgets.get(c.pool.name, 0) > 0]
        constrained = len(tried) < len(ordered)
        if constrained and self.memo.fresh(context, tried):
            return None
        for candidate in tried:
            # A Balanced pool's node whose outright deletion would not pass is not tried.
            if not context.balanced.can_pass(candidate):
                continue
            command = self.consolidation(context, [candidate])
            if command is not None and context.balanced.approve(
                command.candidates, command.savings()
            ):
                return command
        self.memo.mark(context, tried if constrained else None)
        return None


# -- helpers ----------------------------------------------------------------------------------


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _interleave(candidates: list[Candidate]) -> list[Candidate]:
    """Round-robin across NodePools, keeping each pool's own order."""
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_pool.setdefault(candidate.pool.name, []).append(candidate)
    result: list[Candidate] = []
    longest = max((len(v) for v in by_pool.values()), default=0)
    for index in range(longest):
        for pool in sorted(by_pool):
            if index < len(by_pool[pool]):
                result.append(by_pool[pool][index])
    return result


def _compatible_offerings(instance_type: InstanceType, requirements: Requirements) -> list[float]:
    return [o.price for o in instance_type.offerings if o.available and o.matches(requirements)]


def worst_launch_price(instance_type: InstanceType, requirements: Requirements) -> float:
    """The dearest price a launch could pay, for the first capacity type the claim could
    get (reserved, then spot, then on-demand)."""
    for capacity_type in (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND):
        prices = [
            o.price
            for o in instance_type.offerings
            if o.available and o.capacity_type == capacity_type and o.matches(requirements)
        ]
        if prices:
            return max(prices)
    return math.inf


def _order_by_price(claim: NewNodeClaim) -> NewNodeClaim:
    def cheapest(it: InstanceType) -> float:
        return min(_compatible_offerings(it, claim.requirements), default=math.inf)

    return replace(
        claim, instance_types=sorted(claim.instance_types, key=lambda it: (cheapest(it), it.name))
    )


def _with_types(claim: NewNodeClaim, types: Sequence[InstanceType]) -> NewNodeClaim:
    names = frozenset(t.name for t in types)
    requirements = claim.requirements.add(Requirement(INSTANCE_TYPE_LABEL, False, names))
    return replace(claim, instance_types=list(types), requirements=requirements)


def _require_capacity_type(claim: NewNodeClaim, capacity_type: str) -> NewNodeClaim:
    requirements = claim.requirements.add(
        Requirement(CAPACITY_TYPE_LABEL, False, frozenset({capacity_type}))
    )
    types = [it for it in claim.instance_types if _compatible_offerings(it, requirements)]
    return _with_types(replace(claim, requirements=requirements), types)


def _min_values_needed(claim: NewNodeClaim) -> int:
    return max((r.min_values or 0 for r in claim.requirements.values()), default=0)


def _satisfies_min_values(claim: NewNodeClaim) -> bool:
    for key, requirement in claim.requirements.items():
        if not requirement.min_values:
            continue
        seen: set[str] = set()
        for instance_type in claim.instance_types:
            offered = instance_type.requirements.get(key)
            if offered is not None and not offered.complement:
                seen |= {v for v in offered.values if requirement.has(v)}
        if len(seen) < requirement.min_values:
            return False
    return True


def _cheaper(claim: NewNodeClaim, price: float) -> NewNodeClaim | None:
    """The claim with only the types whose worst launch price is below ``price``."""
    types = [
        it for it in claim.instance_types if worst_launch_price(it, claim.requirements) < price
    ]
    if not types:
        return None
    narrowed = _with_types(claim, types)
    return narrowed if _satisfies_min_values(narrowed) else None


def _filter_out_same_type(
    claim: NewNodeClaim, candidates: Sequence[Candidate]
) -> NewNodeClaim | None:
    """Karpenter's ``filterOutSameInstanceType``: merging nodes into one of a type already
    among them is just deleting the others, so only strictly cheaper types stay."""
    prices: dict[str, float] = {}
    for candidate in candidates:
        if candidate.instance_type is None:
            continue
        labels = Requirements.from_labels(candidate.node.metadata.labels)
        offered = [o.price for o in candidate.instance_type.offerings if o.matches(labels)]
        if offered:
            name = candidate.instance_type.name
            prices[name] = min(prices.get(name, math.inf), *offered)
    ceiling = min(
        (prices[it.name] for it in claim.instance_types if it.name in prices), default=math.inf
    )
    if ceiling == math.inf:
        return claim
    return _cheaper(claim, ceiling)
