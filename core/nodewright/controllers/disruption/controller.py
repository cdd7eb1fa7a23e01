"""The disruption loop (Karpenter's ``disruption`` singleton).

Every 10 s (at once after an action) it releases nodes no command holds, then tries the
methods in order and stops at the first that yields a command. Emptiness and consolidation
commands wait 15 s and are checked again against the cluster as it is then (the candidates
are still candidates, budgets still allow them, the simulation still gives the same shape)
before the orchestration queue starts them; drift commands start at once.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from nodewright import metrics
from nodewright.api.apps import DaemonSet
from nodewright.clock import Clock, Poll
from nodewright.cluster import Cluster
from nodewright.controllers.capacitybuffer.virtualpods import VirtualPods
from nodewright.controllers.catalog import Catalog
from nodewright.controllers.disruption.budgets import allowed_disruptions
from nodewright.controllers.disruption.candidates import (
    GRACEFUL,
    Candidate,
    Snapshot,
    pools_and_types,
)
from nodewright.controllers.disruption.conditions import NodeClaimDisruptionConditions
from nodewright.controllers.disruption.consolidationstate import ConsolidationState
from nodewright.controllers.disruption.drift import Drift
from nodewright.controllers.disruption.emptiness import Emptiness
from nodewright.controllers.disruption.methods import Command, Context, Method
from nodewright.controllers.disruption.multinodeconsolidation import MultiNodeConsolidation
from nodewright.controllers.disruption.queue import OrchestrationQueue
from nodewright.controllers.disruption.rescheduling import PodRequests
from nodewright.controllers.disruption.singlenodeconsolidation import SingleNodeConsolidation
from nodewright.controllers.disruption.staticdrift import StaticDrift
from nodewright.controllers.disruption.trialmemo import TrialMemo
from nodewright.controllers.disruption.verdicts import NodeVerdicts
from nodewright.controllers.events import KARPENTER_DEDUPE, EventRecorder, identity
from nodewright.controllers.nodeclaim.history import NodeHistory
from nodewright.controllers.nodepool.templates import DaemonGroupMemo
from nodewright.controllers.options import Options, solver_options
from nodewright.controllers.passinputs import PassInputs, pass_inputs
from nodewright.controllers.state.cluster import NodeCache
from nodewright.controllers.state.nominations import Nominations
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.solver.claimtemplates import ClaimTemplates

log = logging.getLogger("nodewright.disruption")

#: How often the loop looks for something to disrupt when nothing happens.
POLLING_PERIOD = timedelta(seconds=10)
#: Emptiness and consolidation commands wait this long before they are validated.
VALIDATION_DELAY = timedelta(seconds=15)
#: A NodePool whose budget blocks a reason says so at most this often.
BUDGET_EVENT_DEDUPE = timedelta(minutes=1)


@dataclass
class PendingCommand:
    command: Command
    due: datetime


class DisruptionController:
    name = "disruption"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        events: EventRecorder,
        *,
        options: Options,
        virtual_pods: VirtualPods | None = None,
        nominations: Nominations | None = None,
    ) -> None:
        self._cluster = cluster
        #: Nodes a provisioning pass counts on for pending pods: not candidates meanwhile.
        self.nominations = nominations or Nominations(clock, options.batch_max_duration)
        self._virtual_pods = virtual_pods
        self._catalog = catalog
        self._clock = clock
        self._events = events
        self._options = options
        self._host = host
        self.history = NodeHistory()
        self.conditions = NodeClaimDisruptionConditions(cluster, host, catalog, clock, self.history)
        self.queue = OrchestrationQueue(
            cluster, host, clock, events, self.history, nominations=self.nominations
        )
        self.methods: list[Method] = [
            Emptiness(virtual_pods.holds_buffer if virtual_pods is not None else None),
            StaticDrift(),
            Drift(),
            MultiNodeConsolidation(),
            SingleNodeConsolidation(),
        ]
        self.pending: PendingCommand | None = None
        #: Every node's verdict, kept from changes.
        self.verdicts = NodeVerdicts(cluster.state, self.methods, self.nominations)
        #: What the consolidated memos compare: changes that can change a search's answer.
        self._consolidation_state = ConsolidationState(cluster.state)
        #: Existing nodes and their pods as the solver saw them, kept until they change.
        self._nodes = NodeCache()
        #: Pods as the solver takes them, kept until they change.
        self._requests = PodRequests()
        #: NodePools as trial solves take them, kept while they stay the same.
        self._claim_templates = ClaimTemplates()
        self._daemon_groups = DaemonGroupMemo()
        #: Simulation answers kept while what they read stays the same.
        self._trial_memo = TrialMemo()
        #: ``karpenter_nodepools_allowed_disruptions``: (nodepool, reason) → allowed.
        self.allowed_disruptions: dict[tuple[str, str], int] = {}
        #: Simulations run and the pods they moved off their candidates, over every pass
        #: (answered from memory or solved): work a simulation's limits count, never timed.
        self.simulations = 0
        self.pods_moved = 0
        #: ``karpenter_voluntary_disruption_decisions_total``: (decision, reason) → count.
        self.decisions: dict[tuple[str, str], int] = {}
        #: What the last pass read, when it found no candidate and nothing queued: until any
        #: of it changes, a pass only repeats the events that fall due (:meth:`_idle_pass`).
        self._idle: tuple[PassInputs, int] | None = None

    # -- the loop -----------------------------------------------------------------------------

    def reconcile(self) -> timedelta | None:
        queue_wake = self.queue.reconcile()
        now = self._clock.now()
        idle, self._idle = self._idle, None
        if (
            idle is not None
            and self.pending is None
            and queue_wake is None
            and idle == self._inputs()
            and not self.verdicts.expiring_due(now)
        ):
            return self._idle_pass(now)
        if self.pending is not None:
            if now < self.pending.due:
                return _sooner_than_queue(self.pending.due - now, queue_wake)
            pending, self.pending = self.pending, None
            started = self._validate_and_start(pending.command)
            return timedelta(0) if started else _sooner_than_queue(POLLING_PERIOD, queue_wake)
        snapshot = self._snapshot()
        stale = self.queue.stale(self.verdicts.marked())
        if stale:
            _ = snapshot.view  # the pass reads the cluster as it was before the release
            self.queue.release_stale(stale)
        context = self._context(snapshot)
        queued = self.queue.provider_ids()
        published: set[str] = set()
        considered = False
        for index, method in enumerate(self.methods):
            if method.disruption_class not in published:
                published.add(method.disruption_class)
                self.verdicts.publish_blocked(method.disruption_class, now, queued, self._events)
            self.verdicts.publish_unconsolidatable(index, now, queued, self._events)
            candidates = self.verdicts.eligible(index, queued)
            metrics.disruption_eligible_nodes.labels(method.reason.lower()).set(len(candidates))
            if not candidates:
                continue
            considered = True
            budgets = self.budgets(snapshot, method.reason)
            if isinstance(method, StaticDrift):
                # Karpenter starts every static drift command of a pass, not only the first.
                commands = method.commands(context, budgets, candidates)
                for each in commands:
                    self._start(each)
                if commands:
                    return timedelta(0)
                continue
            command = method.compute(context, budgets, candidates)
            if command is None or not command.candidates:
                continue
            if method.validated:
                log.debug("Validating %s in %s", command.describe(), VALIDATION_DELAY)
                self.pending = PendingCommand(command, now + VALIDATION_DELAY)
                return _sooner_than_queue(VALIDATION_DELAY, queue_wake)
            self._start(command)
            return timedelta(0)
        if considered or queue_wake is not None:
            return _sooner_than_queue(POLLING_PERIOD, queue_wake)
        # No candidate: until the cluster changes, only a do-not-disrupt duration running
        # out or an event falling due to be repeated can change what a pass does.
        if not self.queue.commands:
            self._idle = self._inputs()
        return self._idle_wait(now)

    def _idle_wait(self, now: datetime) -> Poll:
        due = self.verdicts.next_due(now)
        return Poll(POLLING_PERIOD, None if due is None else max(due - now, POLLING_PERIOD))

    def _inputs(self) -> tuple[PassInputs, int]:
        """What a pass reads, and the nominations (a node nominated anew is blocked, which a
        pass tells in an event)."""
        inputs = pass_inputs(self._cluster, self._catalog, self._host, self._virtual_pods)
        return inputs, self.nominations.version

    def _idle_pass(self, now: datetime) -> Poll:
        """A pass after one that found no candidate, with nothing it reads changed since and
        no do-not-disrupt duration run out: its verdicts and candidates are the same, so it
        publishes what events fall due, in the order a whole pass does, and waits again."""
        queued = self.queue.provider_ids()
        published: set[str] = set()
        for index, method in enumerate(self.methods):
            if method.disruption_class not in published:
                published.add(method.disruption_class)
                self.verdicts.publish_blocked(method.disruption_class, now, queued, self._events)
            self.verdicts.publish_unconsolidatable(index, now, queued, self._events)
        self._idle = self._inputs()
        return self._idle_wait(now)

    # -- budgets ------------------------------------------------------------------------------

    def budgets(self, snapshot: Snapshot, reason: str) -> dict[str, int]:
        """Disruptions each NodePool allows now for ``reason``, less nodes already going."""
        total, disrupting = self.verdicts.budget_counts(self.queue.provider_ids())
        result: dict[str, int] = {}
        for name, pool in snapshot.pools.items():
            allowed = allowed_disruptions(pool, total.get(name, 0), reason, snapshot.now)
            result[name] = max(allowed - disrupting.get(name, 0), 0)
            self.allowed_disruptions[(name, reason)] = allowed
            metrics.nodepools_allowed_disruptions.labels(name, reason).set(allowed)
            metrics.nodepools_nodes_consuming_budgets.labels(name, reason).set(
                disrupting.get(name, 0)
            )
            if total.get(name, 0) and allowed == 0:
                self._events.publish(
                    pool,
                    "DisruptionBlocked",
                    f"No allowed disruptions for disruption reason {reason} due to blocking budget",
                    dedupe=BUDGET_EVENT_DEDUPE,
                    dedupe_on=(identity(pool), reason),
                )
        return result

    # -- validation and start -----------------------------------------------------------------

    def _validate_and_start(self, command: Command) -> bool:
        snapshot = self._snapshot()
        context = self._context(snapshot)
        method = command.method
        index = self.methods.index(method)
        queued = self.queue.provider_ids()
        self.verdicts.publish_unconsolidatable(index, snapshot.now, queued, self._events)
        fresh = {c.name: c for c in self.verdicts.eligible(index, queued)}
        still = [fresh[c.name] for c in command.candidates if c.name in fresh]
        budgets = self.budgets(snapshot, method.reason)
        if isinstance(method, Emptiness):
            valid = []
            for candidate in still:
                if budgets.get(candidate.pool.name, 0) > 0:
                    budgets[candidate.pool.name] -= 1
                    valid.append(candidate)
            if not valid:
                log.info(
                    "Abandoning empty node consolidation attempt due to pod churn, command is "
                    "no longer valid"
                )
                return False
            return self._start(Command(method, valid))
        reason = self._rejection(context, command, still, budgets)
        if reason is not None:
            for candidate in command.candidates:
                message = (
                    f"Consolidation rejected: {command.describe_for(candidate)}, reason: {reason} "
                    f"(savings: ${command.savings():.2f})"
                )
                for obj in (candidate.node, candidate.claim):
                    self._events.publish(
                        obj,
                        "ConsolidationRejected",
                        message,
                        dedupe=KARPENTER_DEDUPE,
                        dedupe_on=(identity(obj), command.describe_for(candidate), reason),
                    )
            log.info("Consolidation %s rejected: %s", command.describe(), reason)
            return False
        return self._start(dataclasses.replace(command, candidates=still))

    def _rejection(
        self,
        context: Context,
        command: Command,
        still: list[Candidate],
        budgets: dict[str, int],
    ) -> str | None:
        """Why a consolidation command no longer holds (``churn``, ``budget``, ``scheduling``)."""
        if len(still) != len(command.candidates):
            return "churn"
        for candidate in still:
            if budgets.get(candidate.pool.name, 0) <= 0:
                return "budget"
            budgets[candidate.pool.name] -= 1
        rescheduling = context.simulate_alone(still)
        if not rescheduling.all_scheduled():
            return "scheduling"
        new = rescheduling.result.new_node_claims
        if len(new) != len(command.replacements) or len(new) > 1:
            return "scheduling"
        if new:
            wanted = {it.name for it in command.replacements[0].instance_types}
            offered = {it.name for it in new[0].instance_types}
            if not wanted <= offered:
                return "scheduling"
        return None

    def _start(self, command: Command) -> bool:
        started = self.queue.start(command)
        if started:
            key = (command.decision.lower(), command.reason)
            self.decisions[key] = self.decisions.get(key, 0) + 1
            metrics.disruption_decisions.labels(
                command.decision.lower(), command.reason.lower(), _consolidation_type(command)
            ).inc()
            self.queue.reconcile()
        return started

    # -- helpers ------------------------------------------------------------------------------

    def resync(self) -> None:
        """Work every node's verdict out from scratch on the next pass."""
        self.verdicts.resync()

    def refresh(self) -> Snapshot:
        """The cluster as a pass would see it now, with node verdicts brought up to date."""
        return self._snapshot()

    def _snapshot(self) -> Snapshot:
        """The pass's view of the cluster, after bringing node verdicts up to date."""
        state = self._cluster.state
        pools, types = pools_and_types(state, self._catalog)
        now = self._clock.now()
        self.verdicts.refresh(now, pools, types)
        return Snapshot(
            now,
            state,
            pools=pools,
            instance_types=types,
            pdbs=self.verdicts.pdbs.limits,
            nodes=self._nodes,
        )

    def _context(self, snapshot: Snapshot) -> Context:
        return Context(
            snapshot,
            self._events,
            list(self._cluster.state.sorted(DaemonSet)),
            solver_options(self._options, self._host, reserved_offering_mode="Fallback"),
            self._options.spot_to_spot_consolidation,
            requests=self._requests,
            virtual=self._virtual_pods.pods() if self._virtual_pods is not None else (),
            candidates=lambda: self.verdicts.candidates(GRACEFUL, self.queue.provider_ids()),
            claim_templates=self._claim_templates,
            daemon_groups=self._daemon_groups,
            trial_memo=self._trial_memo,
            clock=self._clock,
            consolidation_state=self._consolidation_state.refresh(),
            count_moved=self._count_moved,
        )

    def _count_moved(self, pods: int) -> None:
        self.simulations += 1
        self.pods_moved += pods


def _consolidation_type(command: Command) -> str:
    """Karpenter's ``consolidation_type`` label: ``empty``, ``single``, ``multi`` or ``""``."""
    if isinstance(command.method, Emptiness):
        return "empty"
    if isinstance(command.method, MultiNodeConsolidation):
        return "multi"
    if isinstance(command.method, SingleNodeConsolidation):
        return "single"
    return ""


def _sooner_than_queue(wait: timedelta, queue_wake: timedelta | None) -> timedelta:
    """``wait``, or the orchestration queue's wake-up when that comes sooner."""
    return wait if queue_wake is None else min(wait, queue_wake)
