"""Disruption budgets: how many of a NodePool's nodes may be disrupted now, for one reason.

Karpenter reads ``spec.disruption.budgets`` as a minimum over the budgets that are active now
and apply to the reason: ``nodes`` is a count or a percentage of the pool's nodes (rounded
up), a budget with a ``schedule`` is active only for ``duration`` after each cron hit, and a
budget without ``reasons`` applies to every reason. With no active budget nothing limits.
"""

from __future__ import annotations

import math
from datetime import datetime

from nodewright.api.cron import CronError, parse_cron
from nodewright.api.duration import DurationError, parse_duration
from nodewright.api.karpenter import Budget, NodePool

#: Karpenter's answer when no budget is active (``math.MaxInt32``).
UNLIMITED = 2**31 - 1


class BudgetError(ValueError):
    """A budget that cannot be read (bad ``nodes``, ``schedule`` or ``duration``)."""


def budget_nodes(budget: Budget, total: int) -> int:
    """The budget's ``nodes`` for a pool of ``total`` nodes: a count, or a percentage
    rounded up."""
    text = budget.nodes.strip()
    try:
        if text.endswith("%"):
            return math.ceil(total * int(text[:-1]) / 100)
        return int(text)
    except ValueError:
        raise BudgetError(f"budget nodes {budget.nodes!r} is not a count or a percentage") from None


def budget_active(budget: Budget, now: datetime) -> bool:
    """True when the budget has no schedule, or ``now`` falls in a window it opened."""
    if budget.schedule is None:
        return True
    try:
        schedule = parse_cron(budget.schedule)
        duration = parse_duration(budget.duration or "0s")
    except (CronError, DurationError) as error:
        raise BudgetError(f"budget schedule {budget.schedule!r}: {error}") from None
    return schedule.is_active(now, duration)


def allowed_disruptions(pool: NodePool, total: int, reason: str, now: datetime) -> int:
    """Disruptions the pool's budgets allow for ``reason`` among ``total`` nodes.

    A budget that cannot be read blocks (0), as Karpenter's ``MustGetAllowedDisruptions``
    does, so a typo never lets more nodes go than intended.
    """
    allowed = UNLIMITED
    for budget in pool.spec.disruption.budgets:
        if budget.reasons is not None and reason not in budget.reasons:
            continue
        try:
            if budget_active(budget, now):
                allowed = min(allowed, budget_nodes(budget, total))
        except BudgetError:
            return 0
    return allowed
