"""What a PodDisruptionBudget allows, as kube-controller-manager works it out (one home for the
eviction check and the disruption controller), and each caller's policy for what the
arithmetic does not cover: the eviction check refuses an unreadable value, the disruption
controller lets nothing go under it and never counts below 0."""

from __future__ import annotations

import pytest

from nodewright.api.apps import PodDisruptionBudget, PodDisruptionBudgetSpec
from nodewright.api.core import LabelSelector, Pod, PodStatus
from nodewright.api.meta import ObjectMeta
from nodewright.cluster import EvictionBlockedError, InvalidError
from nodewright.cluster.budgetallowance import desired_healthy, disruptions_allowed, scaled
from nodewright.cluster.budgetcounts import BudgetCount
from nodewright.cluster.eviction import EvictionCheck
from nodewright.cluster.state import ClusterState
from nodewright.controllers.disruption.pdbs import PdbLimits
from tests.builders import pod


@pytest.mark.parametrize(
    ("value", "total", "pods"),
    [
        (3, 10, 3),  # an int is a number of pods, whatever the total
        (0, 10, 0),
        ("50%", 10, 5),
        ("50%", 5, 3),  # 2.5 rounds up
        ("33%", 10, 4),  # 3.3 rounds up
        ("1%", 150, 2),  # 1.5 rounds up
        ("0%", 7, 0),
        ("100%", 7, 7),
        (" 25% ", 4, 1),
        ("2", 10, 2),  # a plain number given as a string
    ],
)
def test_a_value_is_a_number_of_pods_or_a_percentage_rounded_up(
    value: int | str, total: int, pods: int
) -> None:
    assert scaled(value, total) == pods


@pytest.mark.parametrize(
    ("value", "message"),
    [("half%", "invalid percentage 'half%'"), ("many", "invalid int-or-percentage 'many'")],
)
def test_an_unreadable_value_is_an_error_naming_it(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        scaled(value, 10)


@pytest.mark.parametrize(
    ("spec", "expected", "desired"),
    [
        (PodDisruptionBudgetSpec(min_available=2), 5, 2),
        (PodDisruptionBudgetSpec(min_available="50%"), 5, 3),  # 2.5 pods rounds up to 3
        (PodDisruptionBudgetSpec(max_unavailable=1), 5, 4),
        (PodDisruptionBudgetSpec(max_unavailable="25%"), 5, 3),  # 1.25 unavailable: 2
        (PodDisruptionBudgetSpec(max_unavailable=10), 3, 0),  # never below 0
        (PodDisruptionBudgetSpec(max_unavailable="100%"), 3, 0),
        (PodDisruptionBudgetSpec(max_unavailable=0), 3, 3),
        (PodDisruptionBudgetSpec(), 4, 4),  # neither: policy/v1's minAvailable 100%
    ],
)
def test_the_pods_that_must_stay_healthy(
    spec: PodDisruptionBudgetSpec, expected: int, desired: int
) -> None:
    assert desired_healthy(spec, expected) == desired


def test_disruptions_allowed_are_the_healthy_pods_beyond_the_desired_ones() -> None:
    spec = PodDisruptionBudgetSpec(min_available="50%")
    assert disruptions_allowed(spec, BudgetCount(healthy=5, expected=4)) == 3
    assert disruptions_allowed(spec, BudgetCount(healthy=2, expected=4)) == 0
    assert disruptions_allowed(spec, BudgetCount(healthy=1, expected=4)) == -1


# --- each caller's policy --------------------------------------------------------------------


def _cluster(spec: PodDisruptionBudgetSpec, running: int) -> ClusterState:
    """``running`` Running pods without a controller (each expected) under one budget."""
    state = ClusterState()
    for index in range(running):
        made = pod(f"web-{index}", labels={"app": "web"})
        made.status = PodStatus(phase="Running")
        state.apply(Pod, ("default", made.name), None, made)
    spec.selector = LabelSelector(match_labels={"app": "web"})
    budget = PodDisruptionBudget(metadata=ObjectMeta(name="web", namespace="default"), spec=spec)
    state.apply(PodDisruptionBudget, ("default", "web"), None, budget)
    return state


def _first_pod(state: ClusterState) -> Pod:
    return next(state.sorted(Pod, "default"))


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        (PodDisruptionBudgetSpec(min_available="50%"), 1),  # 3 pods: 2 stay
        (PodDisruptionBudgetSpec(max_unavailable="50%"), 2),  # 1.5 may go: 2
        (PodDisruptionBudgetSpec(min_available=3), 0),
        (PodDisruptionBudgetSpec(min_available=5), 0),  # -2 counts as 0
    ],
)
def test_the_disruption_controller_reads_the_same_allowance_never_below_zero(
    spec: PodDisruptionBudgetSpec, allowed: int
) -> None:
    limits = PdbLimits.load(_cluster(spec, running=3))
    assert [limit.allowed for limit in limits.matching(pod("web-0", labels={"app": "web"}))] == [
        allowed
    ]


def test_the_eviction_check_lets_a_pod_go_only_while_the_budget_allows_one() -> None:
    allows = _cluster(PodDisruptionBudgetSpec(max_unavailable="34%"), running=3)  # 1.02 -> 2
    EvictionCheck(allows)(_first_pod(allows))
    full = _cluster(PodDisruptionBudgetSpec(min_available="67%"), running=3)  # 2.01 -> 3
    with pytest.raises(EvictionBlockedError, match="disruption budget web"):
        EvictionCheck(full)(_first_pod(full))


@pytest.mark.parametrize("field", ["min_available", "max_unavailable"])
def test_an_unreadable_budget_is_refused_by_the_eviction_check_and_lets_nothing_go_in_disruption(
    field: str,
) -> None:
    # Reading manifests refuses such a budget; built in code, each caller has its policy.
    state = _cluster(PodDisruptionBudgetSpec(**{field: "most"}), running=3)
    with pytest.raises(InvalidError, match="invalid int-or-percentage 'most'"):
        EvictionCheck(state)(_first_pod(state))
    limits = PdbLimits.load(state)
    assert [limit.allowed for limit in limits.matching(pod("web-0", labels={"app": "web"}))] == [0]
