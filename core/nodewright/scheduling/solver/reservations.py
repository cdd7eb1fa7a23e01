"""Reserved capacity handed out during one solve (Karpenter's ``ReservationManager``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nodewright.scheduling.solver.nodeclaim import OpenNodeClaim, Plan
    from nodewright.scheduling.solver.nodeclaimtemplate import NodeClaimTemplate


class ReservationError(str):
    """Why a pod waits for reserved capacity: the message of a refusal that must not turn
    into a fallback to other capacity, a lighter NodePool, or a relaxed preference."""


class Reservations:
    """Reserved capacity handed out in one solve (Karpenter's ``ReservationManager``).

    A NodeClaim holds every compatible reservation it could still launch into, so it counts
    against each of them until it is finished and pinned to them.
    """

    def __init__(self, templates: Sequence[NodeClaimTemplate], strict: bool) -> None:
        self.strict = strict
        #: Instances each reservation can still take in this solve. Several pools may offer
        #: one reservation, with counts read at different times: the lowest is believed.
        self.capacity: dict[str, int] = {}
        for template in templates:
            for option in template.options:
                for offering in option.reserved:
                    reservation = offering.reservation
                    assert reservation is not None
                    known = self.capacity.get(reservation.id)
                    if known is None or reservation.capacity < known:
                        self.capacity[reservation.id] = reservation.capacity

    def copy(self) -> Reservations:
        """The same capacity, for another solve."""
        copied = Reservations((), self.strict)
        copied.capacity = dict(self.capacity)
        return copied

    def choose(self, claim: OpenNodeClaim, plan: Plan) -> Plan | ReservationError:
        """``plan`` with the reservations the claim would hold, or why it must not go on."""
        compatible = False
        chosen: set[str] = set()
        held = claim.reserved
        for option in plan.options:
            for offering in option.reserved:
                reservation = offering.reservation
                assert reservation is not None
                if not offering.matches(plan.requirements):
                    continue
                compatible = True
                if reservation.id in held or self.capacity.get(reservation.id, 0) > 0:
                    chosen.add(reservation.id)
        if self.strict and not chosen:
            if compatible:
                return ReservationError(
                    "one or more instance types with compatible reserved offerings are "
                    "available, but could not be reserved"
                )
            if held:
                return ReservationError(
                    "satisfying updated nodeclaim constraints would remove all compatible "
                    "reserved offering options"
                )
        plan.reserved = frozenset(chosen)
        return plan

    def hold(self, claim: OpenNodeClaim, reserved: frozenset[str]) -> None:
        for taken in reserved - claim.reserved:
            self.capacity[taken] -= 1
        for released in claim.reserved - reserved:
            self.capacity[released] += 1
        claim.reserved = reserved
