"""Every NodeClaim the operator saw launched: when it launched, when and why it went.

The report of ``nodewright simulate`` reads it, since a removed node leaves nothing in the
cluster to ask.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from nodewright.api.karpenter import CONDITION_LAUNCHED, NodeClaim
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import find_condition


@dataclass
class NodeRecord:
    node_claim: str
    node: str | None
    node_pool: str | None
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    price_per_hour: float | None
    launched_at: datetime | None
    removed_at: datetime | None = None
    #: ``Empty``, ``Drifted``, ``Underutilized`` or ``Expired``; None when removed otherwise
    #: (by hand, garbage collection, a failed launch).
    disruption_reason: str | None = None
    #: What the disruption did, in Karpenter's event wording (``Consolidation/Delete``).
    disruption: str | None = None
    #: The NodeClaims launched to replace it (a ``Replace`` disruption's), by name.
    replaced_by: tuple[str, ...] = ()


class NodeHistory:
    def __init__(self) -> None:
        self.records: dict[str, NodeRecord] = {}
        self._reasons: dict[str, tuple[str, str, tuple[str, ...]]] = {}

    def mark_disrupted(
        self, claim: str, reason: str, disruption: str, replaced_by: Sequence[str] = ()
    ) -> None:
        """Remember why nodewright is removing ``claim`` (before it disappears), and the
        NodeClaims launched to replace it."""
        self._reasons[claim] = (reason, disruption, tuple(replaced_by))
        record = self.records.get(claim)
        if record is not None:
            record.disruption_reason, record.disruption = reason, disruption
            record.replaced_by = tuple(replaced_by)

    def observe(
        self,
        claims: Sequence[NodeClaim],
        now: datetime,
        price: Callable[[NodeClaim], float | None],
    ) -> None:
        """Record launched NodeClaims, and the removal of those that are going or gone."""
        present = set()
        for claim in claims:
            present.add(claim.name)
            self.observe_claim(claim.name, claim, now, price)
        for name, record in self.records.items():
            if name not in present and record.removed_at is None:
                record.removed_at = now

    def observe_claim(
        self,
        name: str,
        claim: NodeClaim | None,
        now: datetime,
        price: Callable[[NodeClaim], float | None],
    ) -> None:
        """Record one NodeClaim as it is now (None: gone), after it changed."""
        record = self.records.get(name)
        if claim is None:
            if record is not None and record.removed_at is None:
                record.removed_at = now
            return
        if record is None:
            launched = find_condition(claim.status.conditions, CONDITION_LAUNCHED)
            if launched is None or launched.status != "True":
                return
            labels = claim.metadata.labels
            record = NodeRecord(
                node_claim=claim.name,
                node=claim.status.node_name,
                node_pool=labels.get(NODEPOOL_LABEL),
                instance_type=labels.get(INSTANCE_TYPE_LABEL),
                zone=labels.get(ZONE_LABEL),
                capacity_type=labels.get(CAPACITY_TYPE_LABEL),
                price_per_hour=price(claim),
                launched_at=launched.last_transition_time,
            )
            self.records[claim.name] = record
        if record.node is None:
            record.node = claim.status.node_name
        if claim.deleting and record.removed_at is None:
            record.removed_at = claim.metadata.deletion_timestamp or now
        if claim.name in self._reasons:
            reason, disruption, replaced_by = self._reasons[claim.name]
            record.disruption_reason, record.disruption = reason, disruption
            record.replaced_by = replaced_by
