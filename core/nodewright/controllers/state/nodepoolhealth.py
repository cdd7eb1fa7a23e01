"""How a NodePool's recent NodeClaims fared, behind its ``NodeRegistrationHealthy`` condition
(Karpenter's ``pkg/state/nodepoolhealth``).

Each NodePool, by UID, keeps the outcomes of its last four NodeClaims: registered (a success)
or deleted for not launching or not registering in time (a failure). Two failures among them
make the pool unhealthy, any other outcome healthy; with none it is unknown. The NodeClaim
lifecycle records outcomes and turns the condition (:func:`record_outcome`); the registration
health controller starts a pool over when the pool or its NodeClass changes, and after a
restart picks up where the condition left off.
"""

from __future__ import annotations

import logging
from collections import deque
from enum import Enum

from nodewright.api.karpenter import (
    CONDITION_LAUNCHED,
    CONDITION_NODE_REGISTRATION_HEALTHY,
    NodeClaim,
    NodePool,
)
from nodewright.api.labels import NODEPOOL_LABEL
from nodewright.api.meta import Condition, ConditionStatus, find_condition, set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster

log = logging.getLogger("nodewright.nodepool")

#: How many outcomes a NodePool keeps.
WINDOW = 4
#: Failures among the last :data:`WINDOW` outcomes that make a NodePool unhealthy.
UNHEALTHY_FAILURES = 2


class Health(Enum):
    UNKNOWN = "Unknown"
    HEALTHY = "True"
    UNHEALTHY = "False"


class RegistrationOutcomes:
    """The last :data:`WINDOW` outcomes of each NodePool's NodeClaims."""

    def __init__(self) -> None:
        self._recent: dict[str, deque[bool]] = {}

    def health(self, pool_uid: str) -> Health:
        return _health(self._recent.get(pool_uid, ()))

    def health_after(self, pool_uid: str, registered: bool) -> Health:
        """The health one more outcome would give, without recording it."""
        window = deque(self._recent.get(pool_uid, ()), maxlen=WINDOW)
        window.append(registered)
        return _health(window)

    def record(self, pool_uid: str, registered: bool) -> None:
        self._recent.setdefault(pool_uid, deque(maxlen=WINDOW)).append(registered)

    def assume(self, pool_uid: str, health: Health) -> None:
        """Start the pool over with the fewest outcomes that give ``health``."""
        outcomes = {
            Health.UNKNOWN: [],
            Health.HEALTHY: [True],
            Health.UNHEALTHY: [False] * UNHEALTHY_FAILURES,
        }[health]
        self._recent[pool_uid] = deque(outcomes, maxlen=WINDOW)


def _health(window: deque[bool] | tuple[()]) -> Health:
    if not window:
        return Health.UNKNOWN
    failures = sum(1 for registered in window if not registered)
    return Health.UNHEALTHY if failures >= UNHEALTHY_FAILURES else Health.HEALTHY


def record_outcome(
    cluster: Cluster,
    clock: Clock,
    outcomes: RegistrationOutcomes,
    claim: NodeClaim,
    *,
    registered: bool,
) -> None:
    """Count a NodeClaim that registered, or is deleted for not launching or registering in
    time, for the NodePool that owns it, and turn the pool's condition when its health turns.

    A NodeClaim whose pool is gone, or was replaced by a pool of the same name, counts for
    nothing. Raises the cluster's ConflictError when the pool changed under the write, before
    anything is recorded, so the caller can try again.
    """
    name = claim.metadata.labels.get(NODEPOOL_LABEL)
    pool = cluster.state.get(NodePool, ("", name)) if name else None
    if pool is None or not any(
        owner.kind == NodePool.KIND and owner.uid == pool.metadata.uid
        for owner in claim.metadata.owner_references
    ):
        return
    uid = pool.metadata.uid or ""
    health = outcomes.health_after(uid, registered)
    current = find_condition(pool.status.conditions, CONDITION_NODE_REGISTRATION_HEALTHY)
    generation = pool.metadata.generation
    if registered and health is Health.HEALTHY:
        target: tuple[ConditionStatus, str | None, str | None] | None = ("True", None, None)
    elif not registered and health is Health.UNHEALTHY and not _is_false(current):
        target = ("False", *_failure(claim))
    else:
        target = None
    if target is not None and (
        current is None or current.status != target[0] or current.observed_generation != generation
    ):
        status, reason, message = target
        written = pool.status_copy()
        set_condition(
            written.status.conditions, CONDITION_NODE_REGISTRATION_HEALTHY, status, clock.now(),
            reason=reason, message=message, observed_generation=generation,
        )  # fmt: skip
        cluster.update_status(written)
        log.debug(
            "NodePool %s: %s=%s%s",
            pool.name,
            CONDITION_NODE_REGISTRATION_HEALTHY,
            status,
            f" ({message})" if message else "",
        )
    outcomes.record(uid, registered)


def _is_false(condition: Condition | None) -> bool:
    return condition is not None and condition.status == "False"


def _failure(claim: NodeClaim) -> tuple[str | None, str | None]:
    """Why the pool turns unhealthy: the NodeClaim's launch failure, or its registration."""
    launched = find_condition(claim.status.conditions, CONDITION_LAUNCHED)
    if launched is None:
        return None, None
    if launched.status == "True":
        return "RegistrationFailed", "Failed to register node"
    return launched.reason, launched.message
