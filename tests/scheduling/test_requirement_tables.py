"""Karpenter's tables for one requirement on one key: intersections (with and without
minValues), membership, operator, length and string.

The samples and the grid notation are in :mod:`tests.scheduling.requirement_samples`.
"""

from __future__ import annotations

import dataclasses

import pytest

from nodewright.scheduling.requirements import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, Requirement
from tests.scheduling.requirement_samples import (
    FLEXIBILITY,
    MAX_INT64,
    ORDER,
    PROBES,
    RESULTS,
    SAMPLES,
    K,
    flags,
    grid,
    req,
)

# -- Intersection ----------------------------------------------------------------------------

#          *     -     A     B     AB    !A    1     9     19    !12   >1    >9    <1    <9
INTERSECTIONS = grid("""
*   :  *     -     A     B     AB    !A    1     9     19    !12   >1    >9    <1    <9
-   :  -     -     -     -     -     -     -     -     -     -     -     -     -     -
A   :  A     -     A     -     A     -     -     -     -     A     -     -     -     -
B   :  B     -     -     B     B     B     -     -     -     B     -     -     -     -
AB  :  AB    -     A     B     AB    B     -     -     -     AB    -     -     -     -
!A  :  !A    -     -     B     B     !A    1     9     19    !A12  >1    >9    <1    <9
1   :  1     -     -     -     -     1     1     -     1     -     -     -     -     1
9   :  9     -     -     -     -     9     -     9     9     9     9     -     -     -
19  :  19    -     -     -     -     19    1     9     19    9     9     -     -     1
!12 :  !12   -     A     B     AB    !A12  -     9     9     !12   >1!2  >9    <1    <9!12
>1  :  >1    -     -     -     -     >1    -     9     9     >1!2  >1    >9    -     2..8
>9  :  >9    -     -     -     -     >9    -     -     -     >9    >9    >9    -     -
<1  :  <1    -     -     -     -     <1    -     -     -     <1    -     -     <1    <1
<9  :  <9    -     -     -     -     <9    1     -     1     <9!12 2..8  -     <1    <9
""")


@pytest.mark.parametrize(("left", "right"), sorted(INTERSECTIONS))
def test_intersection(left: str, right: str) -> None:
    expected = RESULTS[INTERSECTIONS[(left, right)]]
    assert SAMPLES[left].intersection(SAMPLES[right]) == expected


def with_min_values(requirement: Requirement, min_values: int | None) -> Requirement:
    return dataclasses.replace(requirement, min_values=min_values)


@pytest.mark.parametrize(("left", "right"), sorted(INTERSECTIONS))
def test_intersection_with_min_values_keeps_the_set_and_takes_the_larger(
    left: str, right: str
) -> None:
    """Karpenter's two flexibility tables: the values are those of the plain intersection,
    minValues is the larger of the two sides (one side without minValues counts as none)."""
    expected_set = RESULTS[INTERSECTIONS[(left, right)]]
    flexible_left = with_min_values(SAMPLES[left], FLEXIBILITY[left])
    flexible_right = with_min_values(SAMPLES[right], FLEXIBILITY[right])
    assert flexible_left.intersection(SAMPLES[right]) == with_min_values(
        expected_set, FLEXIBILITY[left]
    )
    assert flexible_left.intersection(flexible_right) == with_min_values(
        expected_set, max(FLEXIBILITY[left], FLEXIBILITY[right])
    )


def test_empty_integer_window_keeps_min_values() -> None:
    assert req("Gt", "9", min_values=3).intersection(req("Lt", "1")) == Requirement(
        K, False, frozenset(), min_values=3
    )


# -- Has, Operator, Len, String --------------------------------------------------------------

MEMBERSHIP = flags(
    """
*   : YYYYY
-   : .....
A   : Y....
B   : .Y...
AB  : YY...
!A  : .YYYY
1   : ..Y..
9   : ....Y
19  : ..Y.Y
!12 : YY..Y
>1  : ...YY
>9  : .....
<1  : .....
<9  : ..YY.
""",
    PROBES,
)


@pytest.mark.parametrize(("token", "value"), sorted(MEMBERSHIP))
def test_has(token: str, value: str) -> None:
    assert SAMPLES[token].has(value) is MEMBERSHIP[(token, value)]


#: (operator, Len, String) of each sample. Bounded sets read as Exists with their bounds.
DESCRIPTIONS = {
    "*": (EXISTS, MAX_INT64, "key Exists"),
    "-": (DOES_NOT_EXIST, 0, "key DoesNotExist"),
    "A": (IN, 1, "key In [A]"),
    "B": (IN, 1, "key In [B]"),
    "AB": (IN, 2, "key In [A B]"),
    "!A": (NOT_IN, MAX_INT64 - 1, "key NotIn [A]"),
    "1": (IN, 1, "key In [1]"),
    "9": (IN, 1, "key In [9]"),
    "19": (IN, 2, "key In [1 9]"),
    "!12": (NOT_IN, MAX_INT64 - 2, "key NotIn [1 2]"),
    ">1": (EXISTS, MAX_INT64, "key Exists >=2"),
    ">9": (EXISTS, MAX_INT64, "key Exists >=10"),
    "<1": (EXISTS, MAX_INT64, "key Exists <=0"),
    "<9": (EXISTS, MAX_INT64, "key Exists <=8"),
}


@pytest.mark.parametrize("token", ORDER)
def test_operator_length_and_string(token: str) -> None:
    operator, length, text = DESCRIPTIONS[token]
    sample = SAMPLES[token]
    assert sample.operator == operator
    assert len(sample) == length
    assert str(sample) == text


@pytest.mark.parametrize(
    ("requirement", "text"),
    [
        (SAMPLES[">1"].intersection(SAMPLES["<9"]), "key Exists >=2 <=8"),
        (SAMPLES[">9"].intersection(SAMPLES["<1"]), "key DoesNotExist"),
        (req("In", "A", "B", min_values=2), "key In [A B] minValues 2"),
        (req("Gt", "1", min_values=1), "key Exists >=2 minValues 1"),
        (req("In", *"gfedcba"), "key In [a b c d e and 2 others]"),
    ],
)
def test_string_of_combined_sets(requirement: Requirement, text: str) -> None:
    assert str(requirement) == text


# -- Gte and Lte ----------------------------------------------------------------------------
