"""Operator options shared by the controllers (Karpenter's names and defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class Options:
    #: A provisioning batch closes after this long without a new pending pod ...
    batch_idle_duration: timedelta = timedelta(seconds=1)
    #: ... or this long after it opened, whichever comes first.
    batch_max_duration: timedelta = timedelta(seconds=10)
    #: ``Respect`` or ``Ignore`` preferred affinities and ScheduleAnyway spreads.
    preference_policy: str = "Respect"
    #: ``Strict`` or ``BestEffort`` handling of requirement ``minValues``.
    min_values_policy: str = "Strict"
    cluster_name: str = "nodewright"
    #: Feature gate ``SpotToSpotConsolidation``: replace spot nodes with cheaper spot nodes.
    spot_to_spot_consolidation: bool = False
