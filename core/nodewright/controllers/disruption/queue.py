"""The orchestration queue: carry a disruption command out safely.

Starting a command taints its nodes ``karpenter.sh/disrupted:NoSchedule``, marks their
NodeClaims with the ``DisruptionReason`` condition and creates the replacements. The queue
then waits until every replacement is Initialized and only then deletes the candidates'
NodeClaims (node termination drains them). A replacement that disappears, or a command that
outlives the retry window, is abandoned: the nodes are untainted and stay.

The queue lives in memory, as Karpenter's does; after a restart the controller finds tainted
nodes no command holds and untaints them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from nodewright.api.core import Node, Pod, Taint
from nodewright.api.karpenter import (
    CONDITION_DISRUPTION_REASON,
    CONDITION_INITIALIZED,
    NodeClaim,
    NodePool,
)
from nodewright.api.labels import CAPACITY_TYPE_LABEL, DISRUPTED_TAINT_KEY, INSTANCE_TYPE_LABEL
from nodewright.api.meta import is_true, set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ClusterError, ConflictError, NotFoundError
from nodewright.cluster.objects import mutable
from nodewright.controllers.disruption.candidates import REASON_EMPTY, REASON_UNDERUTILIZED
from nodewright.controllers.disruption.methods import Command
from nodewright.controllers.events import KARPENTER_DEDUPE, EventRecorder, identity
from nodewright.controllers.metrics.disruption import record_disrupted, snake_case
from nodewright.controllers.nodeclaim.creation import create_node_claim
from nodewright.controllers.nodeclaim.history import NodeHistory
from nodewright.controllers.state.nominations import (
    Nominations,
    nominated_message,
    provider_id_of,
)
from nodewright.logfields import fields, ref
from nodewright.plugin.host import PluginHost

log = logging.getLogger("nodewright.disruption")

#: How often a command waiting on its replacements looks again.
QUEUE_POLL = timedelta(seconds=1)
#: The retry window: 80 ms per queued command, between 10 minutes and an hour.
RETRY_SCALE = timedelta(milliseconds=80)
MIN_RETRY = timedelta(minutes=10)
MAX_RETRY = timedelta(hours=1)


class CommandFailedError(Exception):
    """A command that cannot complete; its nodes are released."""


@dataclass
class QueuedCommand:
    command: Command
    started: datetime
    #: Names of the replacement NodeClaims, in the order of ``command.replacements``.
    replacements: list[str] = field(default_factory=list)
    initialized: set[str] = field(default_factory=set)

    @property
    def provider_ids(self) -> set[str]:
        return {c.provider_id for c in self.command.candidates}


class OrchestrationQueue:
    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        clock: Clock,
        events: EventRecorder,
        history: NodeHistory,
        *,
        nominations: Nominations | None = None,
    ) -> None:
        self._cluster = cluster
        #: Where a started command's pods are planned to go is nominated here.
        self._nominations = nominations
        self._host = host
        self._clock = clock
        self._events = events
        self._history = history
        self.commands: list[QueuedCommand] = []
        #: Commands that completed and failed since start (Karpenter's queue metrics).
        self.succeeded = 0
        self.failed = 0

    def provider_ids(self) -> set[str]:
        return {pid for queued in self.commands for pid in queued.provider_ids}

    def retry_window(self) -> timedelta:
        return min(MAX_RETRY, max(MIN_RETRY, RETRY_SCALE * len(self.commands)))

    # -- starting -----------------------------------------------------------------------------

    def start(self, command: Command) -> bool:
        """Taint, mark and launch replacements; False if a candidate is already queued."""
        if command.candidates and {c.provider_id for c in command.candidates} & self.provider_ids():
            return False
        log.info("disrupting node(s)", extra=fields(_disruption_fields(command)))
        now = self._clock.now()
        for candidate in command.candidates:
            self._taint(candidate.node.name, add=True)
            self._mark(candidate.claim.name, command.reason)
        queued = QueuedCommand(command, now)
        try:
            for new in command.replacements:
                pool = self._cluster.get(NodePool, new.node_pool)
                if pool is None:
                    raise CommandFailedError(f"nodepool {new.node_pool} is gone")
                created = create_node_claim(
                    self._cluster,
                    pool,
                    new,
                    self._host.well_known_labels(),
                    reason=command.reason.lower(),
                    log=log,
                )
                queued.replacements.append(created.name)
        except (ClusterError, CommandFailedError) as error:
            self._release(queued, f"launching replacement nodeclaim, {error}")
            return True
        self._nominate(command)
        self.commands.append(queued)
        return True

    def _nominate(self, command: Command) -> None:
        """Nominate the existing nodes the command's simulation planned pods onto, and tell
        each pod where it should go (Karpenter records the command's scheduling results, so
        the next loop does not take those nodes away while the pods move)."""
        state = self._cluster.state
        nominated: list[str] = []
        for name, keys in command.destinations.items():
            nominated.append(provider_id_of(state, name))
            message = nominated_message(state, name)
            for key in keys:
                namespace, _, pod_name = key.rpartition("/")
                pod = state.get(Pod, (namespace, pod_name))
                if pod is not None:
                    self._events.publish(pod, "Nominated", message)
        if self._nominations is not None:
            self._nominations.nominate(nominated)

    # -- progress -----------------------------------------------------------------------------

    def reconcile(self) -> timedelta | None:
        wake: timedelta | None = None
        for queued in list(self.commands):
            try:
                done = self._advance(queued)
            except CommandFailedError as error:
                self.commands.remove(queued)
                self._release(queued, str(error))
                continue
            except (ConflictError, NotFoundError):
                done = False
            if done:
                self.commands.remove(queued)
                self.succeeded += 1
            else:
                wake = QUEUE_POLL
        return wake

    def _advance(self, queued: QueuedCommand) -> bool:
        now = self._clock.now()
        command = queued.command
        if now - queued.started > self.retry_window():
            raise CommandFailedError(f"command reached timeout after {now - queued.started}")
        waiting = False
        for name in queued.replacements:
            if name in queued.initialized:
                continue
            claim = self._cluster.get(NodeClaim, name)
            if claim is None or claim.deleting:
                raise CommandFailedError(f"replacement nodeclaim {name} was deleted")
            self._events.publish(
                claim,
                "DisruptionLaunching",
                f"Launching NodeClaim: {command.label()}",
                dedupe=KARPENTER_DEDUPE,
                dedupe_on=(identity(claim), command.label()),
            )
            if not is_true(claim.status.conditions, CONDITION_INITIALIZED):
                self._events.publish(
                    claim,
                    "DisruptionWaitingReadiness",
                    "Waiting on readiness to continue disruption",
                    dedupe=KARPENTER_DEDUPE,
                    dedupe_on=(identity(claim),),
                )
                waiting = True
                continue
            queued.initialized.add(name)
        if waiting:
            return False
        for candidate in command.candidates:
            label = command.label(candidate)
            self._history.mark_disrupted(
                candidate.claim.name, command.reason, label, queued.replacements
            )
            consolidating = command.reason in (REASON_EMPTY, REASON_UNDERUTILIZED)
            policy = candidate.pool.spec.disruption.consolidation_policy
            record_disrupted(
                candidate.claim,
                command.reason.lower(),
                pods=len(candidate.reschedulable),
                consolidation_policy=snake_case(policy) if consolidating else "",
            )
            self._cluster.delete(NodeClaim, candidate.claim.name)
            for obj, what in ((candidate.node, "Node"), (candidate.claim, "NodeClaim")):
                self._events.publish(
                    obj,
                    "DisruptionTerminating",
                    f"Disrupting {what}: {label}",
                    dedupe=KARPENTER_DEDUPE,
                    dedupe_on=(identity(obj), label),
                )
            log.info(
                "Deleting nodeclaim %s (node %s): %s", candidate.claim.name, candidate.name, label
            )
        return True

    # -- releasing ----------------------------------------------------------------------------

    def _release(self, queued: QueuedCommand, why: str) -> None:
        self.failed += 1
        log.error(
            "failed terminating nodes while executing a disruption command",
            extra=fields(_disruption_fields(queued.command), error=why),
        )
        for candidate in queued.command.candidates:
            try:
                self._taint(candidate.node.name, add=False)
                self.clear_mark(candidate.claim.name)
            except ClusterError as error:
                log.warning("Could not release node %s: %s", candidate.name, error)

    def _taint(self, node_name: str, *, add: bool) -> None:
        stored = self._cluster.get(Node, node_name)
        if stored is None:
            return
        node = mutable(stored)
        present = any(t.key == DISRUPTED_TAINT_KEY for t in node.spec.taints)
        if add and not present:
            node.spec.taints.append(Taint(key=DISRUPTED_TAINT_KEY, effect="NoSchedule"))
        elif not add and present:
            node.spec.taints = [t for t in node.spec.taints if t.key != DISRUPTED_TAINT_KEY]
        else:
            return
        self._cluster.update(node)

    def _mark(self, claim_name: str, reason: str) -> None:
        stored = self._cluster.get(NodeClaim, claim_name)
        if stored is None:
            return
        claim = mutable(stored)
        if set_condition(
            claim.status.conditions,
            CONDITION_DISRUPTION_REASON,
            "True",
            self._clock.now(),
            reason=reason,
            message=reason,
        ):
            self._cluster.update_status(claim)

    def clear_mark(self, claim_name: str) -> None:
        stored = self._cluster.get(NodeClaim, claim_name)
        if stored is None:
            return
        claim = mutable(stored)
        kept = [c for c in claim.status.conditions if c.type != CONDITION_DISRUPTION_REASON]
        if len(kept) != len(claim.status.conditions):
            claim.status.conditions = kept
            self._cluster.update_status(claim)

    def stale(self, names: Iterable[str]) -> list[tuple[Node, NodeClaim | None]]:
        """Of ``names`` (the nodes tainted ``karpenter.sh/disrupted`` or whose NodeClaim is
        marked, in order), those left so by a command this queue no longer holds (a restart
        between tainting and deleting), with their NodeClaims."""
        held = self.provider_ids()
        state = self._cluster.state
        found = []
        for name in names:
            node = state.get(Node, ("", name))
            if node is None:
                continue
            claim = state.claim_for(node)
            if node.spec.provider_id in held or node.deleting or (claim and claim.deleting):
                continue
            tainted = any(t.key == DISRUPTED_TAINT_KEY for t in node.spec.taints)
            marked = claim is not None and any(
                c.type == CONDITION_DISRUPTION_REASON for c in claim.status.conditions
            )
            if tainted or marked:
                found.append((node, claim))
        return found

    def release_stale(self, stale: Iterable[tuple[Node, NodeClaim | None]]) -> None:
        """Untaint and unmark what :meth:`stale` found."""
        for node, claim in stale:
            if any(t.key == DISRUPTED_TAINT_KEY for t in node.spec.taints):
                log.info("Removing stale disruption taint from node %s", node.name)
                self._taint(node.name, add=False)
            if claim is not None and any(
                c.type == CONDITION_DISRUPTION_REASON for c in claim.status.conditions
            ):
                self.clear_mark(claim.name)


def _disruption_fields(command: Command) -> dict[str, object]:
    """The keys Karpenter logs a disruption command with."""
    return {
        "command": command.describe(),
        "reason": command.reason,
        "decision": command.decision.lower(),
        "disrupted-node-count": len(command.candidates),
        "replacement-node-count": len(command.replacements),
        "pod-count": sum(len(c.reschedulable) for c in command.candidates),
        "disrupted-nodes": [
            {
                "Node": ref(c.name),
                "NodeClaim": ref(c.claim.name),
                "instance-type": c.node.metadata.labels.get(INSTANCE_TYPE_LABEL, ""),
                "capacity-type": c.node.metadata.labels.get(CAPACITY_TYPE_LABEL, ""),
            }
            for c in command.candidates
        ],
    }
