"""NodeOverlay evaluation (feature gate ``NodeOverlay``): validate every overlay, apply the valid
ones to each NodePool's instance types, and report each overlay's outcome in its status.

Overlays are evaluated all together, as Karpenter's controller does, whenever an overlay, a
NodePool or a NodeClass changes, when a provider's catalog was fetched again, and every 6
hours otherwise. The result goes to the catalog (:meth:`Catalog.use_overlays`), which hands
overlaid instance types to provisioning and disruption; a NodePool created after the last
evaluation is not provisioned for until the next one has looked at it.

Status: ``ValidationSucceeded`` is False with reason ``RuntimeValidation`` (a rule the CRD
cannot express, such as a label in a provider's restricted domain) or ``Conflict`` (an
overlay of the same weight changes the same price or resource); ``Ready`` follows it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from nodewright.api.karpenter import CONDITION_READY, CONDITION_VALIDATION_SUCCEEDED, NodePool
from nodewright.api.meta import set_condition
from nodewright.api.nodeoverlay import (
    REASON_CONFLICT,
    REASON_RUNTIME_VALIDATION,
    NodeOverlay,
    by_weight,
)
from nodewright.api.validation import validate_node_overlay
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ConflictError, NotFoundError
from nodewright.cluster.objects import mutable
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.logfields import fields, ref
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.overlays import OverlayRule, PoolCatalog, plan_overlays
from nodewright.scheduling.requirements import Requirement, RequirementError, Requirements
from nodewright.scheduling.resources import parse_resources

log = logging.getLogger("nodewright.nodeoverlay")

#: Overlays are evaluated again this often even when nothing changed (Karpenter's period).
REEVALUATE_PERIOD = timedelta(hours=6)
#: Ready's reason while ValidationSucceeded is False (operatorpkg's root-condition reason).
REASON_UNHEALTHY_DEPENDENTS = "UnhealthyDependents"


class NodeOverlayController:
    name = "nodeoverlay"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
    ) -> None:
        self._cluster = cluster
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self._changes = cluster.state.feed(
            NodeOverlay, NodePool, *(kind.model for kind in host.node_class_kinds())
        )
        self._due: datetime | None = None
        self._catalog_generation = -1

    def resync(self) -> None:
        self._due = None

    def reconcile(self) -> timedelta | None:
        now = self._clock.now()
        changed = bool(self._changes.drain())
        if (
            not changed
            and self._due is not None
            and now < self._due
            and self._catalog_generation == self._catalog.generation
        ):
            return self._due - now
        self._evaluate()
        self._due = now + REEVALUATE_PERIOD
        return REEVALUATE_PERIOD

    def _evaluate(self) -> None:
        state = self._cluster.state
        overlays = by_weight(list(state.sorted(NodeOverlay)))
        problems: dict[str, str] = {}
        rules: list[OverlayRule] = []
        for overlay in overlays:
            problem = self._problem(overlay)
            if problem is None:
                rule = _rule(overlay)
                if isinstance(rule, str):
                    problem = rule
                else:
                    rules.append(rule)
            if problem is not None:
                problems[overlay.name] = problem
        pools: list[PoolCatalog] = []
        for pool in state.sorted(NodePool):
            if pool.deleting:
                continue
            try:
                node_class = self._catalog.node_class(pool.spec.template.spec.node_class_ref)
                types = self._catalog.instance_types(node_class)
            except (UnknownNodeClassError, NodeClassNotFoundError, PluginError) as error:
                # One broken pool must not keep overlays from the others.
                log.warning(
                    "listing instance types for nodepool",
                    extra=fields(NodePool=ref(pool.name), error=str(error)),
                )
                continue
            pools.append(PoolCatalog(pool.name, pool.spec.template.metadata.labels, types))
        self._catalog_generation = self._catalog.generation
        plan = plan_overlays(rules, pools)
        self._catalog.use_overlays(plan)
        conflicting = set(plan.conflicting)
        for overlay in overlays:
            problem = problems.get(overlay.name)
            if problem is not None:
                self._set_status(overlay, REASON_RUNTIME_VALIDATION, problem)
            elif overlay.name in conflicting:
                self._set_status(overlay, REASON_CONFLICT, "conflict with another overlay")
            else:
                self._set_status(overlay, None, "")

    def _problem(self, overlay: NodeOverlay) -> str | None:
        errors = validate_node_overlay(
            overlay,
            restricted_domains=self._host.restricted_label_domains(),
            well_known_labels=self._host.well_known_labels(),
        )
        if not errors:
            return None
        return "; ".join(f"{e.field}: {e.message}" for e in errors)

    def _set_status(self, overlay: NodeOverlay, reason: str | None, message: str) -> None:
        now = self._clock.now()
        generation = overlay.metadata.generation
        current = mutable(overlay)
        conditions = current.status.conditions
        if reason is None:
            changed = set_condition(
                conditions,
                CONDITION_VALIDATION_SUCCEEDED,
                "True",
                now,
                observed_generation=generation,
            )
            changed |= set_condition(
                conditions, CONDITION_READY, "True", now, observed_generation=generation
            )
        else:
            changed = set_condition(
                conditions,
                CONDITION_VALIDATION_SUCCEEDED,
                "False",
                now,
                reason=reason,
                message=message,
                observed_generation=generation,
            )
            changed |= set_condition(
                conditions,
                CONDITION_READY,
                "False",
                now,
                reason=REASON_UNHEALTHY_DEPENDENTS,
                message=f"{CONDITION_VALIDATION_SUCCEEDED}=False",
                observed_generation=generation,
            )
        if not changed:
            return
        if reason is not None:
            log.error(
                "nodeoverlay is not applied",
                extra=fields(NodeOverlay=ref(overlay.name), reason=reason, message=message),
            )
        try:
            self._cluster.update_status(current)
        except (ConflictError, NotFoundError):
            self._due = None  # look again on the next pass


def _rule(overlay: NodeOverlay) -> OverlayRule | str:
    """The overlay as the planner reads it, or why it cannot be read."""
    spec = overlay.spec
    try:
        requirements = Requirements(
            Requirement.of(r.key, r.operator, r.values) for r in spec.requirements or []
        )
        capacity = parse_resources(spec.capacity)
    except (RequirementError, ValueError) as error:
        return str(error)
    return OverlayRule(
        name=overlay.name,
        weight=spec.weight or 0,
        requirements=requirements,
        price=spec.price if spec.price is not None else spec.price_adjustment,
        capacity=capacity,
    )
