"""The CEL rules (``x-kubernetes-validations``) of the CRDs ``nodewright crds`` prints,
evaluated with cel-python on valid and invalid NodePools, NodeClaims and KWOKNodeClasses;
and, for every sample, nodewright's own validation agrees with the rules."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.validation import validate_node_claim, validate_node_pool
from nodewright.commands.crds import all_crds
from nodewright.commands.host import load_host
from tests.builders import pool_manifest
from tests.crds.cel import Broken, evaluate, validate

Edit = Callable[[dict[str, Any]], object]  # what it returns is ignored


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[str, Any]]:
    return {crd["spec"]["names"]["kind"]: dict(crd) for crd in all_crds(load_host())}


def _node_pool() -> dict[str, Any]:
    return pool_manifest(
        labels={"team": "payments", "node.kubernetes.io/role": "web"},
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
            {"key": "karpenter.kwok.sh/instance-cpu", "operator": "Gt", "values": ["2"]},
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": ["m-4x-amd64-linux", "c-4x-amd64-linux"],
                "minValues": 2,
            },
            {"key": "topology.kubernetes.io/zone", "operator": "Exists"},
            {"key": "kops.k8s.io/instancegroup", "operator": "Exists"},
        ],
        expire_after=None,
        policy=None,
        consolidate_after=None,
        budgets=[{"nodes": "10%"}, {"nodes": "0", "schedule": "@daily", "duration": "10m"}],
        limits={"cpu": "1000"},
        weight=10,
    )


def _node_claim() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-abcde"},
        "spec": {
            "requirements": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["a"]},
            ],
            "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "x"},
        },
    }


def _requirements(pool: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = pool["spec"]["template"]["spec"]["requirements"]
    return found


def _add_requirement(**requirement: Any) -> Edit:
    return lambda pool: _requirements(pool).append(dict(requirement))


def _template_label(key: str) -> Edit:
    return lambda pool: pool["spec"]["template"]["metadata"]["labels"].update({key: "x"})


def _static(pool: dict[str, Any]) -> None:
    pool["spec"]["replicas"] = 3
    pool["spec"].pop("weight")


def _static_with_a_cpu_limit(pool: dict[str, Any]) -> None:
    _static(pool)
    pool["spec"].update({"limits": {"cpu": "10"}})


def _messages(broken: list[Broken]) -> list[str]:
    return [b.message for b in broken]


def _nodewright_pool_errors(pool: dict[str, Any]) -> list[str]:
    return [e.message for e in validate_node_pool(NodePool.model_validate(pool))]


# -- NodePool ------------------------------------------------------------------------------------


def test_a_valid_node_pool_breaks_no_rule(crds: dict[str, dict[str, Any]]) -> None:
    pool = _node_pool()
    assert validate(crds["NodePool"], pool) == []
    assert _nodewright_pool_errors(pool) == []
    static = _node_pool()
    _static(static)
    static["spec"]["limits"] = {"nodes": "5"}
    assert validate(crds["NodePool"], static) == []
    assert _nodewright_pool_errors(static) == []


INVALID_NODE_POOLS: dict[str, tuple[Edit, str]] = {
    "In without values": (
        _add_requirement(key="team", operator="In", values=[]),
        "requirements with operator 'In' must have a value defined",
    ),
    "Gt with two values": (
        _add_requirement(key="karpenter.kwok.sh/instance-cpu", operator="Gt", values=["1", "2"]),
        "must have a single positive integer value",
    ),
    "Lt with a word": (
        _add_requirement(key="karpenter.kwok.sh/instance-cpu", operator="Lt", values=["many"]),
        "must have a single positive integer value",
    ),
    "Gt below zero": (
        _add_requirement(key="karpenter.kwok.sh/instance-cpu", operator="Gt", values=["-1"]),
        "must have a single positive integer value",
    ),
    "minValues above the values": (
        _add_requirement(key="team", operator="In", values=["a"], minValues=2),
        "requirements with 'minValues' must have at least that many values",
    ),
    "requirement on karpenter.sh/nodepool": (
        _add_requirement(key="karpenter.sh/nodepool", operator="In", values=["x"]),
        'label "karpenter.sh/nodepool" is restricted',
    ),
    "requirement on kubernetes.io/hostname": (
        _add_requirement(key="kubernetes.io/hostname", operator="In", values=["x"]),
        'label "kubernetes.io/hostname" is restricted',
    ),
    "requirement in the karpenter.sh domain": (
        _add_requirement(key="karpenter.sh/custom", operator="Exists"),
        'label domain "karpenter.sh" is restricted',
    ),
    "requirement in a karpenter.sh subdomain": (
        _add_requirement(key="team.karpenter.sh/custom", operator="Exists"),
        'label domain "karpenter.sh" is restricted',
    ),
    "template label in the karpenter.sh domain": (
        _template_label("karpenter.sh/custom"),
        'label domain "karpenter.sh" is restricted',
    ),
    "template label karpenter.sh/nodepool": (
        _template_label("karpenter.sh/nodepool"),
        'label "karpenter.sh/nodepool" is restricted',
    ),
    "template label kubernetes.io/hostname": (
        _template_label("kubernetes.io/hostname"),
        'label "kubernetes.io/hostname" is restricted',
    ),
    "schedule without duration": (
        lambda pool: pool["spec"]["disruption"]["budgets"].append(
            {"nodes": "1", "schedule": "@daily"}
        ),
        "'schedule' must be set with 'duration'",
    ),
    "static pool with a weight": (
        lambda pool: pool["spec"].update({"replicas": 2}),
        "'weight' is not supported on static NodePools",
    ),
    "static pool with a cpu limit": (
        _static_with_a_cpu_limit,
        "only 'limits.nodes' is supported on static NodePools",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID_NODE_POOLS))
def test_an_invalid_node_pool_breaks_its_rule_and_nodewright_agrees(
    crds: dict[str, dict[str, Any]], case: str
) -> None:
    edit, expected = INVALID_NODE_POOLS[case]
    pool = _node_pool()
    edit(pool)
    broken = _messages(validate(crds["NodePool"], pool))
    assert any(expected in message for message in broken), broken
    assert _nodewright_pool_errors(pool), f"nodewright accepts what the CRD rejects: {case}"


def test_transition_rules_hold_on_update(crds: dict[str, dict[str, Any]]) -> None:
    stored = _node_pool()
    same = copy.deepcopy(stored)
    same["spec"]["weight"] = 20
    assert validate(crds["NodePool"], same, old=stored) == []

    other_kind = copy.deepcopy(stored)
    other_kind["spec"]["template"]["spec"]["nodeClassRef"]["kind"] = "EC2NodeClass"
    assert "nodeClassRef.kind is immutable" in _messages(
        validate(crds["NodePool"], other_kind, old=stored)
    )
    renamed = copy.deepcopy(stored)
    renamed["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "other"
    assert validate(crds["NodePool"], renamed, old=stored) == []  # the name may change

    static = copy.deepcopy(stored)
    _static(static)
    static["spec"]["limits"] = {}
    messages = _messages(validate(crds["NodePool"], static, old=stored))
    assert any("between static" in m for m in messages), messages


def test_a_static_pool_may_be_scaled_but_never_turned_dynamic(
    crds: dict[str, dict[str, Any]],
) -> None:
    stored = _node_pool()
    _static(stored)
    stored["spec"]["limits"] = {"nodes": "10"}
    assert validate(crds["NodePool"], stored) == []
    scaled = copy.deepcopy(stored)
    scaled["spec"]["replicas"] = 7
    assert validate(crds["NodePool"], scaled, old=stored) == []
    to_zero = copy.deepcopy(stored)
    to_zero["spec"]["replicas"] = 0
    assert validate(crds["NodePool"], to_zero, old=stored) == []
    dynamic = copy.deepcopy(stored)
    dynamic["spec"].pop("replicas")
    messages = _messages(validate(crds["NodePool"], dynamic, old=stored))
    assert any("between static" in m for m in messages), messages


# -- NodeClaim -----------------------------------------------------------------------------------


def test_node_claim_rules(crds: dict[str, dict[str, Any]]) -> None:
    crd = crds["NodeClaim"]
    claim = _node_claim()
    assert validate(crd, claim) == []
    assert validate_node_claim(NodeClaim.model_validate(claim)) == []
    # the spec is immutable: only an unchanged spec passes an update
    assert validate(crd, claim, old=copy.deepcopy(claim)) == []
    changed = copy.deepcopy(claim)
    changed["spec"]["requirements"][1]["values"] = ["b"]
    assert "spec is immutable" in _messages(validate(crd, changed, old=claim))

    empty_in = copy.deepcopy(claim)
    empty_in["spec"]["requirements"].append({"key": "team", "operator": "In", "values": []})
    assert any("must have a value defined" in m for m in _messages(validate(crd, empty_in)))
    assert validate_node_claim(NodeClaim.model_validate(empty_in))


# -- KWOKNodeClass -------------------------------------------------------------------------------


def test_kwok_node_class_rules(crds: dict[str, dict[str, Any]]) -> None:
    crd = crds["KWOKNodeClass"]
    valid = {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": "default"},
        "spec": {"nodeRegistrationDelay": "5s"},
    }
    assert validate(crd, valid) == []
    assert validate(crd, {**valid, "spec": {}}) == []


# -- the evaluator itself ------------------------------------------------------------------------


def test_the_evaluator_can_fail() -> None:
    assert evaluate("self.size() == 2", [1, 2])
    assert not evaluate("self.size() == 2", [1])
    assert not evaluate("int(self) >= 0", "many")  # an evaluation error breaks the rule
    assert evaluate('self.find("^([^/]+)") == "a.b"', "a.b/c")
    assert evaluate("self == oldSelf", {"a": 1}, {"a": 1})
    assert not evaluate("self == oldSelf", {"a": 1}, {"a": 2})


# -- the CRD's label rules and nodewright's validation agree ------------------------------------

LABEL_KEYS = [
    "team",
    "example.com/team",
    "kubernetes.io/custom",
    "foo.kubernetes.io/x",
    "example-kubernetes.io/x",
    "topology.kubernetes.io/custom",
    "node.kubernetes.io/role",
    "sub.node.kubernetes.io/x",
    "node-restriction.kubernetes.io/x",
    "k8s.io/x",
    "foo.k8s.io/x",
    "kops.k8s.io/instancegroup",
    "karpenter.sh/custom",
    "x.karpenter.sh/custom",
    "examplekarpenter.sh/x",
    "karpenter.sh/capacity-type",
    "karpenter.sh/nodepool",
    "karpenter.kwok.sh/instance-cpu",
    "karpenter.kwok.sh/custom",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "beta.kubernetes.io/arch",
    "failure-domain.beta.kubernetes.io/zone",
    "node.kubernetes.io/windows-build",
    "karpenter.k8s.aws/instance-family",
    "kubernetes.azure.com/cluster",
]


@pytest.mark.parametrize("where", ["requirement", "template label"])
@pytest.mark.parametrize("key", LABEL_KEYS)
def test_the_label_rules_and_nodewright_agree_on_every_key(
    crds: dict[str, dict[str, Any]], key: str, where: str
) -> None:
    pool = _node_pool()
    if where == "requirement":
        _requirements(pool).append({"key": key, "operator": "Exists"})
    else:
        pool["spec"]["template"]["metadata"]["labels"][key] = "x"
    rejected_by_crd = _messages(validate(crds["NodePool"], pool))
    rejected_by_nodewright = _nodewright_pool_errors(pool)
    assert bool(rejected_by_crd) == bool(rejected_by_nodewright), (
        rejected_by_crd,
        rejected_by_nodewright,
    )


@pytest.mark.parametrize("where", ["requirement", "template label"])
@pytest.mark.parametrize(
    "key",
    ["kubernetes.io/custom", "topology.kubernetes.io/custom", "k8s.io/x", "team.k8s.io/role"],
)
def test_kubernetes_label_domains_are_open_to_node_pools(
    crds: dict[str, dict[str, Any]], key: str, where: str
) -> None:
    """Karpenter dropped its kubernetes.io and k8s.io restriction (kubernetes-sigs/karpenter
    #2586): the CRD and nodewright accept such keys alike."""
    pool = _node_pool()
    if where == "requirement":
        _requirements(pool).append({"key": key, "operator": "Exists"})
    else:
        pool["spec"]["template"]["metadata"]["labels"][key] = "x"
    assert _messages(validate(crds["NodePool"], pool)) == []
    assert _nodewright_pool_errors(pool) == []


@pytest.mark.parametrize("key", ["kubernetes.io/hostname", "karpenter.sh/custom"])
def test_hostname_and_the_karpenter_domain_stay_reserved(
    crds: dict[str, dict[str, Any]], key: str
) -> None:
    pool = _node_pool()
    pool["spec"]["template"]["metadata"]["labels"][key] = "x"
    assert _messages(validate(crds["NodePool"], pool))
    assert _nodewright_pool_errors(pool)
