"""Karpenter's NodePool and NodeClaim validation rules, each with a valid and an invalid case."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from nodewright.api.fielderror import FieldError
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.validation import validate_node_claim, validate_node_pool

Doc = dict[str, Any]

VALID_POOL: Doc = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "payments"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["on-demand", "spot"],
                    },
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                ],
            },
        },
    },
}


def pool_errors(change: Callable[[Doc], None], **kwargs: Any) -> list[FieldError]:
    document = copy.deepcopy(VALID_POOL)
    change(document)
    return validate_node_pool(NodePool.model_validate(document), **kwargs)


def template_spec(document: Doc) -> Doc:
    spec: Doc = document["spec"]["template"]["spec"]
    return spec


def set_in(path: str, value: Any) -> Callable[[Doc], None]:
    """A change that sets a dotted path (creating mappings on the way)."""

    def change(document: Doc) -> None:
        *parents, last = path.split(".")
        target = document
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value

    return change


def requirement(**fields: Any) -> Callable[[Doc], None]:
    def change(document: Doc) -> None:
        template_spec(document)["requirements"].append(fields)

    return change


def test_a_well_formed_node_pool_has_no_errors() -> None:
    assert pool_errors(lambda _: None) == []


def test_minimal_node_pool_with_defaults_is_valid() -> None:
    pool = NodePool.model_validate(
        {
            "metadata": {"name": "minimal"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {"group": "g.example.com", "kind": "K", "name": "n"},
                        "requirements": [],
                    }
                }
            },
        }
    )
    assert validate_node_pool(pool) == []


def test_field_error_reads_as_one_line() -> None:
    error = FieldError("NodePool", "default", "spec.weight", "must be between 1 and 100, got 500")
    assert str(error) == 'NodePool "default": spec.weight: must be between 1 and 100, got 500'


# --- acceptance cases from the issue ---------------------------------------------------------


def test_weight_500_is_rejected_naming_object_and_field() -> None:
    errors = pool_errors(set_in("spec.weight", 500))
    assert [str(e) for e in errors] == [
        'NodePool "default": spec.weight: must be between 1 and 100, got 500'
    ]


def test_gt_on_a_non_integer_is_rejected() -> None:
    errors = pool_errors(requirement(key="example.com/generation", operator="Gt", values=["abc"]))
    assert len(errors) == 1
    assert errors[0].kind == "NodePool"
    assert errors[0].name == "default"
    assert errors[0].field == "spec.template.spec.requirements[2].values"
    assert "non-negative integer" in errors[0].message
    assert "abc" in errors[0].message


def test_nodepool_label_in_requirements_is_rejected() -> None:
    errors = pool_errors(requirement(key="karpenter.sh/nodepool", operator="In", values=["x"]))
    assert [(e.name, e.field) for e in errors] == [
        ("default", "spec.template.spec.requirements[2].key")
    ]
    assert "karpenter.sh/nodepool" in errors[0].message


# --- one case per rule -----------------------------------------------------------------------

# (change, field of the single expected error, words the message must contain)
INVALID: list[tuple[str, Callable[[Doc], None], str, str]] = [
    ("name not a DNS subdomain", set_in("metadata.name", "Default_Pool"), "metadata.name",
     "Default_Pool"),
    ("name too long for the nodepool label", set_in("metadata.name", "a" * 64), "metadata.name",
     "63"),
    ("label key not qualified",
     set_in("spec.template.metadata.labels", {"bad key": "x"}),
     "spec.template.metadata.labels[bad key]", "bad key"),
    ("label value too long",
     set_in("spec.template.metadata.labels", {"team": "x" * 64}),
     "spec.template.metadata.labels[team]", "63"),
    ("label value with a bad character",
     set_in("spec.template.metadata.labels", {"team": "a b"}),
     "spec.template.metadata.labels[team]", "'a b'"),
    ("label in the karpenter.sh domain",
     set_in("spec.template.metadata.labels", {"karpenter.sh/custom": "x"}),
     "spec.template.metadata.labels[karpenter.sh/custom]", "restricted domain"),
    ("label in a karpenter.sh subdomain",
     set_in("spec.template.metadata.labels", {"team.karpenter.sh/custom": "x"}),
     "spec.template.metadata.labels[team.karpenter.sh/custom]", "restricted domain"),
    ("nodepool label",
     set_in("spec.template.metadata.labels", {"karpenter.sh/nodepool": "x"}),
     "spec.template.metadata.labels[karpenter.sh/nodepool]", "restricted"),
    ("hostname label",
     set_in("spec.template.metadata.labels", {"kubernetes.io/hostname": "x"}),
     "spec.template.metadata.labels[kubernetes.io/hostname]", "restricted"),
    ("more than 100 labels",
     set_in("spec.template.metadata.labels", {f"l{i}": "x" for i in range(101)}),
     "spec.template.metadata.labels", "100"),
    ("unknown operator", requirement(key="team", operator="Equals", values=["a"]),
     "spec.template.spec.requirements[2].operator", "'Equals'"),
    ("In without values", requirement(key="team", operator="In", values=[]),
     "spec.template.spec.requirements[2].values", "at least one value"),
    ("Lt with two values", requirement(key="gen", operator="Lt", values=["1", "2"]),
     "spec.template.spec.requirements[2].values", "exactly one"),
    ("Gte with a non-numeric value", requirement(key="gen", operator="Gte", values=["x1"]),
     "spec.template.spec.requirements[2].values", "non-negative"),
    ("Lte with no value", requirement(key="gen", operator="Lte"),
     "spec.template.spec.requirements[2].values", "exactly one"),
    ("Exists with values", requirement(key="gen", operator="Exists", values=["1"]),
     "spec.template.spec.requirements[2].values", "takes no values"),
    ("DoesNotExist with values", requirement(key="gen", operator="DoesNotExist", values=["1"]),
     "spec.template.spec.requirements[2].values", "takes no values"),
    ("minValues above 50",
     requirement(key="team", operator="In", values=["a"], minValues=51),
     "spec.template.spec.requirements[2].minValues", "between 1 and 50"),
    ("minValues of 0", requirement(key="team", operator="Exists", minValues=0),
     "spec.template.spec.requirements[2].minValues", "got 0"),
    ("fewer values than minValues",
     requirement(key="team", operator="In", values=["a", "b"], minValues=3),
     "spec.template.spec.requirements[2].minValues", "only 2"),
    ("requirement key in the karpenter.sh domain",
     requirement(key="karpenter.sh/thing", operator="Exists"),
     "spec.template.spec.requirements[2].key", "restricted domain"),
    ("requirement on hostname",
     requirement(key="kubernetes.io/hostname", operator="In", values=["n1"]),
     "spec.template.spec.requirements[2].key", "restricted"),
    ("requirement key not qualified", requirement(key="-bad-", operator="Exists"),
     "spec.template.spec.requirements[2].key", "-bad-"),
    ("requirement key too long", requirement(key="a" * 253 + "/" + "b" * 63, operator="Exists"),
     "spec.template.spec.requirements[2].key", "316"),
    ("requirement value too long", requirement(key="team", operator="In", values=["v" * 64]),
     "spec.template.spec.requirements[2].values[0]", "63"),
    ("capacity type with no known value",
     set_in("spec.template.spec.requirements",
            [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["cheap"]}]),
     "spec.template.spec.requirements[0].values", "on-demand"),
    ("capacity type with fewer known values than minValues",
     set_in("spec.template.spec.requirements",
            [{"key": "karpenter.sh/capacity-type", "operator": "In",
              "values": ["spot", "cheap"], "minValues": 2}]),
     "spec.template.spec.requirements[0].minValues", "only 1"),
    ("taint without key",
     set_in("spec.template.spec.taints", [{"key": "", "effect": "NoSchedule"}]),
     "spec.template.spec.taints[0].key", "must not be empty"),
    ("taint key not qualified",
     set_in("spec.template.spec.taints", [{"key": "a b", "effect": "NoSchedule"}]),
     "spec.template.spec.taints[0].key", "'a b'"),
    ("taint value not qualified",
     set_in("spec.template.spec.taints", [{"key": "gpu", "value": "a b", "effect": "NoSchedule"}]),
     "spec.template.spec.taints[0].value", "'a b'"),
    ("taint with unknown effect",
     set_in("spec.template.spec.startupTaints", [{"key": "gpu", "effect": "NoScheduling"}]),
     "spec.template.spec.startupTaints[0].effect", "'NoScheduling'"),
    ("duplicate taint across taints and startupTaints",
     lambda d: template_spec(d).update(
         taints=[{"key": "gpu", "effect": "NoSchedule"}],
         startupTaints=[{"key": "gpu", "value": "other", "effect": "NoSchedule"}]),
     "spec.template.spec.startupTaints[0]", "spec.template.spec.taints[0]"),
    ("expireAfter with days", set_in("spec.template.spec.expireAfter", "30d"),
     "spec.template.spec.expireAfter", "'30d'"),
    ("expireAfter with a fraction", set_in("spec.template.spec.expireAfter", "1.5h"),
     "spec.template.spec.expireAfter", "'1.5h'"),
    ("terminationGracePeriod Never", set_in("spec.template.spec.terminationGracePeriod", "Never"),
     "spec.template.spec.terminationGracePeriod", "'Never'"),
    ("nodeClassRef without group", set_in("spec.template.spec.nodeClassRef.group", ""),
     "spec.template.spec.nodeClassRef.group", "must not be empty"),
    ("nodeClassRef without kind", set_in("spec.template.spec.nodeClassRef.kind", ""),
     "spec.template.spec.nodeClassRef.kind", "must not be empty"),
    ("nodeClassRef without name", set_in("spec.template.spec.nodeClassRef.name", ""),
     "spec.template.spec.nodeClassRef.name", "must not be empty"),
    ("nodeClassRef group with a version",
     set_in("spec.template.spec.nodeClassRef.group", "karpenter.kwok.sh/v1alpha1"),
     "spec.template.spec.nodeClassRef.group", "'/'"),
    ("unknown consolidation policy", set_in("spec.disruption.consolidationPolicy", "Always"),
     "spec.disruption.consolidationPolicy", "'Always'"),
    ("consolidateAfter not a duration", set_in("spec.disruption.consolidateAfter", "soon"),
     "spec.disruption.consolidateAfter", "'soon'"),
    ("more than 50 budgets",
     set_in("spec.disruption.budgets", [{"nodes": "1"}] * 51),
     "spec.disruption.budgets", "50"),
    ("budget nodes above 100%", set_in("spec.disruption.budgets", [{"nodes": "101%"}]),
     "spec.disruption.budgets[0].nodes", "'101%'"),
    ("budget nodes negative", set_in("spec.disruption.budgets", [{"nodes": "-1"}]),
     "spec.disruption.budgets[0].nodes", "'-1'"),
    ("budget schedule without duration",
     set_in("spec.disruption.budgets", [{"nodes": "0", "schedule": "@daily"}]),
     "spec.disruption.budgets[0]", "duration is missing"),
    ("budget duration without schedule",
     set_in("spec.disruption.budgets", [{"nodes": "0", "duration": "1h"}]),
     "spec.disruption.budgets[0]", "schedule is missing"),
    ("budget schedule with four fields",
     set_in("spec.disruption.budgets", [{"nodes": "0", "schedule": "0 9 * *", "duration": "1h"}]),
     "spec.disruption.budgets[0].schedule", "got 4"),
    ("budget schedule with an out-of-range hour",
     set_in("spec.disruption.budgets", [{"nodes": "0", "schedule": "0 24 * * *",
                                          "duration": "1h"}]),
     "spec.disruption.budgets[0].schedule", "hour"),
    ("budget schedule with an unknown descriptor",
     set_in("spec.disruption.budgets", [{"nodes": "0", "schedule": "@fortnightly",
                                          "duration": "1h"}]),
     "spec.disruption.budgets[0].schedule", "@fortnightly"),
    ("budget duration in seconds",
     set_in("spec.disruption.budgets", [{"nodes": "0", "schedule": "@daily", "duration": "30s"}]),
     "spec.disruption.budgets[0].duration", "'30s'"),
    ("budget with an unknown reason",
     set_in("spec.disruption.budgets", [{"nodes": "0", "reasons": ["Expired"]}]),
     "spec.disruption.budgets[0].reasons[0]", "'Expired'"),
    ("budget with a repeated reason",
     set_in("spec.disruption.budgets", [{"nodes": "0", "reasons": ["Empty", "Empty"]}]),
     "spec.disruption.budgets[0].reasons[1]", "duplicate"),
    ("limit that is not a quantity", set_in("spec.limits", {"cpu": "lots"}),
     "spec.limits[cpu]", "'lots'"),
    ("weight of 0", set_in("spec.weight", 0), "spec.weight", "got 0"),
    ("negative replicas", set_in("spec.replicas", -1), "spec.replicas", "got -1"),
    ("cpu limit on a static pool",
     lambda d: d["spec"].update(replicas=3, limits={"nodes": "5", "cpu": "10"}),
     "spec.limits", "cpu"),
    ("weight on a static pool", lambda d: d["spec"].update(replicas=3, weight=10),
     "spec.weight", "static"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [pytest.param(change, field, words, id=name) for name, change, field, words in INVALID],
)
def test_invalid_node_pool(change: Callable[[Doc], None], field: str, words: str) -> None:
    errors = pool_errors(change)
    assert [e.field for e in errors] == [field], [str(e) for e in errors]
    assert words in errors[0].message
    assert errors[0].kind == "NodePool"


VALID: list[tuple[str, Callable[[Doc], None]]] = [
    ("label in a custom domain",
     set_in("spec.template.metadata.labels", {"example.com/team": "a"})),
    ("empty label value", set_in("spec.template.metadata.labels", {"team": ""})),
    ("capacity-type label", set_in("spec.template.metadata.labels",
                                   {"karpenter.sh/capacity-type": "spot"})),
    ("well-known kubernetes.io label",
     set_in("spec.template.metadata.labels", {"topology.kubernetes.io/zone": "z1"})),
    ("domain that merely ends in karpenter.sh",
     set_in("spec.template.metadata.labels", {"notkarpenter.sh/team": "a"})),
    ("100 labels", set_in("spec.template.metadata.labels", {f"l{i}": "x" for i in range(100)})),
    ("every operator", lambda d: template_spec(d)["requirements"].extend([
        {"key": "a", "operator": "NotIn", "values": ["x"]},
        {"key": "b", "operator": "Exists"},
        {"key": "c", "operator": "DoesNotExist"},
        {"key": "d", "operator": "Gt", "values": ["0"]},
        {"key": "e", "operator": "Lt", "values": ["10"]},
        {"key": "f", "operator": "Gte", "values": ["2"]},
        {"key": "g", "operator": "Lte", "values": ["3"]},
    ])),
    ("NotIn with no values", requirement(key="team", operator="NotIn")),
    ("minValues met", requirement(key="team", operator="In", values=["a", "b"], minValues=2)),
    ("minValues on Exists", requirement(key="team", operator="Exists", minValues=50)),
    ("capacity type with one unknown value among known ones",
     set_in("spec.template.spec.requirements",
            [{"key": "karpenter.sh/capacity-type", "operator": "In",
              "values": ["spot", "cheap"]}])),
    ("capacity type NotIn an unknown value",
     set_in("spec.template.spec.requirements",
            [{"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": ["cheap"]}])),
    ("deprecated zone label is normalised",
     requirement(key="failure-domain.beta.kubernetes.io/zone", operator="In", values=["z1"])),
    ("100 requirements",
     set_in("spec.template.spec.requirements",
            [{"key": f"k{i}", "operator": "Exists"} for i in range(100)])),
    ("same taint key with different effects",
     lambda d: template_spec(d).update(
         taints=[{"key": "gpu", "effect": "NoSchedule"}],
         startupTaints=[{"key": "gpu", "effect": "NoExecute"},
                        {"key": "init", "value": "pending", "effect": "PreferNoSchedule"}])),
    ("expireAfter Never", set_in("spec.template.spec.expireAfter", "Never")),
    ("expireAfter compound", set_in("spec.template.spec.expireAfter", "1h30m15s")),
    ("terminationGracePeriod", set_in("spec.template.spec.terminationGracePeriod", "48h")),
    ("each consolidation policy", set_in("spec.disruption.consolidationPolicy", "Balanced")),
    ("WhenEmpty policy", set_in("spec.disruption.consolidationPolicy", "WhenEmpty")),
    ("consolidateAfter Never", set_in("spec.disruption.consolidateAfter", "Never")),
    ("budgets in every accepted form", set_in("spec.disruption.budgets", [
        {"nodes": "100%"}, {"nodes": "0%"}, {"nodes": 5},
        {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
        {"nodes": "0", "schedule": "@weekly", "duration": "1h30m"},
        {"nodes": "0", "schedule": "*/15 0-6,22 1,15 JAN-JUN ?", "duration": "10m0s"},
        {"nodes": "1", "reasons": ["Underutilized", "Empty", "Drifted"]},
    ])),
    ("limits as quantities", set_in("spec.limits", {"cpu": 100, "memory": "1Ti",
                                                    "nvidia.com/gpu": "4", "nodes": "10"})),
    ("weight 1", set_in("spec.weight", 1)),
    ("weight 100", set_in("spec.weight", 100)),
    ("static pool with a node limit",
     lambda d: d["spec"].update(replicas=0, limits={"nodes": "5"})),
]  # fmt: skip


@pytest.mark.parametrize("change", [pytest.param(change, id=name) for name, change in VALID])
def test_valid_node_pool(change: Callable[[Doc], None]) -> None:
    assert [str(e) for e in pool_errors(change)] == []


def test_negative_bound_is_rejected_as_a_value_and_for_the_operator() -> None:
    errors = pool_errors(requirement(key="gen", operator="Gte", values=["-1"]))
    assert [e.field for e in errors] == [
        "spec.template.spec.requirements[2].values[0]",
        "spec.template.spec.requirements[2].values",
    ]
    assert "non-negative" in errors[1].message


def test_every_problem_is_reported_not_just_the_first() -> None:
    def change(document: Doc) -> None:
        document["spec"]["weight"] = 500
        document["spec"]["disruption"] = {"consolidationPolicy": "Sometimes"}
        template_spec(document)["requirements"].append(
            {"key": "karpenter.sh/nodepool", "operator": "Gt", "values": ["abc"]}
        )

    fields = sorted(e.field for e in pool_errors(change))
    assert fields == [
        "spec.disruption.consolidationPolicy",
        "spec.template.spec.requirements[2].key",
        "spec.template.spec.requirements[2].values",
        "spec.weight",
    ]


def test_provider_restricted_domain_and_well_known_labels() -> None:
    domains = frozenset({"karpenter.sh", "karpenter.kwok.sh"})
    well_known = frozenset({"karpenter.sh/capacity-type", "karpenter.kwok.sh/instance-family"})
    allowed = requirement(key="karpenter.kwok.sh/instance-family", operator="In", values=["c"])
    reserved = requirement(key="karpenter.kwok.sh/instance-size", operator="In", values=["s"])

    assert pool_errors(allowed, restricted_domains=domains, well_known_labels=well_known) == []
    errors = pool_errors(reserved, restricted_domains=domains, well_known_labels=well_known)
    assert [e.field for e in errors] == ["spec.template.spec.requirements[2].key"]
    assert "karpenter.kwok.sh" in errors[0].message
    # without the provider's domain the same key is a custom label
    assert pool_errors(reserved) == []


# --- NodeClaim ---------------------------------------------------------------------------------


def claim(**spec: Any) -> NodeClaim:
    base: Doc = {
        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "d"},
        "requirements": [
            {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c-4x"]},
        ],
        "resources": {"requests": {"cpu": "1500m", "pods": 3}},
    }
    base.update(spec)
    return NodeClaim.model_validate({"metadata": {"name": "default-abcde"}, "spec": base})


def test_node_claim_may_require_its_node_pool() -> None:
    assert validate_node_claim(claim()) == []


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        pytest.param(
            {
                "requirements": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}
                ]
            },
            "spec.requirements[0].key",
            "restricted",
            id="hostname requirement",
        ),
        pytest.param(
            {"requirements": [{"key": "gen", "operator": "Gt", "values": ["x"]}]},
            "spec.requirements[0].values",
            "non-negative integer",
            id="Gt on a non-integer",
        ),
        pytest.param(
            {
                "taints": [
                    {"key": "a", "effect": "NoSchedule"},
                    {"key": "a", "effect": "NoSchedule"},
                ]
            },
            "spec.taints[1]",
            "duplicate",
            id="duplicate taint",
        ),
        pytest.param({"expireAfter": "forever"}, "spec.expireAfter", "'forever'", id="expireAfter"),
        pytest.param(
            {"terminationGracePeriod": "1d"},
            "spec.terminationGracePeriod",
            "'1d'",
            id="terminationGracePeriod",
        ),
        pytest.param(
            {"nodeClassRef": {"group": "g", "kind": "K", "name": ""}},
            "spec.nodeClassRef.name",
            "must not be empty",
            id="nodeClassRef name",
        ),
        pytest.param(
            {"resources": {"requests": {"memory": "2 GiB"}}},
            "spec.resources.requests[memory]",
            "'2 GiB'",
            id="request quantity",
        ),
    ],
)
def test_invalid_node_claim(spec: Doc, field: str, words: str) -> None:
    errors = validate_node_claim(claim(**spec))
    assert [e.field for e in errors] == [field], [str(e) for e in errors]
    assert words in errors[0].message
    assert str(errors[0]).startswith('NodeClaim "default-abcde": ')
