"""Liveness: a NodeClaim that did not launch or register in time is deleted (Karpenter's
``liveness.go``)."""

from __future__ import annotations

import logging
from datetime import timedelta

from nodewright.api.karpenter import CONDITION_LAUNCHED, CONDITION_REGISTERED, NodeClaim
from nodewright.api.meta import find_condition, is_true
from nodewright.clock import Clock
from nodewright.cluster import Cluster
from nodewright.controllers.metrics.disruption import record_disrupted
from nodewright.controllers.state.nodepoolhealth import RegistrationOutcomes, record_outcome
from nodewright.logfields import duration, fields, ref

log = logging.getLogger("nodewright.nodeclaim.lifecycle")

LAUNCH_TIMEOUT = timedelta(minutes=5)
REGISTRATION_TIMEOUT = timedelta(minutes=15)


class Liveness:
    def __init__(self, cluster: Cluster, clock: Clock, outcomes: RegistrationOutcomes) -> None:
        self._cluster = cluster
        self._clock = clock
        self._outcomes = outcomes

    def reconcile(self, claim: NodeClaim) -> timedelta | None:
        """Delete a NodeClaim that did not launch or register in time.

        Returns how long until the next timeout could strike (``timedelta.max`` once the
        NodeClaim is registered), or None when the NodeClaim was deleted.
        """
        conditions = claim.status.conditions
        if is_true(conditions, CONDITION_REGISTERED):
            return timedelta.max
        now = self._clock.now()
        created = claim.metadata.creation_timestamp or now
        checks = [(CONDITION_REGISTERED, REGISTRATION_TIMEOUT, "registration_timeout")]
        if not is_true(conditions, CONDITION_LAUNCHED):
            checks.insert(0, (CONDITION_LAUNCHED, LAUNCH_TIMEOUT, "launch_timeout"))
        remaining = timedelta.max
        for kind, timeout, reason in checks:
            condition = find_condition(conditions, kind)
            since = (condition.last_transition_time if condition else None) or created
            left = since + timeout - now
            if left <= timedelta(0):
                record_outcome(self._cluster, self._clock, self._outcomes, claim, registered=False)
                log.info(
                    "terminating due to timeout",
                    extra=fields(
                        NodeClaim=ref(claim.name), timeout=duration(timeout), reason=reason
                    ),
                )
                self._cluster.delete(NodeClaim, claim.name)
                record_disrupted(claim, reason)
                return None
            remaining = min(remaining, left)
        return remaining
