"""Node repair (feature gate ``NodeRepair``, Karpenter's ``node.health`` controller).

A Node whose condition matches one of its provider's repair policies (``Ready=False`` for 10
minutes on KWOK, ...) for longer than the policy's toleration is replaced: its NodeClaim is
annotated with a termination deadline of now and deleted, so the drain deletes its pods at
once instead of waiting on PodDisruptionBudgets or ``do-not-disrupt``, and provisioning
launches a replacement for them. Disruption budgets do not apply.

Repair stops when it would make things worse: while more than 20 % of a NodePool's Nodes
(rounded up, so one of three may be repaired) match a repair policy, none of them is
repaired and each one due says so with a ``NodeRepairBlocked`` Warning event on the Node,
its NodeClaim and the NodePool, and is looked at again 5 minutes later. A NodeClaim without
a NodePool is held to the same share of the cluster's Nodes.

The controller reads the cluster state's Node and NodeClaim changes; a Node that is unhealthy
but still tolerated is looked at again exactly when its toleration runs out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import cast

from nodewright import metrics
from nodewright.api.core import Node, NodeCondition
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    NODEPOOL_LABEL,
    TERMINATION_TIMESTAMP_ANNOTATION,
)
from nodewright.api.timestamps import format_timestamp, parse_timestamp
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ConflictError, NotFoundError
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import Change
from nodewright.controllers.catalog import Catalog
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.controllers.metrics.disruption import (
    record_disrupted,
    reschedulable_pods,
    snake_case,
)
from nodewright.controllers.nodeclaim.history import NodeHistory
from nodewright.controllers.workqueue import Resync, WorkQueue, wait_until
from nodewright.logfields import fields, ref
from nodewright.plugin.errors import PluginError, ProviderError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import RepairPolicy

log = logging.getLogger("nodewright.node.health")

#: At most this share of a NodePool's (or the cluster's) Nodes, rounded up, may be unhealthy
#: for repair to go on.
ALLOWED_UNHEALTHY_PERCENT = 20
#: A blocked repair is looked at again this much later.
BLOCKED_REQUEUE = timedelta(minutes=5)
#: ``NodeRepairBlocked`` is not repeated for the same object within this window.
BLOCKED_EVENT_DEDUPE = timedelta(minutes=15)
#: The disruption reason of a repaired NodeClaim (the report's and the metric's, lower-cased).
REASON_UNHEALTHY = "Unhealthy"
EVENT_NODE_REPAIR_BLOCKED = "NodeRepairBlocked"

#: A condition without a transition time has held since forever, as a zero time in Go.
_LONG_AGO = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Unhealthy:
    """The condition of a Node that matches a repair policy, and when it runs out."""

    condition: NodeCondition
    policy: RepairPolicy

    @property
    def repair_at(self) -> datetime:
        since = self.condition.last_transition_time or _LONG_AGO
        return since + self.policy.toleration


def unhealthy_condition(node: Node, policies: tuple[RepairPolicy, ...]) -> Unhealthy | None:
    """The matching condition whose toleration runs out first, or None when healthy."""
    found: Unhealthy | None = None
    for policy in policies:
        for condition in node.status.conditions:
            if condition.type == policy.condition_type:
                if condition.status == policy.condition_status:
                    match = Unhealthy(condition, policy)
                    if found is None or match.repair_at < found.repair_at:
                        found = match
                break
    return found


def allowed_unhealthy(total: int) -> int:
    """How many of ``total`` Nodes may be unhealthy: 20 %, rounded up (as a PDB's percent)."""
    return -(-total * ALLOWED_UNHEALTHY_PERCENT // 100)


class NodeHealth:
    name = "node.health"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        events: EventRecorder,
        *,
        history: NodeHistory,
    ) -> None:
        self._cluster = cluster
        self._state = cluster.state
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self._events = events
        self._history = history
        #: Nodes whose conditions or NodeClaim changed, or whose toleration runs out.
        self._queue: WorkQueue[str] = WorkQueue(self.name)
        self._changes = self._state.feed(Node, NodeClaim)
        self._resync = Resync()
        #: Providers whose repair policies could not be read, warned about once.
        self._broken: set[str] = set()

    def resync(self) -> None:
        self._resync.reset()

    def reconcile(self) -> timedelta | None:
        now = self._clock.now()
        if self._resync.due(now):
            # Every Node now and then, as an informer's resync: it must find nothing new.
            for key in self._state.objects(Node):
                self._queue.add(key[1])
        for change in self._changes.drain():
            self._note(change)
        for name in sorted(self._queue.pop_ready(now)):
            node = self._state.get(Node, ("", name))
            if node is None:
                continue
            try:
                due = self._reconcile(node, now)
            except (ConflictError, NotFoundError):
                due = now  # changed under us: again on the next pass
            if due is not None:
                self._queue.add_at(name, due)
        return wait_until(now, self._queue.next_due(), self._resync.at)

    def _note(self, change: Change) -> None:
        """Queue the Node a change may make (un)healthy or repairable."""
        if change.kind is Node:
            old, new = cast("Node | None", change.old), cast("Node | None", change.new)
            if new is None:
                self._queue.forget(change.key[1])
            elif old is None or _conditions(old) != _conditions(new):
                self._queue.add(new.name)
            return
        old_claim = cast("NodeClaim | None", change.old)
        claim = cast("NodeClaim | None", change.new)
        if claim is None or (old_claim is not None and _joined(old_claim) == _joined(claim)):
            return
        node = self._state.node_for(claim)
        if node is not None:
            self._queue.add(node.name)

    def _policies(self, claim: NodeClaim) -> tuple[RepairPolicy, ...]:
        try:
            provider = self._catalog.provider_name(claim.spec.node_class_ref)
            return self._host.repair_policies(provider)
        except (PluginError, ProviderError, UnknownNodeClassError) as error:
            key = str(error)
            if key not in self._broken:
                self._broken.add(key)
                log.warning("nodeclaim %s will not be repaired: %s", claim.name, error)
            return ()

    def _reconcile(self, node: Node, now: datetime) -> datetime | None:
        """Repair ``node`` if it is due; return when to look at it again."""
        claim = self._state.claim_for(node)
        if claim is None:
            return None  # not a node nodewright launched
        policies = self._policies(claim)
        unhealthy = unhealthy_condition(node, policies)
        if unhealthy is None:
            return None
        if now < unhealthy.repair_at:
            return unhealthy.repair_at
        pool_name = claim.metadata.labels.get(NODEPOOL_LABEL)
        if pool_name is not None:
            nodes = self._state.nodes_of_pool(pool_name).values()
            where = "nodepool"
        else:
            nodes = self._state.objects(Node).values()
            where = "cluster"
        total = len(nodes)
        sick = sum(1 for other in nodes if unhealthy_condition(other, policies) is not None)
        if sick > allowed_unhealthy(total):
            self._blocked(node, claim, pool_name, where)
            return now + BLOCKED_REQUEUE
        self._repair(node, claim, unhealthy, now)
        return None

    def _blocked(self, node: Node, claim: NodeClaim, pool_name: str | None, where: str) -> None:
        message = f"more than {ALLOWED_UNHEALTHY_PERCENT}% nodes are unhealthy in the {where}"
        log.debug("not repairing node %s: %s", node.name, message)
        pool = self._state.get(NodePool, ("", pool_name)) if pool_name is not None else None
        for obj in (node, claim, pool):
            if obj is not None:
                self._events.publish(
                    obj, EVENT_NODE_REPAIR_BLOCKED, message, WARNING, dedupe=BLOCKED_EVENT_DEDUPE
                )

    def _repair(self, node: Node, claim: NodeClaim, unhealthy: Unhealthy, now: datetime) -> None:
        """Set the termination deadline to now (unless one already passed) and delete."""
        stamp = claim.metadata.annotations.get(TERMINATION_TIMESTAMP_ANNOTATION)
        deadline = format_timestamp(now)
        if stamp != deadline and not _passed(stamp, now):
            updated = mutable(claim)
            updated.metadata.annotations[TERMINATION_TIMESTAMP_ANNOTATION] = deadline
            claim = self._cluster.update(updated)
            log.info(
                "annotated nodeclaim",
                extra=fields(
                    {"NodeClaim": ref(claim.name), TERMINATION_TIMESTAMP_ANNOTATION: deadline}
                ),
            )
        if claim.deleting:
            return
        condition = unhealthy.condition
        self._history.mark_disrupted(
            claim.name, REASON_UNHEALTHY, f"Repair/Delete: {condition.type}={condition.status}"
        )
        self._cluster.delete(NodeClaim, claim.name)
        pods = reschedulable_pods(self._cluster.state, claim)
        log.info(
            "deleting unhealthy node",
            extra=fields(
                {
                    "NodeClaim": ref(claim.name),
                    "Node": ref(node.name),
                    "condition": f"{condition.type}={condition.status}",
                }
            ),
        )
        labels = node.metadata.labels
        pool = labels.get(NODEPOOL_LABEL, "")
        capacity_type = labels.get(CAPACITY_TYPE_LABEL, "")
        record_disrupted(claim, REASON_UNHEALTHY.lower(), pods=pods)
        metrics.nodeclaims_unhealthy_disrupted.labels(
            snake_case(condition.type), pool, capacity_type, claim.status.image_id or ""
        ).inc()


def _conditions(node: Node) -> list[tuple[str, str, datetime | None]]:
    return [(c.type, c.status, c.last_transition_time) for c in node.status.conditions]


def _joined(claim: NodeClaim) -> tuple[str | None, str | None]:
    """What ties a NodeClaim to its Node and NodePool."""
    return claim.status.provider_id, claim.metadata.labels.get(NODEPOOL_LABEL)


def _passed(stamp: str | None, now: datetime) -> bool:
    """True when ``stamp`` is a deadline before now (a repair does not move it later)."""
    if stamp is None:
        return False
    try:
        return parse_timestamp(stamp) < now
    except ValueError:
        return False
