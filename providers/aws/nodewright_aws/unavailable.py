"""Offerings EC2 recently had no capacity for (Karpenter's unavailable-offerings cache).

A CreateFleet "insufficient capacity" error or a spot interruption marks an (instance type,
zone, capacity type) unavailable for three minutes; offerings report it unavailable until then.
"""

from __future__ import annotations

from datetime import datetime, timedelta

#: How long an offering stays unavailable after EC2 had no capacity for it.
UNAVAILABLE_TTL = timedelta(minutes=3)

OfferingKey = tuple[str, str, str]
"""(instance type, zone, capacity type)."""


class UnavailableOfferings:
    """The (instance type, zone, capacity type) triples to skip, with when each expires."""

    def __init__(self) -> None:
        self.until: dict[OfferingKey, datetime] = {}

    def mark(self, instance_type: str, zone: str, capacity_type: str, now: datetime) -> None:
        self.until[(instance_type, zone, capacity_type)] = now + UNAVAILABLE_TTL

    def expire(self, now: datetime) -> None:
        """Forget the entries whose three minutes are over."""
        self.until = {key: until for key, until in self.until.items() if until > now}

    def __contains__(self, key: object) -> bool:
        return key in self.until
