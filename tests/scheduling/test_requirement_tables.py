"""Karpenter's requirement-algebra tables (``pkg/scheduling/requirement(s)_test.go``), as grids.

Karpenter checks every pair of fourteen sample requirements on one key. The same samples are
used here, each named by a short token (``A`` is ``In [A]``, ``!12`` is ``NotIn [1 2]``, ``>1`` is
``Gt 1``, ``*`` is ``Exists``, ``-`` is ``DoesNotExist``), and each table is a grid: one row per
left-hand sample, one cell per right-hand sample in :data:`ORDER`. Algebraic laws the tables
only sample are checked with hypothesis at the end.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.api import core as api
from nodewright.api.labels import (
    ARCH_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    OS_LABEL,
    REGION_LABEL,
    ZONE_LABEL,
)
from nodewright.scheduling.pods import pod_preferred_terms, pod_requirement_terms
from nodewright.scheduling.requirements import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    Requirement,
    RequirementError,
    Requirements,
)

K = "key"
MAX_INT64 = 2**63 - 1


def req(operator: str, *values: str, min_values: int | None = None, key: str = K) -> Requirement:
    return Requirement.of(key, operator, values, min_values)


def complement(
    excluded: tuple[str, ...] = (), low: int | None = None, high: int | None = None
) -> Requirement:
    """A complement set on ``key`` with exclusive integer bounds, as intersections build them."""
    return Requirement(K, True, frozenset(excluded), low, high)


#: Karpenter's fourteen samples (its ``exists``, ``doesNotExist``, ``inA`` ... ``lessThan9``).
SPECS: dict[str, tuple[str, tuple[str, ...]]] = {
    "*": (EXISTS, ()),
    "-": (DOES_NOT_EXIST, ()),
    "A": (IN, ("A",)),
    "B": (IN, ("B",)),
    "AB": (IN, ("A", "B")),
    "!A": (NOT_IN, ("A",)),
    "1": (IN, ("1",)),
    "9": (IN, ("9",)),
    "19": (IN, ("1", "9")),
    "!12": (NOT_IN, ("1", "2")),
    ">1": ("Gt", ("1",)),
    ">9": ("Gt", ("9",)),
    "<1": ("Lt", ("1",)),
    "<9": ("Lt", ("9",)),
}
ORDER = tuple(SPECS)
SAMPLES = {token: req(op, *values) for token, (op, values) in SPECS.items()}
#: Results of intersections that are none of the samples.
DERIVED = {
    "!A12": complement(("A", "1", "2")),
    ">1!2": complement(("2",), low=1),  # >= 2, but not 2 (1 fell outside the bound)
    "<9!12": complement(("1", "2"), high=9),
    "2..8": complement(low=1, high=9),
}
RESULTS = {**SAMPLES, **DERIVED}
#: minValues Karpenter gives each sample in its "with flexibility" tables.
FLEXIBILITY = {token: 2 if token in ("AB", "19", "!12") else 1 for token in ORDER}


def grid(text: str) -> dict[tuple[str, str], str]:
    """Parse ``row: cell cell ...`` lines into ``{(row, column): cell}`` over :data:`ORDER`."""
    cells: dict[tuple[str, str], str] = {}
    for line in text.strip().splitlines():
        row, _, rest = line.partition(":")
        values = rest.split()
        assert len(values) == len(ORDER), line
        for column, value in zip(ORDER, values, strict=True):
            cells[(row.strip(), column)] = value
    return cells


def flags(text: str, columns: tuple[str, ...]) -> dict[tuple[str, str], bool]:
    """Parse ``row: Y.Y..`` lines (Y = true, . = false) over ``columns``."""
    cells: dict[tuple[str, str], bool] = {}
    for line in text.strip().splitlines():
        row, _, rest = line.partition(":")
        marks = rest.strip()
        assert len(marks) == len(columns), line
        for column, mark in zip(columns, marks, strict=True):
            cells[(row.strip(), column)] = mark == "Y"
    return cells


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

PROBES = ("A", "B", "1", "2", "9")
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


# -- label normalisation ---------------------------------------------------------------------

DEPRECATED = {
    "failure-domain.beta.kubernetes.io/zone": "test",
    "failure-domain.beta.kubernetes.io/region": "test",
    "beta.kubernetes.io/arch": "test",
    "beta.kubernetes.io/os": "test",
    "beta.kubernetes.io/instance-type": "test",
}
STABLE = {ZONE_LABEL, REGION_LABEL, ARCH_LABEL, OS_LABEL, INSTANCE_TYPE_LABEL}


def test_deprecated_labels_are_normalised_everywhere() -> None:
    expressions = [
        api.NodeSelectorRequirement(key=k, operator="In", values=[v]) for k, v in DEPRECATED.items()
    ]
    term = api.NodeSelectorTerm(match_expressions=expressions)
    pod = api.Pod(
        metadata={"name": "p", "namespace": "default"},
        spec=api.PodSpec(
            node_selector=DEPRECATED,
            affinity=api.Affinity(
                node_affinity=api.NodeAffinity(
                    required_during_scheduling_ignored_during_execution=api.NodeSelector(
                        node_selector_terms=[term]
                    ),
                    preferred_during_scheduling_ignored_during_execution=[
                        api.PreferredSchedulingTerm(weight=1, preference=term)
                    ],
                )
            ),
        ),
    )
    built = [
        Requirements.from_labels(DEPRECATED),
        Requirements(req("In", v, key=k) for k, v in DEPRECATED.items()),
        *pod_requirement_terms(pod),
        *(terms for _, terms in pod_preferred_terms(pod)),
    ]
    for requirements in built:
        assert set(requirements) == STABLE
    assert Requirements([req("In", "test", key="failure-domain.beta.kubernetes.io/zone")])[
        ZONE_LABEL
    ].has("test")


# -- Compatible ------------------------------------------------------------------------------

#: ``none`` is an empty set of requirements; every other column requires that sample on the
#: zone label (well known, so a side that does not mention it may be allowed to).
COMPAT_COLUMNS = ("none", *ORDER)
#                   none * - A B AB !A 1 9 19 !12 >1 >9 <1 <9
COMPATIBLE_ALLOWING_WELL_KNOWN = flags(
    """
none : YYYYYYYYYYYYYYY
*    : YY.YYYYYYYYYYYY
-    : Y.Y...Y...Y....
A    : YY.Y.Y....Y....
B    : YY..YYY...Y....
AB   : YY.YYYY...Y....
!A   : YYY.YYYYYYYYYYY
1    : YY....YY.Y....Y
9    : YY....Y.YYYY...
19   : YY....YYYYYY..Y
!12  : YYYYYYY.YYYYYYY
>1   : YY....Y.YYYYY.Y
>9   : YY....Y...YYY..
<1   : YY....Y...Y..YY
<9   : YY....YY.YYY.YY
""",
    COMPAT_COLUMNS,
)
#: Strictly (no label may be undefined), only an empty left side differs: it accepts nothing
#: but exclusions (NotIn, DoesNotExist) and no requirement at all.
COMPATIBLE_STRICTLY = {
    **COMPATIBLE_ALLOWING_WELL_KNOWN,
    **flags("none : Y.Y...Y...Y....", COMPAT_COLUMNS),
}


def zone_requirements(token: str) -> Requirements:
    if token == "none":
        return Requirements()
    operator, values = SPECS[token]
    return Requirements([req(operator, *values, key=ZONE_LABEL)])


@pytest.mark.parametrize(("existing", "incoming"), sorted(COMPATIBLE_ALLOWING_WELL_KNOWN))
def test_compatible(existing: str, incoming: str) -> None:
    left, right = zone_requirements(existing), zone_requirements(incoming)
    loose = COMPATIBLE_ALLOWING_WELL_KNOWN[(existing, incoming)]
    assert left.compatible(right) is loose
    assert (left.compatibility_problems(right) == []) is loose
    strict = COMPATIBLE_STRICTLY[(existing, incoming)]
    assert left.compatible(right, allow_undefined=frozenset()) is strict
    assert (left.compatibility_problems(right, allow_undefined=frozenset()) == []) is strict


@pytest.mark.parametrize(("existing", "incoming"), sorted(COMPATIBLE_ALLOWING_WELL_KNOWN))
def test_intersects_looks_only_at_shared_keys(existing: str, incoming: str) -> None:
    left, right = zone_requirements(existing), zone_requirements(incoming)
    both_defined = "none" not in (existing, incoming)
    expected = COMPATIBLE_ALLOWING_WELL_KNOWN[(existing, incoming)] or not both_defined
    assert (left.intersects(right) == []) is expected


# -- error messages --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "meant"),
    [
        # truncations
        ("zone", ZONE_LABEL),
        ("region", REGION_LABEL),
        ("nodepool", "karpenter.sh/nodepool"),
        ("instance-type", INSTANCE_TYPE_LABEL),
        ("arch", ARCH_LABEL),
        ("capacity-type", "karpenter.sh/capacity-type"),
        # typos
        ("topology.kubernetesio/zone", ZONE_LABEL),
        ("node.io/zone", ZONE_LABEL),
        ("topology.kubernetes.io/regio", REGION_LABEL),
        ("node.kubernetes.io/region", REGION_LABEL),
        ("karpenter/nodepool", "karpenter.sh/nodepool"),
    ],
)
def test_undefined_label_names_the_well_known_label_it_resembles(label: str, meant: str) -> None:
    problems = Requirements().compatibility_problems(Requirements([req("Exists", key=label)]))
    assert problems == [f'label "{label}" does not have known values (typo of "{meant}"?)']


def test_undefined_label_without_a_lookalike() -> None:
    problems = Requirements().compatibility_problems(
        Requirements([req("Exists", key="deployment")]), allow_undefined=frozenset()
    )
    assert problems == ['label "deployment" does not have known values']


def test_undefined_label_resembling_a_defined_custom_label() -> None:
    pool = Requirements([req("In", "a", key="example.com/team")])
    problems = pool.compatibility_problems(Requirements([req("In", "a", key="example.org/team")]))
    assert problems == [
        'label "example.org/team" does not have known values (typo of "example.com/team"?)'
    ]


def test_only_the_first_undefined_label_is_reported() -> None:
    incoming = Requirements(
        [
            req("Exists", key="example.com/b"),
            req("Exists", key="example.com/a"),
            req("In", "z9", key=ZONE_LABEL),
        ]
    )
    pool = Requirements([req("In", "z1", key=ZONE_LABEL)])
    assert pool.compatibility_problems(incoming, allow_undefined=frozenset()) == [
        'label "example.com/a" does not have known values'
    ]


def test_every_conflicting_key_is_reported() -> None:
    pool = Requirements([req("In", "a", key="x"), req("In", "a", key="y")])
    pod = Requirements([req("In", "b", key="x"), req("In", "b", key="y")])
    assert pool.compatibility_problems(pod) == [
        "key x, x In [b] not in x In [a]",
        "key y, y In [b] not in y In [a]",
    ]


# -- Requirements as a whole -----------------------------------------------------------------


def test_string_lists_keys_in_order() -> None:
    every = Requirements(
        req(op, *values, key=name)
        for name, (op, values) in {
            "exists": SPECS["*"],
            "doesNotExist": SPECS["-"],
            "inA": SPECS["A"],
            "inB": SPECS["B"],
            "inAB": SPECS["AB"],
            "notInA": SPECS["!A"],
            "in1": SPECS["1"],
            "in9": SPECS["9"],
            "in19": SPECS["19"],
            "notIn12": SPECS["!12"],
            "greaterThan1": SPECS[">1"],
            "greaterThan9": SPECS[">9"],
            "lessThan1": SPECS["<1"],
            "lessThan9": SPECS["<9"],
        }.items()
    )
    assert str(every) == (
        "doesNotExist DoesNotExist, exists Exists, greaterThan1 Exists >=2, "
        "greaterThan9 Exists >=10, in1 In [1], in19 In [1 9], in9 In [9], inA In [A], "
        "inAB In [A B], inB In [B], lessThan1 Exists <=0, lessThan9 Exists <=8, "
        "notIn12 NotIn [1 2], notInA NotIn [A]"
    )


def test_string_leaves_out_the_placeholder_hostname() -> None:
    claim = Requirements.from_labels({HOSTNAME_LABEL: "hostname-placeholder-0001", ZONE_LABEL: "z"})
    assert str(claim) == f"{ZONE_LABEL} In [z]"
    assert HOSTNAME_LABEL in repr(claim)


#: Whether a node with the label set to each probe value (or without it) satisfies the sample.
LABEL_COLUMNS = ("absent", *PROBES)
MATCHES_LABELS = flags(
    """
*   : .YYYYY
-   : Y.....
A   : .Y....
B   : ..Y...
AB  : .YY...
!A  : Y.YYYY
1   : ...Y..
9   : .....Y
19  : ...Y.Y
!12 : YYY..Y
>1  : ....YY
>9  : ......
<1  : ......
<9  : ...YY.
""",
    LABEL_COLUMNS,
)


@pytest.mark.parametrize(("token", "label"), sorted(MATCHES_LABELS))
def test_matches_labels(token: str, label: str) -> None:
    labels = {} if label == "absent" else {K: label}
    assert Requirements([SAMPLES[token]]).matches_labels(labels) is MATCHES_LABELS[(token, label)]


# -- laws ------------------------------------------------------------------------------------

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
