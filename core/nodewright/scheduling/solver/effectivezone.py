"""A pending pod's effective zone, for ``karpenter_scheduler_pending_pods_by_effective_zone_count``
(Karpenter's ``computeEffectiveZoneFromPod``): the zones its own zone requirement, its
volumes' zones and its zonal topology constraints (spread, affinity, anti-affinity) all allow,
as the solve begins.

The answer is that zone when exactly one is left, ``flexible`` when several are (or nothing
restricts the pod), and ``none`` when they have nothing in common.
"""

from __future__ import annotations

from collections.abc import Iterable

from nodewright.api.labels import ZONE_LABEL
from nodewright.scheduling.requirements import IN, Requirement, Requirements
from nodewright.scheduling.solver.preferences import PodState
from nodewright.scheduling.topology import Topology

FLEXIBLE = "flexible"
NONE = "none"


def effective_zone(state: PodState, topology: Topology) -> str:
    pod = state.pod
    zones = _topology_zones(state, topology)
    if zones is not None and not zones:
        return NONE
    own = state.strict.get(ZONE_LABEL)
    volumes = _volume_zones(pod.volume_requirements)
    if own is not None and own.operator == IN:
        listed: Iterable[str] = own.values
    elif volumes is not None:
        listed = volumes
    elif zones:
        listed = zones
    else:
        return FLEXIBLE
    matched = sorted(
        zone
        for zone in listed
        if (own is None or own.has(zone))
        and (volumes is None or zone in volumes)
        and (not zones or zone in zones)
    )
    if len(matched) > 1:
        return FLEXIBLE
    return matched[0] if matched else NONE


def _topology_zones(state: PodState, topology: Topology) -> set[str] | None:
    """The zones the pod's own zonal constraints leave it (None: it has none)."""
    pod = state.pod
    pod_domains = state.requirements.get(ZONE_LABEL)
    zones: set[str] | None = None
    for term in state.active_terms():
        group = topology.groups.get(term)
        if group is None or group.key != ZONE_LABEL:
            continue
        valid = set(group.valid_domains(term.selects(pod.namespace, pod.labels), pod_domains))
        if not valid:
            return set()
        zones = valid if zones is None else zones & valid
    return zones


def _volume_zones(alternatives: Iterable[Requirements]) -> frozenset[str] | None:
    """The zones any of the pod's volume alternatives allow (None: the volumes do not limit
    the zone)."""
    zones: set[str] = set()
    found = False
    for alternative in alternatives:
        requirement: Requirement | None = alternative.get(ZONE_LABEL)
        if requirement is None or requirement.operator != IN:
            return None
        zones |= requirement.values
        found = True
    return frozenset(zones) if found else None
