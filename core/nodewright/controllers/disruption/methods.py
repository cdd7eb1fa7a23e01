"""The disruption methods, tried in Karpenter's order each loop until one acts: emptiness
(``emptiness``), static drift (``staticdrift``), drift (``drift``), multi-node consolidation
(``multinodeconsolidation``), single-node consolidation (``singlenodeconsolidation``), one
module each, as Karpenter's.

Each turns candidates into at most one :class:`Command`: the candidates to delete and the
replacements to launch first. Consolidation keeps a command only when it deletes, or
replaces with exactly one strictly cheaper NodeClaim. This module holds what they share: the
:class:`Method` protocol, the :class:`Command`, and the :class:`Context` of one loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from nodewright.api.apps import DaemonSet
from nodewright.api.core import Pod
from nodewright.api.duration import DurationError, parse_optional_duration
from nodewright.clock import Clock, SimulatedClock
from nodewright.controllers.disruption.balanced import BalancedEvaluator
from nodewright.controllers.disruption.candidates import Candidate, Snapshot
from nodewright.controllers.disruption.pricing import compatible_prices
from nodewright.controllers.disruption.rescheduling import (
    PodRequests,
    Rescheduling,
    node_pool_templates,
    simulate,
)
from nodewright.controllers.disruption.trialmemo import TrialMemo
from nodewright.controllers.disruption.trials import Trials
from nodewright.controllers.events import KARPENTER_DEDUPE, EventRecorder, identity
from nodewright.controllers.nodepool.templates import DaemonGroupMemo
from nodewright.scheduling.model import NewNodeClaim, NodePoolTemplate, SolverOptions
from nodewright.scheduling.solver.claimtemplates import ClaimTemplates

WHEN_EMPTY = "WhenEmpty"
#: Unconsolidatable events repeat at most this often.
UNCONSOLIDATABLE_DEDUPE = timedelta(minutes=15)


@dataclass
class Command:
    """Delete ``candidates``, after launching ``replacements`` and waiting for them."""

    method: Method
    candidates: list[Candidate]
    replacements: list[NewNodeClaim] = field(default_factory=list)
    #: Existing nodes the simulation planned real pods onto (the candidates' and pending
    #: ones), by name, with those pods' keys: starting the command nominates them.
    destinations: dict[str, list[str]] = field(default_factory=dict)

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
                cost -= min(compatible_prices(first, replacement.requirements), default=0.0)
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
        claim_templates: ClaimTemplates | None = None,
        daemon_groups: DaemonGroupMemo | None = None,
        trial_memo: TrialMemo | None = None,
        clock: Clock | None = None,
        consolidation_state: int = 0,
        count_moved: Callable[[int], None] | None = None,
    ) -> None:
        self.snapshot = snapshot
        #: Told how many pods each simulation moves (work a simulation's limits count).
        self._count_moved = count_moved
        #: Karpenter's consolidation state as of this pass (:mod:`.consolidationstate`).
        self.consolidation_state = consolidation_state
        #: What consolidation's time budgets are measured on (the snapshot's instant, standing
        #: still, when none is given).
        self.clock: Clock = clock if clock is not None else SimulatedClock(snapshot.now)
        #: CapacityBuffer virtual pods: pending pods every simulation must place too.
        self.virtual = virtual
        #: Every consolidation candidate of the pass, whichever method may take it.
        self._all_candidates = candidates
        self.events = events
        self.solver_options = solver_options
        self.spot_to_spot = spot_to_spot
        self._daemonsets = daemonsets
        self._requests = requests if requests is not None else PodRequests()
        self._templates: list[NodePoolTemplate] | None = None
        #: NodePools made into NodeClaimTemplates, kept by the controller across passes.
        self._claim_templates = claim_templates
        #: Daemon pods grouped over each catalog, kept by the controller across passes.
        self._daemon_groups = daemon_groups
        #: Simulation answers kept by the controller across passes (:mod:`.trialmemo`).
        self._trial_memo = trial_memo
        self._trials: Trials | None = None

    @property
    def now(self) -> datetime:
        return self.snapshot.now

    def templates(self) -> list[NodePoolTemplate]:
        if self._templates is None:
            self._templates = node_pool_templates(
                self.snapshot,
                self._daemonsets,
                self.solver_options.well_known_labels,
                self.solver_options.dra,
                self._daemon_groups,
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
                self.events.publish(
                    obj,
                    "ConsolidationCandidate",
                    message,
                    dedupe=KARPENTER_DEDUPE,
                    dedupe_on=(identity(obj), command.describe_for(candidate)),
                )

    def simulate(self, candidates: Sequence[Candidate], decide: bool = False) -> Rescheduling:
        """What removing ``candidates`` takes: one of this pass's simulations, which share
        everything that does not depend on the candidates (:mod:`.trials`). ``decide``: only
        the decision is wanted (it may stop as soon as the answer is "no")."""
        self._moving(candidates)
        if self._trials is None:
            self._trials = Trials(
                self.snapshot,
                self.templates(),
                self.solver_options,
                self._requests,
                virtual=self.virtual,
                built=self._claim_templates,
                memo=self._trial_memo,
            )
        return self._trials.simulate(candidates, decide)

    def simulate_alone(self, candidates: Sequence[Candidate]) -> Rescheduling:
        """The same, from scratch: for a pass that simulates once (a command's validation)."""
        self._moving(candidates)
        return simulate(
            self.snapshot,
            self.templates(),
            candidates,
            self.solver_options,
            self._requests,
            virtual=self.virtual,
            built=self._claim_templates,
        )

    def destinations(self, rescheduling: Rescheduling) -> dict[str, list[str]]:
        """The existing nodes ``rescheduling`` plans real pods onto, with their keys (virtual
        CapacityBuffer pods left out: they never nominate a node)."""
        virtual = {pod.key for pod in self.virtual}
        planned: dict[str, list[str]] = {}
        for name, landed in sorted(rescheduling.result.existing_nodes.items()):
            keys = [request.key for request in landed if request.key not in virtual]
            if keys:
                planned[name] = keys
        return planned

    def _moving(self, candidates: Sequence[Candidate]) -> None:
        if self._count_moved is not None:
            self._count_moved(sum(len(c.reschedulable) for c in candidates))

    def unconsolidatable(self, candidate: Candidate, message: str) -> None:
        """``Unconsolidatable`` on the Node and its NodeClaim, deduped on each one's UID alone
        as Karpenter does: one a window whatever the message."""
        for obj in (candidate.node, candidate.claim):
            self.events.publish(
                obj,
                "Unconsolidatable",
                message,
                dedupe=UNCONSOLIDATABLE_DEDUPE,
                dedupe_on=(identity(obj),),
            )

    def unconsolidatable_recorded(self, candidate: Candidate) -> bool:
        """Whether an ``Unconsolidatable`` event on the candidate would be recorded now (on
        its Node or its NodeClaim)."""
        return any(
            self.events.would_record(obj, "Unconsolidatable", (identity(obj),))
            for obj in (candidate.node, candidate.claim)
        )

    def unconsolidatable_dropped(self) -> None:
        """What publishing an ``Unconsolidatable`` event the recorder drops does (only its
        housekeeping), for a trial that stopped at its decision instead of wording one."""
        self.events.dropped()

    def blocked(self, candidate: Candidate, message: str) -> None:
        for obj in (candidate.node, candidate.claim):
            self.events.publish(
                obj,
                "DisruptionBlocked",
                message,
                dedupe=KARPENTER_DEDUPE,
                dedupe_on=(identity(obj),),
            )


@dataclass(frozen=True)
class Eligibility:
    """A method's answer for one candidate: whether to consider it, and the
    ``Unconsolidatable`` message explaining a refusal a user can act on (an event)."""

    eligible: bool
    unconsolidatable: str | None = None


INELIGIBLE = Eligibility(False)


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


def consolidation_disabled(candidate: Candidate) -> Eligibility:
    return Eligibility(False, f'NodePool "{candidate.pool.name}" has consolidation disabled')


def consolidate_after(candidate: Candidate) -> timedelta | None:
    try:
        return parse_optional_duration(candidate.pool.spec.disruption.consolidate_after)
    except DurationError:
        return None


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
