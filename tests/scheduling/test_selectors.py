"""Label and node selectors select what the API server would select."""

from __future__ import annotations

import pytest

from nodewright.api.core import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from nodewright.scheduling.selectors import (
    InvalidSelectorError,
    label_selector_matches,
    node_selector_matches,
    node_selector_term_matches,
)
from nodewright.scheduling.selectors import LabelSelector as CompiledLabelSelector

LABELS = {"app": "web", "tier": "front", "cpu": "8"}


def expressions(*reqs: tuple[str, str, list[str]]) -> LabelSelector:
    return LabelSelector(
        match_expressions=[
            LabelSelectorRequirement(key=k, operator=o, values=v) for k, o, v in reqs
        ]
    )


def term(*reqs: tuple[str, str, list[str]]) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=[NodeSelectorRequirement(key=k, operator=o, values=v) for k, o, v in reqs]
    )


def test_nil_selects_nothing_and_empty_selects_everything() -> None:
    assert not label_selector_matches(None, LABELS)
    assert label_selector_matches(LabelSelector(), LABELS)
    assert label_selector_matches(LabelSelector(), {})


def test_match_labels_and_expressions_are_anded() -> None:
    selector = LabelSelector(
        match_labels={"app": "web"},
        match_expressions=[LabelSelectorRequirement(key="tier", operator="In", values=["back"])],
    )
    assert not label_selector_matches(selector, LABELS)
    assert label_selector_matches(selector, {"app": "web", "tier": "back"})


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (("app", "In", ["web", "db"]), True),
        (("app", "In", ["db"]), False),
        (("app", "NotIn", ["db"]), True),
        (("missing", "NotIn", ["db"]), True),
        (("tier", "Exists", []), True),
        (("missing", "Exists", []), False),
        (("missing", "DoesNotExist", []), True),
        (("tier", "DoesNotExist", []), False),
    ],
)
def test_label_operators(requirement: tuple[str, str, list[str]], expected: bool) -> None:
    assert label_selector_matches(expressions(requirement), LABELS) is expected


def test_label_selectors_reject_node_only_operators() -> None:
    with pytest.raises(InvalidSelectorError):
        label_selector_matches(expressions(("cpu", "Gt", ["4"])), LABELS)


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (("cpu", "Gt", ["4"]), True),
        (("cpu", "Gt", ["8"]), False),
        (("cpu", "Lt", ["16"]), True),
        (("missing", "Lt", ["16"]), False),
        (("app", "Gt", ["1"]), False),  # a non-numeric label never compares
    ],
)
def test_node_numeric_operators(requirement: tuple[str, str, list[str]], expected: bool) -> None:
    assert node_selector_term_matches(term(requirement), LABELS) is expected


def test_node_selector_terms_are_ored_and_empty_terms_match_nothing() -> None:
    selector = NodeSelector(
        node_selector_terms=[term(("app", "In", ["db"])), term(("tier", "In", ["front"]))]
    )
    assert node_selector_matches(selector, LABELS)
    assert not node_selector_matches(NodeSelector(node_selector_terms=[NodeSelectorTerm()]), LABELS)
    assert not node_selector_matches(NodeSelector(), LABELS)
    assert node_selector_matches(None, LABELS)


def test_match_fields_select_by_node_name() -> None:
    by_name = NodeSelectorTerm(
        match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In", values=["n1"])]
    )
    assert node_selector_term_matches(by_name, {}, "n1")
    assert not node_selector_term_matches(by_name, {}, "n2")


def test_unknown_operator_is_an_error() -> None:
    with pytest.raises(InvalidSelectorError):
        node_selector_term_matches(term(("app", "Like", ["w*"])), LABELS)
    with pytest.raises(InvalidSelectorError):
        node_selector_term_matches(term(("cpu", "Gt", ["x"])), LABELS)


SELECTORS = [
    LabelSelector(),
    LabelSelector(match_labels={"app": "web"}),
    LabelSelector(match_labels={"app": "db"}),
    expressions(("app", "In", ["web", "db"])),
    expressions(("app", "NotIn", ["web"])),
    expressions(("missing", "NotIn", ["web"])),
    expressions(("tier", "Exists", []), ("missing", "DoesNotExist", [])),
    expressions(("tier", "DoesNotExist", [])),
    LabelSelector(
        match_labels={"app": "web"},
        match_expressions=[LabelSelectorRequirement(key="tier", operator="In", values=["back"])],
    ),
]
LABEL_SETS = [LABELS, {}, {"app": "db"}, {"app": "web", "tier": "back"}]


@pytest.mark.parametrize("selector", SELECTORS)
def test_the_solvers_compiled_selector_selects_what_the_api_selector_selects(
    selector: LabelSelector,
) -> None:
    compiled = CompiledLabelSelector.from_api(selector)
    for labels in LABEL_SETS:
        assert compiled.matches(labels) is label_selector_matches(selector, labels)


def test_a_compiled_selector_with_an_unknown_operator_selects_nothing() -> None:
    """Where the API-model matcher raises, the solver matches nothing, as Karpenter does."""
    assert not CompiledLabelSelector.from_api(None).matches(LABELS)
    compiled = CompiledLabelSelector.from_api(expressions(("cpu", "Gt", ["4"])))
    assert compiled.nothing
    assert not compiled.matches(LABELS)
