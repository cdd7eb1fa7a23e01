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


_NONE: frozenset[tuple[str, str]] = frozenset()


class UnavailableOfferings:
    """The (instance type, zone, capacity type) triples to skip, with when each expires."""

    def __init__(self) -> None:
        self.until: dict[OfferingKey, datetime] = {}
        #: Instance type -> its (zone, capacity type) pairs now marked; None: to be made.
        self._by_type: dict[str, frozenset[tuple[str, str]]] | None = {}

    def mark(self, instance_type: str, zone: str, capacity_type: str, now: datetime) -> None:
        self.until[(instance_type, zone, capacity_type)] = now + UNAVAILABLE_TTL
        self._by_type = None

    def expire(self, now: datetime) -> None:
        """Forget the entries whose three minutes are over."""
        kept = {key: until for key, until in self.until.items() if until > now}
        if len(kept) != len(self.until):
            self._by_type = None
        self.until = kept

    def of_type(self, instance_type: str) -> frozenset[tuple[str, str]]:
        """The (zone, capacity type) pairs of ``instance_type`` marked now."""
        if not self.until:
            return _NONE
        if self._by_type is None:
            pairs: dict[str, set[tuple[str, str]]] = {}
            for name, zone, capacity_type in self.until:
                pairs.setdefault(name, set()).add((zone, capacity_type))
            self._by_type = {name: frozenset(found) for name, found in pairs.items()}
        return self._by_type.get(instance_type, _NONE)

    def __contains__(self, key: object) -> bool:
        return key in self.until
