"""A NodeClaim's ``Ready`` condition: True once it is launched, registered and initialized.
Each lifecycle step that changes one of those three sets it again."""

from __future__ import annotations

from datetime import datetime

from nodewright.api.karpenter import (
    CONDITION_INITIALIZED,
    CONDITION_LAUNCHED,
    CONDITION_READY,
    CONDITION_REGISTERED,
    NodeClaim,
)
from nodewright.api.meta import is_true, set_condition


def set_ready(claim: NodeClaim, now: datetime) -> None:
    conditions = claim.status.conditions
    ready = all(
        is_true(conditions, c)
        for c in (CONDITION_LAUNCHED, CONDITION_REGISTERED, CONDITION_INITIALIZED)
    )
    set_condition(
        conditions,
        CONDITION_READY,
        "True" if ready else "False",
        now,
        reason="Ready" if ready else "NotReady",
    )
