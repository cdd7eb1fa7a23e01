"""The scheduling benchmark's pod mixes and result checks, on batches small enough to be quick.

Nothing here is timed: these tests keep the scheduling benchmark honest (its pods are what
Karpenter's benchmark builds, its validator notices broken constraints and accepts sound
placements). The LP bound needs scipy, whose import alone can take seconds, so it is tested
in ``test_bench_lp_bound.py``.
"""

from __future__ import annotations

from collections import Counter

import pytest

from nodewright.api import core as api
from nodewright.api.labels import HOSTNAME_LABEL, NODEPOOL_LABEL, ZONE_LABEL
from nodewright.scheduling.model import NewNodeClaim, PodRequest, SchedulingResult, SolverOptions
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.solver.scheduler import solve
from tests.bench_modules import load_bench

cases = load_bench("scheduling_cases")
validation = load_bench("scheduling_validation")


@pytest.fixture(scope="module")
def catalog() -> list[object]:
    return cases.instance_types()  # type: ignore[no-any-return]


def _kind(pod: api.Pod) -> str:
    spread = pod.spec.topology_spread_constraints
    if spread:
        return f"spread {spread[0].topology_key}"
    affinity = pod.spec.affinity
    if affinity is not None and affinity.pod_affinity is not None:
        return "affinity"
    if affinity is not None and affinity.pod_anti_affinity is not None:
        return "anti-affinity"
    return "plain"


def test_diverse_mix_has_a_fifth_of_each_kind_and_the_remainder_plain() -> None:
    pods = cases.diverse_pods(53)

    kinds = Counter(_kind(p) for p in pods)

    assert kinds == {
        "plain": 13,
        f"spread {ZONE_LABEL}": 10,
        f"spread {HOSTNAME_LABEL}": 10,
        "affinity": 10,
        "anti-affinity": 10,
    }
    assert len({p.metadata.uid for p in pods}) == 53
    assert cases.diverse_pods(53) == pods  # seeded


def test_diverse_mix_through_the_solver_is_placed_and_checked() -> None:
    pods = cases.diverse_pods(50)
    requests = cases.pod_requests(pods)

    result = solve(requests, [], [cases.node_pool(cases.instance_types(40))])
    violations, unscheduled = validation.validate(pods, requests, result)

    assert unscheduled == 0
    assert result.errors == {}
    assert violations == []
    assert len(result.new_node_claims) >= 10  # one per anti-affinity pod


def test_plain_mix_result_has_no_violations(catalog: list[object]) -> None:
    pods = cases.plain_pods(300)
    requests = cases.pod_requests(pods)

    result = solve(requests, [], [cases.node_pool(catalog)])

    assert validation.validate(pods, requests, result) == ([], 0)


def test_preference_pods_schedule_with_either_policy() -> None:
    pods = cases.preference_pods(30)
    requests = cases.pod_requests(pods)
    pool = cases.node_pool(cases.instance_types(40))

    for policy in ("Respect", "Ignore"):
        result = solve(requests, [], [pool], SolverOptions(preference_policy=policy))
        assert validation.validate(pods, requests, result) == ([], 0)


# -- the validator on hand-made results ---------------------------------------------------


def _claim(catalog: list[object], pods: list[PodRequest], zone: str | None) -> NewNodeClaim:
    """A NodeClaim offering only the catalog's 64-CPU type, which fits any pods used here."""
    labels = {NODEPOOL_LABEL: "default"} | ({ZONE_LABEL: zone} if zone else {})
    return NewNodeClaim(
        node_pool="default",
        requirements=Requirements.from_labels(labels),
        instance_types=[catalog[min(63, len(catalog) - 1)]],  # type: ignore[list-item]
        pods=pods,
        requests={},
    )


def _placed(
    catalog: list[object], pods: list[api.Pod], layout: list[tuple[list[int], str | None]]
) -> tuple[list[PodRequest], SchedulingResult]:
    requests = cases.pod_requests(pods)
    claims = [_claim(catalog, [requests[i] for i in idx], zone) for idx, zone in layout]
    return requests, SchedulingResult(new_node_claims=claims)


def _kinds(
    pods: list[api.Pod], requests: list[PodRequest], result: SchedulingResult
) -> Counter[str]:
    violations, _ = validation.validate(pods, requests, result)
    return Counter(v.kind for v in violations)


def test_validator_flags_anti_affinity_pods_sharing_a_node(catalog: list[object]) -> None:
    factory = cases.PodFactory()
    pods = [factory.anti_affinity(HOSTNAME_LABEL) for _ in range(3)]

    apart = _placed(catalog, pods, [([0], None), ([1], None), ([2], None)])
    together = _placed(catalog, pods, [([0, 1], None), ([2], None)])

    assert _kinds(pods, *apart) == {}
    assert _kinds(pods, *together) == {"anti-affinity": 2}


def test_validator_wants_an_affinity_group_in_one_pinned_zone(catalog: list[object]) -> None:
    factory = cases.PodFactory()
    pods = [factory.self_affinity(ZONE_LABEL) for _ in range(12)]
    groups: dict[str, list[int]] = {}
    for index, pod in enumerate(pods):
        groups.setdefault(pod.metadata.labels["my-affininity"], []).append(index)
    members = max(groups.values(), key=len)
    pods = [pods[i] for i in members]
    assert len(pods) >= 3
    half = len(pods) // 2
    first, rest = list(range(half)), list(range(half, len(pods)))

    one_zone = _placed(catalog, pods, [(first, "test-zone-2"), (rest, "test-zone-2")])
    two_zones = _placed(catalog, pods, [(first, "test-zone-1"), (rest, "test-zone-2")])
    unpinned = _placed(catalog, pods, [(first, None), (rest, None)])
    one_node = _placed(catalog, pods, [(first + rest, None)])

    assert _kinds(pods, *one_zone) == {}
    assert _kinds(pods, *two_zones) == {"affinity": 1}
    assert _kinds(pods, *unpinned) == {"affinity": len(pods)}
    assert _kinds(pods, *one_node) == {}


def test_validator_bounds_spread_by_max_skew_over_the_emptiest_zone(
    catalog: list[object],
) -> None:
    constraint = api.TopologySpreadConstraint(
        max_skew=1,
        topology_key=ZONE_LABEL,
        when_unsatisfiable="DoNotSchedule",
        label_selector=api.LabelSelector(match_labels={"app": "web"}),
    )
    factory = cases.PodFactory()
    pods = [factory.pod({"app": "web"}, {"cpu": "100m"}, spread=[constraint]) for _ in range(6)]

    balanced = _placed(
        catalog, pods, [([0, 3], "test-zone-1"), ([1, 4], "test-zone-2"), ([2, 5], "test-zone-3")]
    )
    skewed = _placed(catalog, pods, [([0, 1, 2, 3], "test-zone-1"), ([4, 5], "test-zone-2")])
    unpinned = _placed(catalog, pods, [([0, 1, 2, 3, 4, 5], None)])

    assert _kinds(pods, *balanced) == {}
    assert _kinds(pods, *skewed) == {"spread": 2}  # zones 1 and 2 against an empty zone 3
    assert _kinds(pods, *unpinned) == {"spread": 6}


def test_validator_flags_double_placement_and_an_overfull_node(catalog: list[object]) -> None:
    pods = cases.plain_pods(3)
    requests = cases.pod_requests(pods)
    tiny = cases.instance_types(1)  # 1 CPU, 0.9 allocatable
    heavy = cases.pod_requests([cases.PodFactory().pod({}, {"cpu": "1"})])
    twice = SchedulingResult(
        new_node_claims=[
            _claim(catalog, [requests[0], requests[1]], None),
            _claim(catalog, [requests[1], requests[2]], None),
        ]
    )
    overfull = SchedulingResult(new_node_claims=[_claim(tiny, heavy, None)])

    assert _kinds(pods, requests, twice) == {"placement": 1}
    assert _kinds([], heavy, overfull) == {"fit": 1}
