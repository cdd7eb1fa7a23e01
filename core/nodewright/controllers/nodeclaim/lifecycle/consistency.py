"""The consistency check: an initialized NodeClaim's Node is compared, once per scan period,
with what was launched, and a Node that came up with much less of a requested resource is
flagged (Karpenter's ``nodeclaim/consistency``)."""

from __future__ import annotations

import logging
from collections.abc import Set
from datetime import datetime, timedelta

from nodewright.api.core import Node
from nodewright.api.karpenter import CONDITION_CONSISTENT_STATE_FOUND, NodeClaim
from nodewright.api.meta import is_true, set_condition
from nodewright.api.quantity import format_quantity
from nodewright.clock import Clock, Poll
from nodewright.cluster import Cluster
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.logfields import fields, ref
from nodewright.scheduling.resources import parse_resources

log = logging.getLogger("nodewright.nodeclaim.lifecycle")

#: How often an initialized NodeClaim's Node is compared with what was launched.
CONSISTENCY_SCAN_PERIOD = timedelta(minutes=10)
#: A Node with less than this share of a requested resource's expected capacity is flagged.
CONSISTENCY_THRESHOLD = 0.9


class Consistency:
    def __init__(self, cluster: Cluster, clock: Clock, events: EventRecorder) -> None:
        self._cluster = cluster
        self._clock = clock
        self._events = events
        #: NodeClaim uid → when its consistency was last checked.
        self._scans: dict[str, datetime] = {}

    def reconcile(self, claim: NodeClaim, node: Node) -> timedelta | None:
        """Flag a Node that came up with much less of a requested resource than launched.

        Runs once per scan period per NodeClaim, as Karpenter's consistency controller does.
        """
        now = self._clock.now()
        uid = claim.metadata.uid or claim.name
        last = self._scans.get(uid)
        if last is not None and now - last < CONSISTENCY_SCAN_PERIOD:
            return Poll(last + CONSISTENCY_SCAN_PERIOD - now)
        self._scans[uid] = now
        issues = _shape_issues(claim, node)
        for issue in issues:
            log.info(
                "failed consistency check", extra=fields(NodeClaim=ref(claim.name), issue=issue)
            )
            self._events.publish(claim, "FailedConsistencyCheck", issue, WARNING)
        if issues:
            changed = set_condition(
                claim.status.conditions,
                CONDITION_CONSISTENT_STATE_FOUND,
                "False",
                now,
                reason="ConsistencyCheckFailed",
                message="Consistency Check Failed",
            )
        else:
            changed = not is_true(
                claim.status.conditions, CONDITION_CONSISTENT_STATE_FOUND
            ) and set_condition(
                claim.status.conditions, CONDITION_CONSISTENT_STATE_FOUND, "True", now
            )
        if changed:
            self._cluster.update_status(claim)
        # The Node and the NodeClaim change only in the cluster: the next scan is a poll.
        return Poll(CONSISTENCY_SCAN_PERIOD)

    def forget_gone(self, live: Set[str | None]) -> None:
        """Drop the scan times of NodeClaims (by uid) that no longer exist."""
        if len(self._scans) > len(live):
            for uid in [uid for uid in self._scans if uid not in live]:
                del self._scans[uid]


def _shape_issues(claim: NodeClaim, node: Node) -> list[str]:
    """Requested resources the Node has less than 90% of the launched capacity of."""
    issues: list[str] = []
    expected_capacity = parse_resources(claim.status.capacity)
    node_capacity = parse_resources(node.status.capacity)
    for name, requested in sorted(parse_resources(claim.spec.resources.requests).items()):
        expected = expected_capacity.get(name, 0)
        if requested == 0 or expected == 0:
            continue
        found = node_capacity.get(name, 0)
        share = found / expected
        if share < CONSISTENCY_THRESHOLD:
            issues.append(
                f"expected {format_quantity(expected, name)} of resource {name}, but found "
                f"{format_quantity(found, name)} ({share * 100:0.1f}% of expected)"
            )
    return issues
