"""NodePool and NodeClass status: validation, NodeClass readiness, resources in use.

A NodePool launches nothing until it is ``Ready`` (``ValidationSucceeded`` and
``NodeClassReady``); what is wrong is written to its conditions and published as an event,
naming the field or the missing NodeClass, so a bad object never stops the controller.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from nodewright.api.core import Node
from nodewright.api.karpenter import (
    CONDITION_NODECLASS_READY,
    CONDITION_READY,
    CONDITION_VALIDATION_SUCCEEDED,
    NodeClass,
    NodePool,
)
from nodewright.api.labels import (
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    NODEPOOL_LABEL,
)
from nodewright.api.meta import find_condition, is_true, set_condition
from nodewright.api.validation import validate_node_pool
from nodewright.clock import Clock, Poll
from nodewright.cluster import Cluster, ConflictError, NotFoundError
from nodewright.cluster.objects import mutable
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.controllers.state.solverdata import nodepool_hash
from nodewright.controllers.workqueue import Resync, WorkQueue, wait_until
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.resources import format_resources, merge, parse_resources

log = logging.getLogger("nodewright.nodepool")

#: NodeClasses are re-resolved this often even when they do not change.
NODECLASS_RESYNC = timedelta(minutes=5)


class NodePoolStatusController:
    name = "nodepool.status"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        events: EventRecorder,
    ) -> None:
        self._cluster = cluster
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self._events = events
        #: NodePools whose pool, NodeClass or member nodes changed.
        self._queue: WorkQueue[str] = WorkQueue(self.name)
        self._changes = cluster.state.feed(
            NodePool, Node, *(kind.model for kind in host.node_class_kinds())
        )
        self._resync = Resync()

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        now = self._clock.now()
        if self._resync.due(now):
            for every in state.sorted(NodePool):
                self._queue.add(every.name)
        for change in self._changes.drain():
            if change.kind is NodePool:
                self._queue.add(change.key[1])
            elif change.kind is Node:
                for node in (change.old, change.new):
                    member_of = node.metadata.labels.get(NODEPOOL_LABEL) if node else None
                    if member_of is not None:
                        self._queue.add(member_of)
            else:  # a NodeClass: any pool may name it
                for every in state.sorted(NodePool):
                    self._queue.add(every.name)
        for name in sorted(self._queue.pop_ready(now)):
            pool = state.get(NodePool, ("", name))
            if pool is None or pool.deleting:
                continue
            try:
                self._reconcile(mutable(pool))
            except (ConflictError, NotFoundError):
                self._queue.add_at(name, now)
        return wait_until(now, self._queue.next_due(), self._resync.at)

    def resync(self) -> None:
        self._resync.reset()

    def _reconcile(self, pool: NodePool) -> None:
        now = self._clock.now()
        digest = nodepool_hash(pool)
        annotations = pool.metadata.annotations
        if (
            annotations.get(NODEPOOL_HASH_ANNOTATION) != digest
            or annotations.get(NODEPOOL_HASH_VERSION_ANNOTATION) != NODEPOOL_HASH_VERSION
        ):
            annotations[NODEPOOL_HASH_ANNOTATION] = digest
            annotations[NODEPOOL_HASH_VERSION_ANNOTATION] = NODEPOOL_HASH_VERSION
            pool = mutable(self._cluster.update(pool))

        conditions = pool.status.conditions
        generation = pool.metadata.generation
        changed = False
        errors = validate_node_pool(
            pool,
            restricted_domains=self._host.restricted_label_domains(),
            well_known_labels=self._host.well_known_labels(),
        )
        if errors:
            message = "; ".join(f"{e.field}: {e.message}" for e in errors)
            if set_condition(
                conditions,
                CONDITION_VALIDATION_SUCCEEDED,
                "False",
                now,
                reason="NodePoolValidationFailed",
                message=message,
                observed_generation=generation,
            ):
                changed = True
                self._events.publish(pool, "FailedValidation", message, WARNING)
                log.error("NodePool %s is invalid: %s", pool.name, message)
        else:
            changed |= set_condition(
                conditions,
                CONDITION_VALIDATION_SUCCEEDED,
                "True",
                now,
                observed_generation=generation,
            )

        reason, message = self._node_class_problem(pool)
        if reason:
            if set_condition(
                conditions,
                CONDITION_NODECLASS_READY,
                "False",
                now,
                reason=reason,
                message=message,
                observed_generation=generation,
            ):
                changed = True
                self._events.publish(pool, reason, message, WARNING)
                log.error("NodePool %s: %s", pool.name, message)
        else:
            changed |= set_condition(
                conditions, CONDITION_NODECLASS_READY, "True", now, observed_generation=generation
            )

        ready = is_true(conditions, CONDITION_VALIDATION_SUCCEEDED) and is_true(
            conditions, CONDITION_NODECLASS_READY
        )
        if ready:
            changed |= set_condition(
                conditions, CONDITION_READY, "True", now, observed_generation=generation
            )
        else:
            failing = [
                c
                for c in (CONDITION_VALIDATION_SUCCEEDED, CONDITION_NODECLASS_READY)
                if not is_true(conditions, c)
            ]
            detail = find_condition(conditions, failing[0]) if failing else None
            changed |= set_condition(
                conditions,
                CONDITION_READY,
                "False",
                now,
                reason=f"{failing[0]}False" if failing else "NotReady",
                message=detail.message if detail else "",
                observed_generation=generation,
            )

        members = self._cluster.state.nodes_of_pool(pool.name).values()
        resources = merge(*(parse_resources(n.status.capacity) for n in members))
        resources["nodes"] = len(members) * 1000
        rendered = format_resources(resources)
        if rendered != pool.status.resources or pool.status.nodes != len(members):
            pool.status.resources = rendered
            pool.status.nodes = len(members)
            changed = True
        if changed:
            self._cluster.update_status(pool)

    def _node_class_problem(self, pool: NodePool) -> tuple[str, str]:
        ref = pool.spec.template.spec.node_class_ref
        try:
            node_class = self._catalog.node_class(ref)
        except UnknownNodeClassError as error:
            return "NodeClassNotFound", str(error)
        except NodeClassNotFoundError as error:
            return "NodeClassNotFound", f"spec.template.spec.nodeClassRef: {error}"
        except PluginError as error:
            return "NodeClassNotReady", str(error)
        condition = find_condition(node_class.status.conditions, CONDITION_READY)
        if condition is None or condition.status != "True":
            detail = condition.message if condition and condition.message else "not ready yet"
            return "NodeClassNotReady", f"{ref.kind} {ref.name!r}: {detail}"
        return "", ""


class NodeClassStatusController:
    name = "nodeclass.status"

    def __init__(self, cluster: Cluster, host: PluginHost, clock: Clock, events: EventRecorder):
        self._cluster = cluster
        self._host = host
        self._clock = clock
        self._events = events
        self._checked: dict[tuple[str, str], tuple[int | None, datetime]] = {}

    def resync(self) -> None:
        self._checked.clear()

    def reconcile(self) -> timedelta | None:
        now = self._clock.now()
        for kind in self._host.node_class_kinds():
            for node_class in self._cluster.list(kind.model):
                key = (node_class.kind, node_class.name)
                seen = self._checked.get(key)
                if (
                    seen is not None
                    and seen[0] == node_class.metadata.generation
                    and now - seen[1] < NODECLASS_RESYNC
                    and find_condition(node_class.status.conditions, CONDITION_READY) is not None
                ):
                    continue
                self._checked[key] = (node_class.metadata.generation, now)
                try:
                    self._reconcile(mutable(node_class))
                except (ConflictError, NotFoundError):
                    return timedelta(0)
        return Poll(NODECLASS_RESYNC)  # a provider whose answer changes by time says so

    def _reconcile(self, node_class: NodeClass) -> None:
        now = self._clock.now()
        try:
            readiness = self._host.node_class_status(node_class)
            ready, reason, message = readiness.ready, readiness.reason, readiness.message
            extra = dict(readiness.status)
        except PluginError as error:
            ready, reason, message, extra = False, "ProviderError", str(error), {}
        changed = set_condition(
            node_class.status.conditions,
            CONDITION_READY,
            "True" if ready else "False",
            now,
            reason=reason or ("Ready" if ready else "NotReady"),
            message=message,
            observed_generation=node_class.metadata.generation,
        )
        for field, value in extra.items():
            if getattr(node_class.status, field, None) != value:
                setattr(node_class.status, field, value)
                changed = True
        if changed:
            self._cluster.update_status(node_class)
            if not ready:
                self._events.publish(node_class, reason or "NotReady", message, WARNING)
