"""Karpenter's requirement algebra (``pkg/scheduling/requirement(s)_test.go``) as tables."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nodewright.scheduling.requirements import (
    Requirement,
    RequirementError,
    Requirements,
)

K = "key"
Spec = tuple[str, Sequence[str]]


def req(operator: str, *values: str, min_values: int | None = None) -> Requirement:
    return Requirement.of(K, operator, values, min_values)


EXISTS = req("Exists")
DNE = req("DoesNotExist")
IN_A = req("In", "A")
IN_B = req("In", "B")
IN_AB = req("In", "A", "B")
NOT_IN_A = req("NotIn", "A")
NOT_IN_B = req("NotIn", "B")
NOT_IN_AB = req("NotIn", "A", "B")
IN_1_5_9 = req("In", "1", "5", "9")
GT_1 = req("Gt", "1")
GT_9 = req("Gt", "9")
LT_1 = req("Lt", "1")
LT_9 = req("Lt", "9")


def exists_between(low: int | None, high: int | None) -> Requirement:
    """``Exists`` bounded to integers strictly between ``low`` and ``high``."""
    return Requirement(K, True, frozenset(), low, high)


INTERSECTIONS = [
    # Exists is the identity, DoesNotExist absorbs
    (EXISTS, EXISTS, EXISTS),
    (EXISTS, DNE, DNE),
    (EXISTS, IN_A, IN_A),
    (EXISTS, NOT_IN_A, NOT_IN_A),
    (EXISTS, GT_1, GT_1),
    (DNE, IN_A, DNE),
    (DNE, NOT_IN_A, DNE),
    (DNE, GT_1, DNE),
    # finite sets intersect
    (IN_A, IN_B, DNE),
    (IN_AB, IN_A, IN_A),
    (IN_A, IN_A, IN_A),
    # complement against finite: set difference
    (IN_AB, NOT_IN_A, IN_B),
    (NOT_IN_A, IN_AB, IN_B),
    (IN_A, NOT_IN_A, DNE),
    (NOT_IN_AB, IN_A, DNE),
    # complement against complement: excluded values add up
    (NOT_IN_A, NOT_IN_B, NOT_IN_AB),
    (NOT_IN_A, NOT_IN_A, NOT_IN_A),
    # numeric bounds tighten and filter values
    (GT_1, LT_9, exists_between(1, 9)),
    (GT_1, GT_9, GT_9),
    (LT_1, LT_9, LT_1),
    (GT_9, LT_1, DNE),
    (GT_1, req("Lt", "2"), DNE),  # nothing strictly between 1 and 2
    (GT_1, req("Lt", "3"), exists_between(1, 3)),
    (IN_1_5_9, GT_1, req("In", "5", "9")),
    (IN_1_5_9, LT_9, req("In", "1", "5")),
    (IN_1_5_9, exists_between(1, 9), req("In", "5")),
    (IN_A, GT_1, DNE),  # non-integers never satisfy a bound
    (NOT_IN_A, GT_1, GT_1),  # "A" is outside the bound anyway
    (req("Gte", "5"), req("Lte", "5"), exists_between(4, 6)),
    (req("Gte", "5"), IN_1_5_9, req("In", "5", "9")),
    (req("Lte", "5"), IN_1_5_9, req("In", "1", "5")),
]


@pytest.mark.parametrize(("left", "right", "expected"), INTERSECTIONS)
def test_intersection(left: Requirement, right: Requirement, expected: Requirement) -> None:
    assert left.intersection(right) == expected
    assert right.intersection(left) == expected


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (req("In", "A", min_values=2), req("In", "A", "B"), 2),
        (req("In", "A", min_values=2), req("In", "A", min_values=3), 3),
        (req("Exists"), req("NotIn", "A", min_values=1), 1),
        (req("In", "A"), req("In", "A"), None),
    ],
)
def test_intersection_takes_the_larger_min_values(
    left: Requirement, right: Requirement, expected: int | None
) -> None:
    assert left.intersection(right).min_values == expected
    assert right.intersection(left).min_values == expected


@pytest.mark.parametrize(
    ("requirement", "value", "expected"),
    [
        (IN_A, "A", True),
        (IN_A, "B", False),
        (NOT_IN_A, "A", False),
        (NOT_IN_A, "B", True),
        (EXISTS, "anything", True),
        (DNE, "anything", False),
        (GT_1, "2", True),
        (GT_1, "1", False),
        (GT_1, "x", False),
        (LT_9, "8", True),
        (LT_9, "9", False),
        (req("Gte", "5"), "5", True),
        (req("Gte", "5"), "4", False),
        (req("Lte", "5"), "5", True),
        (req("Lte", "5"), "6", False),
    ],
)
def test_has(requirement: Requirement, value: str, expected: bool) -> None:
    assert requirement.has(value) is expected


@pytest.mark.parametrize(
    ("requirement", "operator"),
    [
        (IN_A, "In"),
        (NOT_IN_A, "NotIn"),
        (EXISTS, "Exists"),
        (DNE, "DoesNotExist"),
        (GT_1, "Exists"),
        (LT_9, "Exists"),
        (req("In"), "DoesNotExist"),
    ],
)
def test_operator(requirement: Requirement, operator: str) -> None:
    assert requirement.operator == operator


@pytest.mark.parametrize(
    ("operator", "values"),
    [("Gt", ["x"]), ("Lt", []), ("Gt", ["1", "2"]), ("Near", ["1"])],
)
def test_invalid_requirements_are_rejected(operator: str, values: list[str]) -> None:
    with pytest.raises(RequirementError):
        Requirement.of(K, operator, values)


def test_deprecated_labels_are_normalised() -> None:
    assert Requirement.of("beta.kubernetes.io/arch", "In", ["amd64"]).key == "kubernetes.io/arch"
    assert (
        Requirement.of("failure-domain.beta.kubernetes.io/zone", "In", ["z"]).key
        == "topology.kubernetes.io/zone"
    )


@pytest.mark.parametrize(
    ("requirement", "text"),
    [
        (IN_AB, "key In [A B]"),
        (NOT_IN_A, "key NotIn [A]"),
        (EXISTS, "key Exists"),
        (DNE, "key DoesNotExist"),
        (GT_1, "key Exists >=2"),
        (exists_between(1, 9), "key Exists >=2 <=8"),
        (req("In", *"abcdefg"), "key In [a b c d e and 2 others]"),
        (req("In", "A", min_values=1), "key In [A] minValues 1"),
    ],
)
def test_string_form(requirement: Requirement, text: str) -> None:
    assert str(requirement) == text


# -- Requirements.compatible: well-known vs custom keys, NotIn/DoesNotExist asymmetry ---------

ZONE = "topology.kubernetes.io/zone"
CUSTOM = "example.com/team"


def reqs(*specs: tuple[str, str, Sequence[str]]) -> Requirements:
    return Requirements.of(*specs)


COMPATIBILITY = [
    # a well-known key the node pool does not define is allowed
    (reqs(), reqs((ZONE, "In", ["z1"])), True),
    (reqs(), reqs((ZONE, "Exists", [])), True),
    # a custom key must be defined ... unless the pod only excludes it
    (reqs(), reqs((CUSTOM, "In", ["a"])), False),
    (reqs(), reqs((CUSTOM, "Exists", [])), False),
    (reqs(), reqs((CUSTOM, "NotIn", ["a"])), True),
    (reqs(), reqs((CUSTOM, "DoesNotExist", [])), True),
    (reqs(), reqs((CUSTOM, "Gt", ["1"])), False),
    # defined keys must intersect
    (reqs((CUSTOM, "In", ["a"])), reqs((CUSTOM, "In", ["a"])), True),
    (reqs((CUSTOM, "In", ["a"])), reqs((CUSTOM, "In", ["b"])), False),
    (reqs((CUSTOM, "Exists", [])), reqs((CUSTOM, "In", ["b"])), True),
    (reqs((CUSTOM, "In", ["a"])), reqs((CUSTOM, "NotIn", ["a"])), False),
    (reqs((CUSTOM, "In", ["a"])), reqs((CUSTOM, "DoesNotExist", [])), False),
    (reqs((CUSTOM, "DoesNotExist", [])), reqs((CUSTOM, "In", ["a"])), False),
    (reqs((CUSTOM, "DoesNotExist", [])), reqs((CUSTOM, "Exists", [])), False),
    # ... except that two exclusions never conflict
    (reqs((CUSTOM, "DoesNotExist", [])), reqs((CUSTOM, "DoesNotExist", [])), True),
    (reqs((CUSTOM, "DoesNotExist", [])), reqs((CUSTOM, "NotIn", ["a"])), True),
    (reqs((CUSTOM, "NotIn", ["a"])), reqs((CUSTOM, "DoesNotExist", [])), True),
    (reqs((CUSTOM, "NotIn", ["a"])), reqs((CUSTOM, "NotIn", ["a"])), True),
    # bounds
    (reqs((CUSTOM, "In", ["5"])), reqs((CUSTOM, "Gt", ["4"])), True),
    (reqs((CUSTOM, "In", ["5"])), reqs((CUSTOM, "Gt", ["5"])), False),
    (reqs((CUSTOM, "Gt", ["1"])), reqs((CUSTOM, "Lt", ["3"])), True),
    (reqs((CUSTOM, "Gt", ["1"])), reqs((CUSTOM, "Lt", ["2"])), False),
    (reqs((CUSTOM, "Gte", ["2"])), reqs((CUSTOM, "Lte", ["2"])), True),
]


@pytest.mark.parametrize(("existing", "incoming", "expected"), COMPATIBILITY)
def test_compatible(existing: Requirements, incoming: Requirements, expected: bool) -> None:
    assert existing.compatible(incoming) is expected
    assert (existing.compatibility_problems(incoming) == []) is expected


def test_compatible_without_well_known_allowance_needs_every_key() -> None:
    node = Requirements.from_labels({CUSTOM: "a"})
    assert not node.compatible(reqs((ZONE, "In", ["z1"])), allow_undefined=frozenset())
    assert node.compatible(reqs((ZONE, "NotIn", ["z1"])), allow_undefined=frozenset())


def test_compatibility_problems_read_like_karpenter() -> None:
    pool = reqs((ZONE, "In", ["z1"]))
    # Karpenter reports only the first undefined label, and nothing else, when there is one.
    assert pool.compatibility_problems(reqs((CUSTOM, "In", ["a"]), (ZONE, "In", ["z2"]))) == [
        f'label "{CUSTOM}" does not have known values',
    ]
    assert pool.compatibility_problems(reqs((ZONE, "In", ["z2"]))) == [
        f"key {ZONE}, {ZONE} In [z2] not in {ZONE} In [z1]",
    ]


def test_requirements_merge_repeated_keys_by_intersection() -> None:
    merged = Requirements([req("In", "A", "B"), req("NotIn", "A")])
    assert merged[K] == IN_B
    assert reqs((K, "In", ["A", "B"])).add(reqs((K, "In", ["B", "C"])))[K] == IN_B


def test_labels_come_from_single_valued_in() -> None:
    r = reqs(("a", "In", ["1"]), ("b", "In", ["1", "2"]), ("c", "Exists", []))
    assert r.labels() == {"a": "1"}


@pytest.mark.parametrize(
    ("specs", "value"),
    [
        ([("In", ["y", "x"])], "x"),
        ([("DoesNotExist", [])], None),
        ([("Exists", [])], "0"),
        ([("NotIn", ["0", "1", "3"])], "2"),
        ([("Gt", ["41"])], "42"),
        ([("Gt", [str(2**63 - 2)])], str(2**63 - 1)),
        ([("Lt", ["1"])], "0"),
        ([("Lt", ["0"])], None),  # a label value is never negative
        ([("Lt", ["3"]), ("NotIn", ["0", "1", "2"])], None),
        ([("Gt", ["2"]), ("Lt", ["9"]), ("NotIn", ["3", "4"])], "5"),
        ([("Gt", ["-5"])], "0"),
    ],
)
def test_any_value_names_one_value_the_requirement_allows(
    specs: list[tuple[str, list[str]]], value: str | None
) -> None:
    requirement = reqs(*((K, op, values) for op, values in specs))[K]
    assert requirement.any_value() == value
    if value is not None:
        assert requirement.has(value)


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"a": "1", "b": "x", "e": "10"}, True),
        ({"a": "1", "b": "x"}, False),  # a bound needs the label too
        ({"a": "2", "b": "x", "e": "10"}, False),
        ({"b": "x", "e": "10"}, False),  # In needs the label
        ({"a": "1", "e": "10"}, False),  # Exists needs the label
        ({"a": "1", "b": "x", "c": "y", "e": "10"}, False),  # DoesNotExist forbids it
        ({"a": "1", "b": "x", "d": "bad", "e": "10"}, False),
        ({"a": "1", "b": "x", "d": "good", "e": "10"}, True),
        ({"a": "1", "b": "x", "e": "3"}, False),
    ],
)
def test_matches_labels(labels: dict[str, str], expected: bool) -> None:
    r = reqs(
        ("a", "In", ["1"]),
        ("b", "Exists", []),
        ("c", "DoesNotExist", []),
        ("d", "NotIn", ["bad"]),
        ("e", "Gt", ["5"]),
    )
    assert r.matches_labels(labels) is expected


def test_requirements_are_hashable_and_equal_by_content() -> None:
    a = reqs(("a", "In", ["1"]), ("b", "NotIn", ["2"]))
    b = reqs(("b", "NotIn", ["2"]), ("a", "In", ["1"]))
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
