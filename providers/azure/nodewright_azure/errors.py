"""The ARM error catalogue: which launch failures mean "no capacity here" and for how long
(Karpenter's ``pkg/providers/instance/offerings``).

Classification reads the error's ``code`` and message, never the HTTP status or exception
class: the SDK raises a 409 ``SkuNotAvailable`` and an asynchronous ``ZonalAllocationFailed``
(a 200 polling response) differently, and both must land here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

from nodewright.plugin import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    InsufficientCapacityError,
    LaunchError,
    ProviderError,
    TemporaryProviderError,
)
from nodewright_azure.labels import REGIONAL_ZONE

HOUR = timedelta(hours=1)
SKU_NOT_AVAILABLE_ON_DEMAND_TTL = timedelta(hours=23)
FAMILY_QUOTA_TTL = timedelta(minutes=10)

#: Error codes that are the caller's fault and will not get better by retrying.
_USER_ERRORS = {
    "AuthorizationFailed",
    "LinkedAuthorizationFailed",
    "InvalidParameter",
    "InvalidResourceReference",
    "SubnetIsFull",
    "SubscriptionNotFound",
    "ResourceGroupNotFound",
}


@dataclass(frozen=True)
class Attempt:
    """What launch tried: one SKU in one zone (``0``: regional) and capacity type."""

    instance_type: str
    zone: str
    capacity_type: str


#: (instance type) -> (VM family, vCPUs), for family-wide blocking.
FamilyOf = Callable[[str], tuple[str, int] | None]
#: (instance type) -> every zone it is offered in (``<region>-<n>`` and ``0``).
ZonesOf = Callable[[str], Iterable[str]]


def classify(
    code: str,
    message: str,
    attempt: Attempt,
    *,
    candidates: Iterable[str],
    family_of: FamilyOf,
    zones_of: ZonesOf,
) -> ProviderError:
    """The plugin error for an ARM error ``code`` with ``message`` on ``attempt``.

    ``candidates`` are the instance types of the request; capacity errors also name the
    larger sizes of the same VM family, which would fail the same way.
    """
    text = message or ""
    zonal = attempt.zone != REGIONAL_ZONE
    scope = [z for z in zones_of(attempt.instance_type) if (z != REGIONAL_ZONE) == zonal]
    both = (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT)
    this = (attempt.capacity_type,)

    def ice(
        reason: str, zones: Iterable[str], types: Iterable[str], ttl: timedelta
    ) -> ProviderError:
        zones, types = list(zones), list(types)
        offerings = {(attempt.instance_type, z, t) for z in zones for t in types}
        offerings |= _family_offerings(attempt.instance_type, candidates, family_of, zones, types)
        return InsufficientCapacityError(
            f"{reason}: {attempt.instance_type} in zone {attempt.zone} "
            f"({attempt.capacity_type}): {code}: {text}",
            sorted(offerings),
            ttl,
        )

    if code == "OperationNotAllowed" and "LowPriorityCores" in text:
        spot = {
            (name, z, CAPACITY_TYPE_SPOT)
            for name in {attempt.instance_type, *candidates}
            for z in zones_of(name)
        }
        return InsufficientCapacityError(
            f"spot (low priority) cores quota exhausted: {code}: {text}", sorted(spot), HOUR
        )
    if code == "OperationNotAllowed" and "Family Cores quota" in text:
        ttl = HOUR if "Current Limit: 0" in text else FAMILY_QUOTA_TTL
        return ice("VM family cores quota exceeded", zones_of(attempt.instance_type), this, ttl)
    if code == "SkuNotAvailable":
        ttl = (
            HOUR if attempt.capacity_type == CAPACITY_TYPE_SPOT else SKU_NOT_AVAILABLE_ON_DEMAND_TTL
        )
        return ice("SKU not available", scope, this, ttl)
    if code == "ZonalAllocationFailed":
        return ice("zonal allocation failed", [attempt.zone], both, HOUR)
    if code == "AllocationFailed":
        return ice("allocation failed", scope, both, HOUR)
    if code == "OverconstrainedZonalAllocationRequest":
        return ice("overconstrained zonal allocation", [attempt.zone], this, HOUR)
    if code == "OverconstrainedAllocationRequest":
        return ice("overconstrained allocation", scope, this, HOUR)
    if code == "OperationNotAllowed" and "Total Regional Cores quota" in text:
        # Every SKU draws on the regional quota: no other offering would help.
        return InsufficientCapacityError(f"regional cores quota exceeded: {code}: {text}", ())
    if code in ("TooManyRequests", "RetryableError", "InternalServerError", "ServerBusy"):
        return TemporaryProviderError(f"azure: {code}: {text}")
    reason = code if code in _USER_ERRORS else (code or "AzureError")
    return LaunchError(reason, f"{attempt.instance_type}: {code}: {text}")


def _family_offerings(
    failed: str,
    candidates: Iterable[str],
    family_of: FamilyOf,
    zones: list[str],
    types: list[str],
) -> set[tuple[str, str, str]]:
    shape = family_of(failed)
    if shape is None:
        return set()
    family, cpus = shape
    found: set[tuple[str, str, str]] = set()
    for name in candidates:
        other = family_of(name)
        if other is not None and other[0] == family and other[1] >= cpus:
            found |= {(name, z, t) for z in zones for t in types}
    return found
