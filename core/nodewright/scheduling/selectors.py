"""Label-selector and node-selector matching, with the API server's semantics.

A label selector (``matchLabels`` + ``matchExpressions``) selects objects such as pods for a
PodDisruptionBudget, a topology spread or a pod-affinity term; a node selector (ORed terms
of ANDed requirements) selects nodes for node affinity and persistent-volume topology. The
rules that surprise people are kept: an empty label selector selects everything, an empty
node-selector term selects nothing, and ``NotIn`` / ``DoesNotExist`` match objects that lack
the label.

This is the one implementation: the API-model functions here (for the store, disruption and
the embedded scheduler) and the solver's compiled :class:`LabelSelector` all test a
requirement with :func:`requirement_matches`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from nodewright.api import core as api


class InvalidSelectorError(ValueError):
    """A selector uses an unknown operator or malformed values."""


def requirement_matches(
    key: str, operator: str, values: Collection[str], labels: Mapping[str, str]
) -> bool:
    """True when ``labels`` satisfy one requirement ``key operator values``."""
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        bounds = list(values)
        if len(bounds) != 1:
            raise InvalidSelectorError(f"operator {operator} on {key!r} needs exactly one value")
        try:
            bound = int(bounds[0])
        except ValueError as error:
            raise InvalidSelectorError(
                f"operator {operator} on {key!r} needs an integer, got {bounds[0]!r}"
            ) from error
        if not present:
            return False
        try:
            value = int(labels[key])
        except ValueError:
            return False
        return value > bound if operator == "Gt" else value < bound
    raise InvalidSelectorError(f"unknown selector operator {operator!r} on {key!r}")


def label_requirement_matches(
    requirement: api.LabelSelectorRequirement | api.NodeSelectorRequirement,
    labels: Mapping[str, str],
) -> bool:
    return requirement_matches(requirement.key, requirement.operator, requirement.values, labels)


def label_selector_matches(selector: api.LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """True when ``labels`` satisfy ``selector``.

    ``None`` selects nothing and an empty selector selects everything, as in
    ``metav1.LabelSelectorAsSelector``. Only ``In``, ``NotIn``, ``Exists`` and
    ``DoesNotExist`` are valid here.
    """
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for requirement in selector.match_expressions:
        if requirement.operator not in api.LABEL_SELECTOR_OPERATORS:
            raise InvalidSelectorError(
                f"unknown label selector operator {requirement.operator!r} on {requirement.key!r}"
            )
        if not label_requirement_matches(requirement, labels):
            return False
    return True


def node_selector_term_matches(
    term: api.NodeSelectorTerm, labels: Mapping[str, str], name: str = ""
) -> bool:
    """True when a node with ``labels`` and ``name`` satisfies every requirement of ``term``.

    An empty term matches nothing. ``matchFields`` supports ``metadata.name`` only, like
    the API server.
    """
    if not term.match_expressions and not term.match_fields:
        return False
    for requirement in term.match_expressions:
        if not label_requirement_matches(requirement, labels):
            return False
    for field in term.match_fields:
        if field.key != "metadata.name":
            raise InvalidSelectorError(f"unsupported field selector key {field.key!r}")
        if not requirement_matches(field.key, field.operator, field.values, {field.key: name}):
            return False
    return True


def node_selector_matches(
    selector: api.NodeSelector | None, labels: Mapping[str, str], name: str = ""
) -> bool:
    """True when any term matches; ``None`` places no constraint, no terms match nothing."""
    if selector is None:
        return True
    return any(
        node_selector_term_matches(term, labels, name) for term in selector.node_selector_terms
    )


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A compiled ``metav1.LabelSelector``: hashable, so equal selectors are one constraint.

    ``nothing`` marks a selector that selects no pod: an absent selector, or one with an
    operator Kubernetes does not know (``LabelSelectorAsSelector`` fails, Karpenter then
    matches nothing) where :func:`label_selector_matches` raises.
    """

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()
    nothing: bool = False

    @classmethod
    def of(
        cls,
        match_labels: Mapping[str, str] | None,
        expressions: Iterable[tuple[str, str, Iterable[str]]] = (),
    ) -> LabelSelector:
        if match_labels is None:
            return cls(nothing=True)
        compiled = tuple(sorted((k, op, frozenset(v)) for k, op, v in expressions))
        if any(op not in api.LABEL_SELECTOR_OPERATORS for _, op, _ in compiled):
            return cls(nothing=True)
        return cls(tuple(sorted(match_labels.items())), compiled)

    @classmethod
    def from_api(cls, selector: api.LabelSelector | None) -> LabelSelector:
        if selector is None:
            return cls(nothing=True)
        return cls.of(
            selector.match_labels,
            ((e.key, e.operator, e.values) for e in selector.match_expressions),
        )

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.expressions:
            if not requirement_matches(key, operator, values, labels):
                return False
        return True

    def __str__(self) -> str:
        if self.nothing:
            return "<nothing>"
        parts = [f"{k}={v}" for k, v in self.match_labels]
        parts += [f"{k} {op} [{' '.join(sorted(v))}]" for k, op, v in self.expressions]
        return ",".join(parts)
