"""Algebraic laws of requirements that Karpenter's tables only sample, checked with hypothesis."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.api.labels import ZONE_LABEL
from nodewright.scheduling.requirements import Requirement, Requirements
from tests.scheduling.requirement_samples import K

UNIVERSE = ("A", "B", "1", "2", "5", "9")
PROBE_VALUES = (*UNIVERSE, "0", "3", "10", "-1", "x", "")


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    operator = draw(
        st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"])
    )
    if operator in ("Gt", "Lt", "Gte", "Lte"):
        values: list[str] = [str(draw(st.integers(-2, 11)))]
    elif operator in ("In", "NotIn"):
        values = draw(st.lists(st.sampled_from(UNIVERSE), max_size=4))
    else:
        values = []
    min_values = draw(st.none() | st.integers(1, 3))
    return Requirement.of(K, operator, values, min_values)


@st.composite
def combined(draw: st.DrawFn) -> Requirement:
    """A sample or the intersection of a few, so bounded complements appear too."""
    parts = draw(st.lists(requirements(), min_size=1, max_size=3))
    result = parts[0]
    for part in parts[1:]:
        result = result.intersection(part)
    return result


@settings(max_examples=300)
@given(combined(), combined())
def test_intersection_is_commutative(a: Requirement, b: Requirement) -> None:
    assert a.intersection(b) == b.intersection(a)


@settings(max_examples=300)
@given(combined(), combined(), combined())
def test_intersection_is_associative(a: Requirement, b: Requirement, c: Requirement) -> None:
    assert a.intersection(b).intersection(c) == a.intersection(b.intersection(c))


@settings(max_examples=200)
@given(combined())
def test_intersection_is_idempotent(a: Requirement) -> None:
    assert a.intersection(a) == a


@settings(max_examples=300)
@given(combined(), combined())
def test_intersection_holds_exactly_the_shared_values(a: Requirement, b: Requirement) -> None:
    both = a.intersection(b)
    for value in PROBE_VALUES:
        assert both.has(value) == (a.has(value) and b.has(value)), value


@settings(max_examples=300)
@given(combined(), combined(), st.booleans())
def test_compatible_is_symmetric_when_both_sides_define_the_key(
    a: Requirement, b: Requirement, well_known: bool
) -> None:
    key = ZONE_LABEL if well_known else "example.com/custom"
    left = Requirements([dataclasses.replace(a, key=key)])
    right = Requirements([dataclasses.replace(b, key=key)])
    assert left.compatible(right) == right.compatible(left)
    assert left.compatible(right) == (left.compatibility_problems(right) == [])


@settings(max_examples=300)
@given(combined(), combined())
def test_a_shared_value_makes_requirements_compatible(a: Requirement, b: Requirement) -> None:
    left, right = Requirements([a]), Requirements([b])
    if any(a.has(v) and b.has(v) for v in PROBE_VALUES):
        assert left.compatible(right)
    if not left.compatible(right):
        # Karpenter tolerates two exclusions even when they leave nothing, never more.
        assert not any(a.has(v) and b.has(v) for v in PROBE_VALUES)


@settings(max_examples=200)
@given(st.lists(combined(), min_size=1, max_size=4), st.randoms())
def test_merging_does_not_depend_on_order(parts: list[Requirement], rng: random.Random) -> None:
    shuffled = list(parts)
    rng.shuffle(shuffled)
    assert Requirements(parts) == Requirements(shuffled)


@settings(max_examples=200)
@given(combined(), st.sampled_from(PROBE_VALUES))
def test_a_node_label_matches_exactly_the_values_the_set_has(a: Requirement, value: str) -> None:
    assert Requirements([a]).matches_labels({K: value}) == a.has(value)


@settings(max_examples=300)
@given(combined(), combined())
def test_two_sets_overlap_exactly_when_their_intersection_has_a_value(
    a: Requirement, b: Requirement
) -> None:
    assert a.overlaps(b) == (len(a.intersection(b)) > 0)


@settings(max_examples=300)
@given(
    st.lists(combined(), max_size=2),
    st.lists(combined(), max_size=2),
    st.booleans(),
)
def test_requirements_meet_exactly_when_they_have_no_intersection_problem(
    mine: list[Requirement], theirs: list[Requirement], other_key: bool
) -> None:
    """``meets`` is ``intersects`` without the words, with keys only one side defines."""
    first = Requirements([*mine[:1], *(dataclasses.replace(r, key=ZONE_LABEL) for r in mine[1:])])
    moved = [dataclasses.replace(r, key=ZONE_LABEL) for r in theirs[1:]]
    second = Requirements([*theirs[:1], *moved] if other_key else theirs[:1])
    assert first.meets(second) == (not first.intersects(second))
    assert second.meets(first) == (not second.intersects(first))
