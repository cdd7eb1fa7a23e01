"""Karpenter's validation rules for NodePools, NodeClaims and NodeOverlays.

Karpenter enforces these in two places: CEL rules and patterns in the CRDs (the API server
rejects the object) and ``RuntimeValidate`` (the NodePool's ``ValidationSucceeded`` condition
goes False). nodewright has no admission step of its own, so both sets are checked here and
every problem is reported, not just the first. Each error names the object, the field (camelCase
path, as in the manifest) and the offending value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nodewright.api.core import TAINT_EFFECTS, Taint
from nodewright.api.cron import CronError, parse_cron
from nodewright.api.duration import NEVER, DurationError, parse_duration
from nodewright.api.excerpt import excerpt
from nodewright.api.fielderror import FieldError, FieldErrors
from nodewright.api.karpenter import (
    CONSOLIDATION_POLICIES,
    DISRUPTION_REASONS,
    NUMERIC_OPERATORS,
    REQUIREMENT_OPERATORS,
    Budget,
    Disruption,
    NodeClaim,
    NodeClassReference,
    NodePool,
    NodeSelectorRequirementWithMinValues,
)
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPES,
    NODEPOOL_LABEL,
    RESTRICTED_LABEL_DOMAINS,
    RESTRICTED_LABELS,
    WELL_KNOWN_LABELS,
    normalize_label,
)
from nodewright.api.names import (
    LABEL_VALUE_MAX,
    dns_subdomain_problems,
    label_value_problems,
    qualified_name_problems,
)
from nodewright.api.nodeoverlay import (
    PRICE_ADJUSTMENT_PATTERN,
    PRICE_PATTERN,
    RESTRICTED_CAPACITY,
    NodeOverlay,
)
from nodewright.api.nodeoverlay import WEIGHT_RANGE as OVERLAY_WEIGHT_RANGE
from nodewright.api.quantity import QuantityError, parse_quantity

# Limits from the CRDs.
MAX_LABELS = 100
MAX_REQUIREMENTS = 100
MAX_REQUIREMENT_KEY_LENGTH = 316
MIN_VALUES_RANGE = (1, 50)
MAX_BUDGETS = 50
MAX_BUDGET_REASONS = 50
WEIGHT_RANGE = (1, 100)

#: Values a well-known key may take; a requirement naming none of them can never be met.
WELL_KNOWN_VALUES: Mapping[str, frozenset[str]] = {CAPACITY_TYPE_LABEL: frozenset(CAPACITY_TYPES)}

_NON_NEGATIVE_INTEGER = re.compile(r"\+?[0-9]+")
_DURATION_OR_NEVER = re.compile(r"([0-9]+(s|m|h))+|Never")
_DURATION = re.compile(r"([0-9]+(s|m|h))+")
_BUDGET_DURATION = re.compile(r"(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?")
_BUDGET_NODES = re.compile(r"(100|[0-9]{1,2})%|[0-9]+")

#: Digits of a budget's node count: a count no cluster reaches, and a number every parser
#: reads (Python refuses to read integers of more than 4,300 digits).
_MAX_BUDGET_DIGITS = 18


# --- label keys Karpenter reserves ------------------------------------------------------------


def label_domain(key: str) -> str:
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def domain_within(domain: str, restricted: str) -> bool:
    """True when ``domain`` is the restricted domain or one of its subdomains."""
    return domain == restricted or domain.endswith("." + restricted)


def restricted_label_problem(
    key: str,
    *,
    restricted_domains: frozenset[str] = RESTRICTED_LABEL_DOMAINS,
    well_known_labels: frozenset[str] = WELL_KNOWN_LABELS,
) -> str | None:
    """Why a NodePool, NodeClaim or pod may not use label ``key``, or None if it may.

    Keys in a restricted domain (``karpenter.sh`` and any domain a provider adds) or its
    subdomains are reserved unless well-known; ``kubernetes.io/hostname`` is always reserved.
    """
    if key in well_known_labels:
        return None
    domain = label_domain(key)
    for restricted in sorted(restricted_domains):
        if domain_within(domain, restricted):
            return (
                f"label {excerpt(key)} is in the restricted domain {restricted!r}; "
                f"use a well-known "
                f"label ({', '.join(sorted(well_known_labels))}) or a custom label outside "
                f"{', '.join(sorted(restricted_domains))}"
            )
    if key in RESTRICTED_LABELS:
        return f"label {excerpt(key)} is restricted; Karpenter sets it itself"
    return None


# --- object validation -----------------------------------------------------------------------


@dataclass(frozen=True)
class _KeyRules:
    restricted_domains: frozenset[str]
    well_known_labels: frozenset[str]
    forbid_nodepool_key: bool


def validate_node_pool(
    pool: NodePool,
    *,
    restricted_domains: frozenset[str] = RESTRICTED_LABEL_DOMAINS,
    well_known_labels: frozenset[str] = WELL_KNOWN_LABELS,
) -> list[FieldError]:
    """Every rule of Karpenter's NodePool CRD and runtime validation that ``pool`` breaks."""
    report = FieldErrors("NodePool", pool.name)
    rules = _KeyRules(restricted_domains, well_known_labels, forbid_nodepool_key=True)
    _check_name(report, pool.name)
    if len(pool.name) > LABEL_VALUE_MAX:
        report.add(
            "metadata.name",
            f"must be at most {LABEL_VALUE_MAX} characters because it becomes the value of "
            f"the {NODEPOOL_LABEL} label, got {len(pool.name)}",
        )
    spec = pool.spec
    template = spec.template
    _check_template_labels(report, "spec.template.metadata.labels", template.metadata.labels, rules)
    node = template.spec
    _check_requirements(report, "spec.template.spec.requirements", node.requirements, rules)
    _check_taints(report, "spec.template.spec", node.taints, node.startup_taints)
    _check_node_class_ref(report, "spec.template.spec.nodeClassRef", node.node_class_ref)
    _check_expire_after(report, "spec.template.spec.expireAfter", node.expire_after)
    _check_grace_period(
        report, "spec.template.spec.terminationGracePeriod", node.termination_grace_period
    )
    _check_disruption(report, "spec.disruption", spec.disruption)
    _check_quantities(report, "spec.limits", spec.limits)
    if spec.weight is not None and not WEIGHT_RANGE[0] <= spec.weight <= WEIGHT_RANGE[1]:
        report.add(
            "spec.weight",
            f"must be between {WEIGHT_RANGE[0]} and {WEIGHT_RANGE[1]}, got {spec.weight}",
        )
    if spec.replicas is not None:
        if spec.replicas < 0:
            report.add("spec.replicas", f"must not be negative, got {spec.replicas}")
        others = sorted(set(spec.limits) - {"nodes"})
        if others:
            report.add(
                "spec.limits",
                "only 'nodes' may be limited on a static NodePool (spec.replicas is set), "
                f"got {', '.join(others)}",
            )
        if spec.weight is not None:
            report.add(
                "spec.weight",
                f"is not supported on a static NodePool (spec.replicas is set), got {spec.weight}",
            )
    return report.errors


def validate_node_claim(
    claim: NodeClaim,
    *,
    restricted_domains: frozenset[str] = RESTRICTED_LABEL_DOMAINS,
    well_known_labels: frozenset[str] = WELL_KNOWN_LABELS,
) -> list[FieldError]:
    """Every rule of Karpenter's NodeClaim CRD that ``claim`` breaks.

    Unlike a NodePool, a NodeClaim may require ``karpenter.sh/nodepool``: Karpenter writes
    that requirement itself when it launches a claim for a pool.
    """
    report = FieldErrors("NodeClaim", claim.name)
    rules = _KeyRules(restricted_domains, well_known_labels, forbid_nodepool_key=False)
    _check_name(report, claim.name)
    spec = claim.spec
    _check_requirements(report, "spec.requirements", spec.requirements, rules)
    _check_taints(report, "spec", spec.taints, spec.startup_taints)
    _check_node_class_ref(report, "spec.nodeClassRef", spec.node_class_ref)
    _check_expire_after(report, "spec.expireAfter", spec.expire_after)
    _check_grace_period(report, "spec.terminationGracePeriod", spec.termination_grace_period)
    _check_quantities(report, "spec.resources.requests", spec.resources.requests)
    return report.errors


def validate_node_overlay(
    overlay: NodeOverlay,
    *,
    restricted_domains: frozenset[str] = RESTRICTED_LABEL_DOMAINS,
    well_known_labels: frozenset[str] = WELL_KNOWN_LABELS,
) -> list[FieldError]:
    """Every rule of Karpenter's NodeOverlay CRD and runtime validation that ``overlay`` breaks.

    Its requirements may select ``karpenter.sh/nodepool`` (an overlay for one pool's types).
    """
    report = FieldErrors("NodeOverlay", overlay.name)
    rules = _KeyRules(restricted_domains, well_known_labels, forbid_nodepool_key=False)
    _check_name(report, overlay.name)
    spec = overlay.spec
    if spec.requirements is None:
        report.add("spec.requirements", "is required (an empty list selects every instance type)")
    else:
        requirements = [
            NodeSelectorRequirementWithMinValues(key=r.key, operator=r.operator, values=r.values)
            for r in spec.requirements
        ]
        _check_requirements(report, "spec.requirements", requirements, rules)
        for index, requirement in enumerate(spec.requirements):
            if requirement.operator == "NotIn" and not requirement.values:
                report.add(
                    f"spec.requirements[{index}].values",
                    f"operator NotIn needs at least one value (key {excerpt(requirement.key)})",
                )
    if spec.price is not None and spec.price_adjustment is not None:
        report.add("spec", "cannot set both 'price' and 'priceAdjustment'")
    if spec.price is not None and not re.fullmatch(PRICE_PATTERN, spec.price):
        report.add(
            "spec.price", f"must be a non-negative decimal number, got {excerpt(spec.price)}"
        )
    if spec.price_adjustment is not None and not re.fullmatch(
        PRICE_ADJUSTMENT_PATTERN, spec.price_adjustment
    ):
        report.add(
            "spec.priceAdjustment",
            "must be a signed amount (+0.5, -1.2) or percentage (+10%, -15%, at most -100%), "
            f"got {excerpt(spec.price_adjustment)}",
        )
    for resource in sorted(RESTRICTED_CAPACITY & set(spec.capacity)):
        report.add(
            _key_path("spec.capacity", resource),
            f"invalid resource {resource!r}: an overlay only adds extended resources, not "
            f"{', '.join(sorted(RESTRICTED_CAPACITY))}",
        )
    _check_quantities(report, "spec.capacity", spec.capacity)
    low, high = OVERLAY_WEIGHT_RANGE
    if spec.weight is not None and not low <= spec.weight <= high:
        report.add("spec.weight", f"must be between {low} and {high}, got {spec.weight}")
    return report.errors


def _key_path(path: str, key: str) -> str:
    return f"{path}[{key}]"


def _check_name(report: FieldErrors, name: str) -> None:
    report.add_all("metadata.name", dns_subdomain_problems(name))


def _check_key(report: FieldErrors, path: str, key: str, rules: _KeyRules) -> None:
    """The key rules shared by template labels and requirements."""
    if rules.forbid_nodepool_key and key == NODEPOOL_LABEL:
        report.add(path, f"label {NODEPOOL_LABEL!r} is restricted; Karpenter sets it itself")
        return
    allowed = rules.well_known_labels | {NODEPOOL_LABEL}
    problem = restricted_label_problem(
        key, restricted_domains=rules.restricted_domains, well_known_labels=allowed
    )
    if problem is not None:
        report.add(path, problem)


def _check_template_labels(
    report: FieldErrors, path: str, labels: Mapping[str, str], rules: _KeyRules
) -> None:
    if len(labels) > MAX_LABELS:
        report.add(path, f"must have at most {MAX_LABELS} labels, got {len(labels)}")
    for key, value in labels.items():
        key_path = _key_path(path, key)
        problems = qualified_name_problems(key)
        report.add_all(key_path, (f"key {p}" for p in problems))
        if not problems:
            _check_key(report, key_path, key, rules)
        report.add_all(key_path, (f"value {p}" for p in label_value_problems(value)))


def _check_requirements(
    report: FieldErrors,
    path: str,
    requirements: list[NodeSelectorRequirementWithMinValues],
    rules: _KeyRules,
) -> None:
    if len(requirements) > MAX_REQUIREMENTS:
        report.add(path, f"must have at most {MAX_REQUIREMENTS} entries, got {len(requirements)}")
    for index, requirement in enumerate(requirements):
        _check_requirement(report, f"{path}[{index}]", requirement, rules)


def _check_requirement(
    report: FieldErrors,
    path: str,
    requirement: NodeSelectorRequirementWithMinValues,
    rules: _KeyRules,
) -> None:
    key = normalize_label(requirement.key)
    operator = requirement.operator
    values = requirement.values
    key_path = f"{path}.key"
    values_path = f"{path}.values"
    min_values_path = f"{path}.minValues"

    if len(requirement.key) > MAX_REQUIREMENT_KEY_LENGTH:
        report.add(
            key_path,
            f"must be at most {MAX_REQUIREMENT_KEY_LENGTH} characters, got {len(requirement.key)}",
        )
    key_problems = qualified_name_problems(requirement.key)
    report.add_all(key_path, key_problems)
    if not key_problems:
        _check_key(report, key_path, key, rules)

    if operator not in REQUIREMENT_OPERATORS:
        report.add(
            f"{path}.operator",
            f"must be one of {', '.join(REQUIREMENT_OPERATORS)}, got {excerpt(operator)}",
        )
    for value_index, value in enumerate(values):
        report.add_all(f"{values_path}[{value_index}]", label_value_problems(value))

    if operator == "In" and not values:
        report.add(values_path, f"operator In needs at least one value (key {excerpt(key)})")
    elif operator in NUMERIC_OPERATORS:
        if len(values) != 1 or not _NON_NEGATIVE_INTEGER.fullmatch(values[0]):
            report.add(
                values_path,
                f"operator {operator} needs exactly one non-negative integer value, "
                f"got {excerpt(values)} (key {excerpt(key)})",
            )
        elif operator == "Lt" and int(values[0]) == 0:
            # The API server takes it; no node can meet it (Karpenter fails naming a value).
            report.add(
                values_path,
                f"operator Lt 0 allows no value, since a label value is never a negative "
                f"integer, so no node could satisfy it (key {excerpt(key)})",
            )
    elif operator in ("Exists", "DoesNotExist") and values:
        report.add(
            values_path,
            f"operator {operator} takes no values, got {excerpt(values)} (key {excerpt(key)})",
        )

    min_values = requirement.min_values
    if min_values is not None:
        low, high = MIN_VALUES_RANGE
        if not low <= min_values <= high:
            report.add(min_values_path, f"must be between {low} and {high}, got {min_values}")
        elif operator == "In" and len(values) < min_values:
            report.add(
                min_values_path,
                f"is {min_values} but only {len(values)} value(s) are listed (key {excerpt(key)})",
            )

    known = WELL_KNOWN_VALUES.get(key)
    if known is not None and operator == "In" and values:
        valid = [v for v in values if v in known]
        if not valid:
            report.add(
                values_path,
                f"none of {excerpt(values)} is a valid value for {excerpt(key)}; "
                f"expected one of {', '.join(sorted(known))}",
            )
        elif min_values is not None and len(set(valid)) < min_values:
            report.add(
                min_values_path,
                f"is {min_values} but only {len(set(valid))} of {excerpt(values)} are valid values "
                f"for {excerpt(key)} ({', '.join(sorted(known))})",
            )


def _check_taints(
    report: FieldErrors, spec_path: str, taints: list[Taint], startup_taints: list[Taint]
) -> None:
    """Taints and startup taints; a key/effect pair may appear once across both lists."""
    seen: dict[tuple[str, str], str] = {}
    for list_name, items in (("taints", taints), ("startupTaints", startup_taints)):
        for index, taint in enumerate(items):
            path = f"{spec_path}.{list_name}[{index}]"
            report.add_all(f"{path}.key", qualified_name_problems(taint.key))
            if taint.value:
                report.add_all(f"{path}.value", qualified_name_problems(taint.value))
            if taint.effect not in TAINT_EFFECTS:
                report.add(
                    f"{path}.effect",
                    f"must be one of {', '.join(TAINT_EFFECTS)}, got {excerpt(taint.effect)}",
                )
            pair = (taint.key, taint.effect)
            first = seen.get(pair)
            if first is not None:
                report.add(
                    path,
                    f"duplicate taint {taint.key}:{taint.effect}; the same key and effect "
                    f"are already set at {first}",
                )
            else:
                seen[pair] = path


def _check_node_class_ref(report: FieldErrors, path: str, ref: NodeClassReference) -> None:
    for name, value in (("group", ref.group), ("kind", ref.kind), ("name", ref.name)):
        if not value:
            report.add(f"{path}.{name}", "must not be empty")
    if "/" in ref.group:
        report.add(
            f"{path}.group",
            f"must be an API group without a version (no '/'), got {excerpt(ref.group)}",
        )


def _check_expire_after(report: FieldErrors, path: str, value: str) -> None:
    if not _DURATION_OR_NEVER.fullmatch(value):
        report.add(
            path,
            f"must be a duration in hours, minutes and seconds (e.g. 720h, 1h30m) or Never, "
            f"got {excerpt(value)}",
        )
    else:
        _check_duration_range(report, path, value)


def _check_grace_period(report: FieldErrors, path: str, value: str | None) -> None:
    if value is not None and not _DURATION.fullmatch(value):
        report.add(
            path,
            "must be a duration in hours, minutes and seconds (e.g. 48h, 10m30s), "
            f"got {excerpt(value)}",
        )
    elif value is not None:
        _check_duration_range(report, path, value)


def _check_duration_range(report: FieldErrors, path: str, value: str) -> None:
    """A duration the pattern allows but no clock can hold (``99999999999999999999h``):
    Karpenter's parser refuses it, and the controllers would fail on it at every pass."""
    if value == NEVER:
        return
    try:
        parse_duration(value)
    except DurationError as error:
        report.add(path, str(error))


def _check_disruption(report: FieldErrors, path: str, disruption: Disruption) -> None:
    if disruption.consolidation_policy not in CONSOLIDATION_POLICIES:
        report.add(
            f"{path}.consolidationPolicy",
            f"must be one of {', '.join(CONSOLIDATION_POLICIES)}, "
            f"got {excerpt(disruption.consolidation_policy)}",
        )
    if not _DURATION_OR_NEVER.fullmatch(disruption.consolidate_after):
        report.add(
            f"{path}.consolidateAfter",
            "must be a duration in hours, minutes and seconds (e.g. 0s, 5m) or Never, "
            f"got {excerpt(disruption.consolidate_after)}",
        )
    else:
        _check_duration_range(report, f"{path}.consolidateAfter", disruption.consolidate_after)
    budgets = disruption.budgets
    if len(budgets) > MAX_BUDGETS:
        report.add(
            f"{path}.budgets", f"must have at most {MAX_BUDGETS} entries, got {len(budgets)}"
        )
    for index, budget in enumerate(budgets):
        _check_budget(report, f"{path}.budgets[{index}]", budget)


def _check_budget(report: FieldErrors, path: str, budget: Budget) -> None:
    if not _BUDGET_NODES.fullmatch(budget.nodes) or (
        not budget.nodes.endswith("%") and len(budget.nodes.lstrip("0")) > _MAX_BUDGET_DIGITS
    ):
        report.add(
            f"{path}.nodes",
            f"must be a whole number of nodes (at most {_MAX_BUDGET_DIGITS} digits) or a "
            f"percentage from 0% to 100%, got {excerpt(budget.nodes)}",
        )
    if (budget.schedule is None) != (budget.duration is None):
        missing = "duration" if budget.duration is None else "schedule"
        report.add(path, f"schedule and duration must be set together; {missing} is missing")
    if budget.schedule is not None:
        try:
            parse_cron(budget.schedule)
        except CronError as error:
            report.add(
                f"{path}.schedule",
                f"must be a 5-field cron schedule or one of @yearly, @annually, @monthly, "
                f"@weekly, @daily, @midnight, @hourly; {error}",
            )
    if budget.duration is not None and not _BUDGET_DURATION.fullmatch(budget.duration):
        report.add(
            f"{path}.duration",
            f"must be a duration in hours and minutes only (e.g. 8h, 30m, 1h30m), "
            f"got {excerpt(budget.duration)}",
        )
    elif budget.duration is not None:
        _check_duration_range(report, f"{path}.duration", budget.duration)
    if budget.reasons is not None:
        if len(budget.reasons) > MAX_BUDGET_REASONS:
            report.add(
                f"{path}.reasons",
                f"must have at most {MAX_BUDGET_REASONS} entries, got {len(budget.reasons)}",
            )
        seen: set[str] = set()
        for index, reason in enumerate(budget.reasons):
            reason_path = f"{path}.reasons[{index}]"
            if reason not in DISRUPTION_REASONS:
                report.add(
                    reason_path,
                    f"must be one of {', '.join(DISRUPTION_REASONS)}, got {excerpt(reason)}",
                )
            elif reason in seen:
                report.add(reason_path, f"duplicate reason {excerpt(reason)}")
            seen.add(reason)


def _check_quantities(report: FieldErrors, path: str, quantities: Mapping[str, str]) -> None:
    for resource, value in quantities.items():
        try:
            parse_quantity(value)
        except QuantityError as error:
            report.add(_key_path(path, resource), str(error))
