"""Requirements over several keys: deprecated labels normalised, Karpenter's Compatible and
Intersects tables, the messages of incompatible requirements, the string of a set, and
matching node labels."""

from __future__ import annotations

import pytest

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
from nodewright.scheduling.requirements import Requirements
from tests.scheduling.requirement_samples import ORDER, PROBES, SAMPLES, SPECS, K, flags, req

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
