"""Initialization: a registered Node is initialized once it is Ready, its startup and known
ephemeral taints are gone, every requested resource is registered and (with DRA allocation
on) every DRA driver whose devices its pods were given has published a complete pool for it
(Karpenter's ``initialization.go``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from nodewright.api.core import Node
from nodewright.api.karpenter import CONDITION_INITIALIZED, NodeClaim
from nodewright.api.labels import DRA_DRIVERS_ANNOTATION, INITIALIZED_LABEL, KNOWN_EPHEMERAL_TAINTS
from nodewright.api.meta import set_condition
from nodewright.api.resource import ResourceSlice
from nodewright.clock import Clock
from nodewright.cluster import Cluster
from nodewright.cluster.objects import mutable
from nodewright.controllers.nodeclaim.lifecycle.ready import set_ready
from nodewright.logfields import fields, ref
from nodewright.scheduling.resources import parse_resources

log = logging.getLogger("nodewright.nodeclaim.lifecycle")


#: How soon a NodeClaim waiting for its DRA drivers' slices is looked at again.
DRA_RECHECK = timedelta(seconds=5)


class Initialization:
    def __init__(self, cluster: Cluster, clock: Clock, dra: bool = False) -> None:
        self._cluster = cluster
        self._clock = clock
        self._dra = dra

    def reconcile(self, claim: NodeClaim, node: Node) -> timedelta | None:
        now = self._clock.now()
        reason, message = _not_initialized(claim, node)
        if not reason and self._dra:
            driver = missing_driver(claim, self._node_slices(node.name))
            if driver is not None:
                reason = "DRADriverPoolsNotPublished"
                message = f'DRA driver "{driver}" has not published a complete resource pool'
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
            return DRA_RECHECK if reason == "DRADriverPoolsNotPublished" else None
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

    def _node_slices(self, node: str) -> list[ResourceSlice]:
        """The slices local to ``node``: by ``spec.nodeName`` or a Node owner reference."""
        return [
            s
            for s in self._cluster.state.sorted(ResourceSlice)
            if s.spec.node_name == node
            or any(r.kind == "Node" and r.name == node for r in s.metadata.owner_references)
        ]


def missing_driver(claim: NodeClaim, slices: Sequence[ResourceSlice]) -> str | None:
    """The first driver the claim's ``karpenter.sh/requested-dra-drivers`` lists that has no
    complete pool among ``slices`` (a pool's slices of its highest generation, as many as it
    declares); None when there is none."""
    wanted = claim.metadata.annotations.get(DRA_DRIVERS_ANNOTATION, "").strip()
    if not wanted:
        return None
    pools: dict[tuple[str, str], tuple[int, int, int]] = {}
    for s in slices:
        key = (s.spec.driver, s.spec.pool.name)
        generation, count = s.spec.pool.generation, s.spec.pool.resource_slice_count
        seen = pools.get(key)
        if seen is None or generation > seen[0]:
            pools[key] = (generation, count, 1)
        elif generation == seen[0]:
            pools[key] = (seen[0], seen[1], seen[2] + 1)
    complete = {driver for (driver, _), (_, count, seen) in pools.items() if 0 < count == seen}
    for listed in wanted.split(","):
        driver = listed.strip()
        if driver and driver not in complete:
            return driver
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
