"""Operator options shared by the controllers (Karpenter's names and defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from nodewright.api.core import TopologySpreadConstraint
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.model import SolverOptions


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
    #: ``SCHEDULER_CONFIG``'s ``podTopologySpread.defaultConstraints``: spreads given to pods
    #: that declare none (see :mod:`nodewright.controllers.provisioning.defaultspread`).
    default_spread: tuple[TopologySpreadConstraint, ...] = ()
    #: Feature gate ``NodeRepair``: replace nodes whose conditions their provider's repair
    #: policies call unhealthy for too long.
    node_repair: bool = False
    #: Feature gate ``CapacityBuffer``: CapacityBuffers keep headroom as virtual pods.
    capacity_buffer: bool = False
    #: Feature gate ``StaticCapacity``: keep ``spec.replicas`` nodes in static NodePools.
    static_capacity: bool = False
    #: Feature gate ``NodeOverlay``: apply NodeOverlays to instance types.
    node_overlay: bool = False
    #: ``IGNORE_DRA_REQUESTS=false``: allocate pods' DRA claims from the devices nodes publish
    #: and instance types offer, instead of leaving such pods out.
    dra: bool = False


def solver_options(
    options: Options, host: PluginHost, *, reserved_offering_mode: str = "Strict"
) -> SolverOptions:
    """The solver's settings, the same for provisioning and for consolidation simulations: the
    operator's policies and every provider's well-known labels (a pod may select
    ``karpenter.kwok.sh/instance-family`` although no NodePool mentions it).

    ``reserved_offering_mode`` is ``Strict`` for provisioning and ``Fallback`` for disruption.
    """
    return SolverOptions(
        preference_policy=options.preference_policy,
        well_known_labels=host.well_known_labels(),
        min_values_policy=options.min_values_policy,
        reserved_offering_mode=reserved_offering_mode,
        default_spread=options.default_spread,
        dra=options.dra,
    )
