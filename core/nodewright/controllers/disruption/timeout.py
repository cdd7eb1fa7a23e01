"""The time budget of a consolidation search (Karpenter's consolidation timeouts).

Single-node consolidation gives up after 3 minutes and multi-node consolidation after 1 minute,
measured on the injected clock from the start of the search. A search that runs out counts in
``karpenter_voluntary_disruption_consolidation_timeouts_total`` and logs why; it is not
remembered as "consolidated", so the next pass searches again; a single-node search tries the
NodePools the one that ran out never reached first.

The clock is the operator's: wall-clock time under ``nodewright run``, simulated time under
``nodewright simulate``, where it does not move during a pass, so a simulation decides the same
on a slow machine as on a fast one.
"""

from __future__ import annotations

from datetime import timedelta

from nodewright import metrics
from nodewright.clock import Clock

#: Karpenter's ``SingleNodeConsolidationTimeoutDuration``.
SINGLE_NODE_TIMEOUT = timedelta(minutes=3)
#: Karpenter's ``MultiNodeConsolidationTimeoutDuration``.
MULTI_NODE_TIMEOUT = timedelta(minutes=1)


class Deadline:
    """The end of one search's budget: ``budget`` after the search starts."""

    def __init__(self, clock: Clock, budget: timedelta, consolidation_type: str) -> None:
        self._clock = clock
        self._at = clock.now() + budget
        self._type = consolidation_type

    def passed(self) -> bool:
        """Whether the budget has run out; counted in the timeouts metric when it has."""
        if self._clock.now() <= self._at:
            return False
        metrics.consolidation_timeouts.labels(self._type).inc()
        return True
