"""Offerings that recently had no capacity (Karpenter Azure's unavailable-offerings cache):
an (instance type, zone, capacity type) is skipped until its time is up. How long depends on
the error (see :mod:`nodewright_azure.errors`)."""

from __future__ import annotations

from datetime import datetime

OfferingKey = tuple[str, str, str]
"""(instance type, zone, capacity type)."""


class UnavailableOfferings:
    """The offerings to skip, with when each becomes available again."""

    def __init__(self) -> None:
        self.until: dict[OfferingKey, datetime] = {}

    def mark(self, key: OfferingKey, until: datetime) -> None:
        self.until[key] = until

    def unavailable_until(self, key: OfferingKey, now: datetime) -> datetime | None:
        """When ``key`` becomes available again; None if it is available now."""
        until = self.until.get(key)
        return until if until is not None and until > now else None

    def expire(self, now: datetime) -> None:
        """Forget the entries whose time is up."""
        self.until = {key: until for key, until in self.until.items() if until > now}
