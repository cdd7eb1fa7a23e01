"""A replacement's instance types are ordered by the cheapest offering its requirements allow.

Each type keeps its cheapest price per what a claim's requirements say on its offerings' keys
(zone, capacity type, the offerings' own labels), since a consolidation pass prices the same
types again and again. These cases price one set of types under requirements that differ on
each of those keys in turn: an answer kept for the wrong requirements orders them wrongly.
"""

from __future__ import annotations

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from nodewright.controllers.disruption.pricing import order_by_price
from nodewright.scheduling.instancetype import InstanceType, Offering, Reservation
from nodewright.scheduling.model import NewNodeClaim
from nodewright.scheduling.requirements import Requirements

RESERVATION_LABEL = "example.com/reservation-id"


def _type(name: str, *offerings: Offering) -> InstanceType:
    return InstanceType(
        name, Requirements.of((INSTANCE_TYPE_LABEL, "In", [name])), {"cpu": 2000}
    ).with_offerings(offerings)


# "spotty" is cheapest as spot in zone a; "steady" is the cheaper on-demand type, and the
# cheapest of all in zone b through its reservation.
SPOTTY = _type(
    "spotty",
    Offering("zone-a", "spot", 0.01),
    Offering("zone-a", "on-demand", 0.50),
    Offering("zone-b", "on-demand", 0.50),
)
STEADY = _type(
    "steady",
    Offering("zone-a", "on-demand", 0.20),
    Offering("zone-b", "on-demand", 0.20),
    Offering("zone-b", "reserved", 0.001, reservation=Reservation("r-1", RESERVATION_LABEL, 5)),
)


def _order(*specs: tuple[str, str, list[str]]) -> list[str]:
    claim = NewNodeClaim("default", Requirements.of(*specs), [SPOTTY, STEADY], [], {})
    return [t.name for t in order_by_price(claim).instance_types]


def test_types_are_ordered_by_the_capacity_type_a_claim_allows() -> None:
    assert _order() == ["steady", "spotty"]
    assert _order((CAPACITY_TYPE_LABEL, "In", ["spot"])) == ["spotty", "steady"]
    assert _order((CAPACITY_TYPE_LABEL, "In", ["on-demand"])) == ["steady", "spotty"]


def test_types_are_ordered_by_the_zones_a_claim_allows() -> None:
    # Zone b: spotty has no spot offering there, steady its reservation.
    assert _order((ZONE_LABEL, "In", ["zone-a"])) == ["spotty", "steady"]
    assert _order((ZONE_LABEL, "In", ["zone-b"])) == ["steady", "spotty"]
    assert _order((ZONE_LABEL, "In", ["zone-a"])) == ["spotty", "steady"]


def test_types_are_ordered_by_the_offering_labels_a_claim_allows() -> None:
    # Another reservation than steady's: its reserved offering is not for this claim.
    other = (RESERVATION_LABEL, "In", ["r-2"])
    assert _order((ZONE_LABEL, "In", ["zone-b"]), other) == ["steady", "spotty"]
    assert _order(
        (ZONE_LABEL, "In", ["zone-b"]), (CAPACITY_TYPE_LABEL, "In", ["reserved"]), other
    ) == ["spotty", "steady"]
    assert _order((ZONE_LABEL, "In", ["zone-b"]), (CAPACITY_TYPE_LABEL, "In", ["reserved"])) == [
        "steady",
        "spotty",
    ]
