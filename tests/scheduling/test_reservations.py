"""Reserved capacity: handed out per NodeClaim, never beyond what a reservation can take, and
in Strict mode never traded for other capacity while a compatible reservation exists
(Karpenter's ``ReservationManager`` and ``offeringsToReserve``)."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from nodewright.scheduling.instancetype import InstanceType, Offering, Reservation
from nodewright.scheduling.model import NewNodeClaim, PodRequest, SolverOptions
from nodewright.scheduling.solver.scheduler import solve
from nodewright.testing.catalog import ZONES
from tests.scheduling.scheduling_fakes import instance_type, node_pool, pod

LABEL = "example.com/reservation-id"
COULD_NOT_RESERVE = (
    "one or more instance types with compatible reserved offerings are available, "
    "but could not be reserved"
)
FALLBACK = SolverOptions(reserved_offering_mode="Fallback")


def reserved_type(
    name: str = "large",
    *,
    capacity: int = 2,
    reservation: str = "r-1",
    zone: str = ZONES[0],
    available: bool = True,
) -> InstanceType:
    """4 CPU: reserved in one zone (almost free), spot in two zones, on-demand in three."""
    return instance_type(
        name,
        cpu="4",
        memory="8Gi",
        pods=20,
        offerings=[
            Offering(
                zone, "reserved", 0.00001, available, {}, Reservation(reservation, LABEL, capacity)
            ),
            *(Offering(z, "spot", 0.07) for z in ZONES[:2]),
            *(Offering(z, "on-demand", 0.1) for z in ZONES),
        ],
    )


def plain_type(name: str = "plain") -> InstanceType:
    return instance_type(name, cpu="4", memory="8Gi", pods=20)


def reserved_ids(claim: NewNodeClaim) -> set[str] | None:
    requirement = claim.requirements.get(LABEL)
    return None if requirement is None else set(requirement.values)


def pinned(claims: Sequence[NewNodeClaim]) -> list[NewNodeClaim]:
    return [c for c in claims if c.requirements[CAPACITY_TYPE_LABEL].values == {"reserved"}]


def big_pods(count: int) -> list[PodRequest]:
    """Pods of 3 CPU: one per 4-CPU node."""
    return [pod("3", "1Gi") for _ in range(count)]


def test_each_nodeclaim_in_a_reservation_is_pinned_to_it() -> None:
    result = solve(big_pods(2), [], [node_pool(instance_types=[reserved_type(), plain_type()])])
    assert not result.errors
    assert len(result.new_node_claims) == 2
    for claim in result.new_node_claims:
        assert claim.requirements[CAPACITY_TYPE_LABEL].values == {"reserved"}
        assert reserved_ids(claim) == {"r-1"}
        # Only the type that has the reservation is left to launch.
        assert [it.name for it in claim.instance_types] == ["large"]
        assert claim.requirements[INSTANCE_TYPE_LABEL].values == {"large"}


def test_strict_mode_keeps_pods_pending_once_the_reservation_is_handed_out() -> None:
    pods = big_pods(3)
    result = solve(pods, [], [node_pool(instance_types=[reserved_type(capacity=2)])])
    assert len(pinned(result.new_node_claims)) == 2
    assert len(result.new_node_claims) == 2
    waiting = {p.key for p in pods} - {p.key for c in result.new_node_claims for p in c.pods}
    assert len(waiting) == 1
    (key,) = waiting
    assert result.errors[key] == COULD_NOT_RESERVE
    assert result.awaiting_reservation == {key}


def test_fallback_mode_places_the_rest_on_other_capacity() -> None:
    result = solve(
        big_pods(3), [], [node_pool(instance_types=[reserved_type(capacity=2)])], FALLBACK
    )
    assert not result.errors
    assert len(result.new_node_claims) == 3
    assert len(pinned(result.new_node_claims)) == 2
    (other,) = [c for c in result.new_node_claims if reserved_ids(c) is None]
    assert other.requirements[CAPACITY_TYPE_LABEL].values == {"spot", "on-demand", "reserved"}


def test_no_fallback_to_a_lighter_nodepool_while_a_reservation_is_compatible() -> None:
    heavy = node_pool("heavy", weight=10, instance_types=[reserved_type(capacity=1)])
    light = node_pool("light", weight=1, instance_types=[plain_type()])
    result = solve(big_pods(2), [], [heavy, light])
    assert [c.node_pool for c in result.new_node_claims] == ["heavy"]
    assert len(result.awaiting_reservation) == 1

    # Disruption simulations use Fallback: the lighter pool takes the second pod.
    result = solve(big_pods(2), [], [heavy, light], FALLBACK)
    assert sorted(c.node_pool for c in result.new_node_claims) == ["heavy", "heavy"]
    assert len(pinned(result.new_node_claims)) == 1


def test_pods_that_cannot_use_the_reservation_are_not_held_back() -> None:
    pool = node_pool(instance_types=[reserved_type(capacity=1)])
    on_demand = pod("3", "1Gi", node_selector={CAPACITY_TYPE_LABEL: "on-demand"})
    elsewhere = pod("3", "1Gi", node_selector={ZONE_LABEL: ZONES[2]})
    result = solve([*big_pods(1), on_demand, elsewhere], [], [pool])
    assert not result.errors
    by_pod = {p.key: c for c in result.new_node_claims for p in c.pods}
    assert reserved_ids(by_pod[on_demand.key]) is None
    assert by_pod[on_demand.key].requirements[CAPACITY_TYPE_LABEL].values == {"on-demand"}
    assert by_pod[elsewhere.key].requirements[ZONE_LABEL].values == {ZONES[2]}
    assert len(pinned(result.new_node_claims)) == 1


def test_one_reservation_shared_by_two_nodepools_is_counted_once_at_its_lowest_capacity() -> None:
    first = node_pool("first", weight=10, instance_types=[reserved_type(capacity=1)])
    second = node_pool("second", weight=5, instance_types=[reserved_type("large-b", capacity=3)])
    result = solve(big_pods(3), [], [first, second])
    assert len(result.new_node_claims) == 1
    assert len(result.awaiting_reservation) == 2


def test_pods_sharing_a_nodeclaim_take_one_slot_of_the_reservation() -> None:
    pods = [pod("500m", "256Mi") for _ in range(6)]
    result = solve(pods, [], [node_pool(instance_types=[reserved_type(capacity=1)])])
    assert not result.errors
    (claim,) = result.new_node_claims
    assert len(claim.pods) == 6
    assert reserved_ids(claim) == {"r-1"}


def test_a_pod_that_would_strip_a_claim_of_its_reservation_opens_its_own() -> None:
    pool = node_pool(instance_types=[reserved_type(capacity=1)])
    first = pod("1", "1Gi")
    elsewhere = pod("1", "1Gi", node_selector={ZONE_LABEL: ZONES[1]})
    result = solve([first, elsewhere], [], [pool])
    assert not result.errors
    by_pod = {p.key: c for c in result.new_node_claims for p in c.pods}
    assert by_pod[first.key] is not by_pod[elsewhere.key]
    assert reserved_ids(by_pod[first.key]) == {"r-1"}
    assert by_pod[elsewhere.key].requirements[ZONE_LABEL].values == {ZONES[1]}


def test_a_full_reservation_reported_unavailable_lets_pods_use_other_capacity() -> None:
    pool = node_pool(instance_types=[reserved_type(capacity=0, available=False)])
    result = solve(big_pods(2), [], [pool])
    assert not result.errors
    assert len(result.new_node_claims) == 2
    assert not pinned(result.new_node_claims)


def test_a_reservation_with_no_room_left_but_still_listed_keeps_pods_waiting() -> None:
    result = solve(big_pods(1), [], [node_pool(instance_types=[reserved_type(capacity=0)])])
    assert not result.new_node_claims
    assert len(result.awaiting_reservation) == 1


def test_waiting_for_a_reservation_does_not_relax_preferences() -> None:
    pool = node_pool(instance_types=[reserved_type(capacity=1)])
    prefers = [
        pod("3", "1Gi", preferred=[(10, [(ZONE_LABEL, "In", [ZONES[0]])])]) for _ in range(2)
    ]
    result = solve(prefers, [], [pool])
    assert len(result.new_node_claims) == 1
    assert len(result.awaiting_reservation) == 1


def test_several_reservations_are_used_up_in_turn() -> None:
    pool = node_pool(
        instance_types=[
            reserved_type("large-a", capacity=1, reservation="r-a", zone=ZONES[0]),
            reserved_type("large-b", capacity=2, reservation="r-b", zone=ZONES[1]),
        ]
    )
    result = solve(big_pods(4), [], [pool])
    # A claim holds every reservation it could still launch into until it is finished
    # (pessimistic, as Karpenter's): the first claim counts against both, so only two claims
    # get reserved capacity in this pass and two pods wait for the next.
    assert [reserved_ids(c) for c in result.new_node_claims] == [{"r-a", "r-b"}, {"r-b"}]
    assert [[it.name for it in c.instance_types] for c in result.new_node_claims] == [
        ["large-a", "large-b"],
        ["large-b"],
    ]
    assert len(result.awaiting_reservation) == 2


def test_pools_without_reservations_are_untouched() -> None:
    result = solve(big_pods(3), [], [node_pool(instance_types=[plain_type()])])
    assert not result.errors
    assert not result.awaiting_reservation
    assert not pinned(result.new_node_claims)


def test_a_pod_that_selects_a_reservation_never_lands_outside_it() -> None:
    options = SolverOptions(well_known_labels=frozenset({LABEL}))
    selects = pod("3", "1Gi", node_selector={LABEL: "r-1"})
    result = solve([selects], [], [node_pool(instance_types=[reserved_type()])], options)
    (claim,) = result.new_node_claims
    assert reserved_ids(claim) == {"r-1"}
    assert claim.requirements[CAPACITY_TYPE_LABEL].values == {"reserved"}

    full = node_pool(instance_types=[reserved_type(capacity=0, available=False), plain_type()])
    result = solve([selects], [], [full], options)
    assert not result.new_node_claims
    assert "no instance type has the required offering" in result.errors[selects.key]
    assert not result.awaiting_reservation
