"""Initialization: a registered Node is initialized once it is Ready, its startup and known
ephemeral taints are gone and every requested resource is registered (Karpenter's
``initialization.go``)."""

from __future__ import annotations

import logging
from datetime import timedelta

from nodewright.api.core import Node
from nodewright.api.karpenter import CONDITION_INITIALIZED, NodeClaim
from nodewright.api.labels import INITIALIZED_LABEL, KNOWN_EPHEMERAL_TAINTS
from nodewright.api.meta import set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster
from nodewright.cluster.objects import mutable
from nodewright.controllers.lifecycle.ready import set_ready
from nodewright.logfields import fields, ref
from nodewright.scheduling.resources import parse_resources

log = logging.getLogger("nodewright.nodeclaim.lifecycle")


class Initialization:
    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self._cluster = cluster
        self._clock = clock

    def reconcile(self, claim: NodeClaim, node: Node) -> timedelta | None:
        now = self._clock.now()
        reason, message = _not_initialized(claim, node)
        if reason:
            if set_condition(
                claim.status.conditions,
                CONDITION_INITIALIZED,
                "Unknown",
                now,
                reason=reason,
                message=message,
            ):
                self._cluster.update_status(claim)
            return None
        if node.metadata.labels.get(INITIALIZED_LABEL) != "true":
            node = mutable(node)
            node.metadata.labels[INITIALIZED_LABEL] = "true"
            self._cluster.update(node)
        set_condition(claim.status.conditions, CONDITION_INITIALIZED, "True", now)
        set_ready(claim, now)
        self._cluster.update_status(claim)
        log.info(
            "initialized nodeclaim",
            extra=fields(
                NodeClaim=ref(claim.name), Node=ref(node.name), allocatable=node.status.allocatable
            ),
        )
        return None


def _not_initialized(claim: NodeClaim, node: Node) -> tuple[str, str]:
    if not node.ready:
        return "NodeNotReady", "Node status is NotReady"
    present = {(t.key, t.effect) for t in node.spec.taints}
    for taint in claim.spec.startup_taints:
        if (taint.key, taint.effect) in present:
            return "StartupTaintsExist", f"StartupTaint {taint.key}:{taint.effect} still exists"
    for key, effect in KNOWN_EPHEMERAL_TAINTS:
        if (key, effect) in present:
            return "KnownEphemeralTaintsExist", f"KnownEphemeralTaint {key}:{effect} still exists"
    allocatable = parse_resources(node.status.allocatable)
    for name, value in parse_resources(claim.spec.resources.requests).items():
        if value > 0 and allocatable.get(name, 0) == 0:
            return "ResourceNotRegistered", f"Resource {name} was requested but not registered"
    return "", ""
