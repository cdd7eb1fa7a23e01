"""Integer bounds of requirements: Gte and Lte, mixed bounds collapsing, and what Karpenter
reads as an integer."""

from __future__ import annotations

import pytest

from nodewright.scheduling.requirements import DOES_NOT_EXIST, Requirement, RequirementError
from tests.scheduling.requirement_samples import MAX_INT64, req


@pytest.mark.parametrize(
    ("requirement", "inside", "outside"),
    [
        (req("Gte", "2"), ["2", "3", "100"], ["1", "0"]),
        (req("Lte", "8"), ["8", "7", "0"], ["9", "10"]),
        (req("Gte", "2").intersection(req("Lte", "8")), ["2", "5", "8"], ["1", "9"]),
        (req("Gte", "0"), ["0"], ["-1"]),
        (req("Lte", "0"), ["0", "-5"], ["1"]),
    ],
)
def test_inclusive_bounds(requirement: Requirement, inside: list[str], outside: list[str]) -> None:
    assert all(requirement.has(v) for v in inside)
    assert not any(requirement.has(v) for v in outside)


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (req("Gte", "2"), req("Gt", "1"), req("Gt", "1")),  # the same set
        (req("Lte", "8"), req("Lt", "9"), req("Lt", "9")),
        (req("Gt", "4"), req("Gte", "5"), req("Gte", "5")),  # redundant bounds collapse
        (req("Gt", "5"), req("Gte", "5"), req("Gte", "6")),  # Gt is the stricter
        (req("Gt", "3"), req("Gte", "6"), req("Gte", "6")),
        (req("Lt", "5"), req("Lte", "5"), req("Lte", "4")),
        (req("Lt", "9"), req("Lte", "5"), req("Lte", "5")),
    ],
)
def test_bounds_of_mixed_operators_collapse(
    left: Requirement, right: Requirement, expected: Requirement
) -> None:
    assert left.intersection(right) == expected
    assert right.intersection(left) == expected


def test_gt_the_largest_integer_is_empty() -> None:
    nothing = req("Gt", str(MAX_INT64))
    assert nothing.operator == DOES_NOT_EXIST
    assert len(nothing) == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("5", True),
        ("+5", True),  # Go's Atoi takes a sign
        ("-3", False),
        (" 5", False),  # ... but no spaces,
        ("5_0", False),  # no digit separators,
        ("\u0665", False),  # no non-ASCII digits (ARABIC-INDIC FIVE)
        ("99999999999999999999", False),  # and nothing beyond 64 bits
        ("5.0", False),
        ("", False),
    ],
)
def test_only_what_karpenter_reads_as_an_integer_meets_a_bound(value: str, expected: bool) -> None:
    assert req("Gt", "1").has(value) is expected


@pytest.mark.parametrize("value", ["x", "1.5", " 1", "99999999999999999999", ""])
def test_bounds_need_a_64_bit_integer(value: str) -> None:
    with pytest.raises(RequirementError):
        req("Gt", value)
