"""One home per concept in the API layer: the values a field may take are listed once, and
every check uses that list (the CRD the API server enforces, Karpenter's validation and the API
server's own rules agree); every check collects its problems through ``FieldErrors``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nodewright.api import core, karpenter
from nodewright.api.crds import core_crds
from nodewright.api.kubevalidation import validate_object
from nodewright.api.validation import validate_node_pool

ROOT = Path(__file__).resolve().parents[2]

#: Each enumeration and the module that is its one home.
HOMES = {
    "LABEL_SELECTOR_OPERATORS": ("core/nodewright/api/core.py", core.LABEL_SELECTOR_OPERATORS),
    "TAINT_EFFECTS": ("core/nodewright/api/core.py", core.TAINT_EFFECTS),
    "CONSOLIDATION_POLICIES": (
        "core/nodewright/api/karpenter.py",
        karpenter.CONSOLIDATION_POLICIES,
    ),
    "DISRUPTION_REASONS": ("core/nodewright/api/karpenter.py", karpenter.DISRUPTION_REASONS),
}


def string_collections(path: Path) -> list[tuple[int, frozenset[str]]]:
    """Every tuple, list or set literal of strings only in a module, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
            values = [
                e.value
                for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
            if len(values) == len(node.elts):
                found.append((node.lineno, frozenset(values)))
    return found


@pytest.mark.parametrize("name", HOMES)
def test_each_enumeration_is_written_out_once(name: str) -> None:
    home, values = HOMES[name]
    wanted = frozenset(values)
    places = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "core").rglob("*.py"))
        for line, literal in string_collections(path)
        if wanted <= literal
    ]
    assert len(places) == 1, f"{name} is written out in {places}"
    assert places[0].startswith(home + ":")


def crd_property(kind: str, *path: str) -> dict[str, object]:
    (crd,) = [c for c in core_crds() if c["spec"]["names"]["kind"] == kind]
    node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for step in path:
        node = node["items"] if step == "[]" else node["properties"][step]
    return dict(node)


def test_the_crds_enumerate_the_values_validation_accepts() -> None:
    template = ("spec", "template", "spec")
    assert crd_property("NodePool", *template, "requirements", "[]", "operator")["enum"] == list(
        karpenter.REQUIREMENT_OPERATORS
    )
    assert crd_property("NodePool", *template, "taints", "[]", "effect")["enum"] == list(
        core.TAINT_EFFECTS
    )
    disruption = ("spec", "disruption")
    assert crd_property("NodePool", *disruption, "consolidationPolicy")["enum"] == list(
        karpenter.CONSOLIDATION_POLICIES
    )
    assert crd_property("NodePool", *disruption, "budgets", "[]", "reasons", "[]")["enum"] == list(
        karpenter.DISRUPTION_REASONS
    )


def pool(**disruption: object) -> karpenter.NodePool:
    return karpenter.NodePool.model_validate(
        {
            "metadata": {"name": "p"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {"group": "x.sh", "kind": "X", "name": "x"},
                        "requirements": [
                            {"key": "k", "operator": op, "values": ["1"]}
                            for op in karpenter.REQUIREMENT_OPERATORS
                            if op not in ("Exists", "DoesNotExist")
                        ],
                        "taints": [{"key": "t", "effect": e} for e in core.TAINT_EFFECTS],
                    }
                },
                "disruption": disruption,
            },
        }
    )


@pytest.mark.parametrize("policy", karpenter.CONSOLIDATION_POLICIES)
def test_karpenter_validation_accepts_every_listed_value(policy: str) -> None:
    budget = {"nodes": "1", "reasons": list(karpenter.DISRUPTION_REASONS)}
    assert validate_node_pool(pool(consolidationPolicy=policy, budgets=[budget])) == []


def test_the_api_server_rules_accept_every_listed_taint_effect() -> None:
    node = core.Node.model_validate(
        {
            "metadata": {"name": "n"},
            "spec": {"taints": [{"key": "t", "effect": e} for e in core.TAINT_EFFECTS]},
        }
    )
    assert validate_object(node) == []


def test_checks_collect_their_problems_through_field_errors() -> None:
    """A check reports through :class:`FieldErrors` (one place builds a ``FieldError`` per
    problem) instead of appending hand-built ``FieldError`` objects to a list of its own."""
    hand_built = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append"
                and any(
                    isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "FieldError"
                    for arg in node.args
                )
            ):
                hand_built.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    home = "core/nodewright/api/fielderror.py:"
    assert [place for place in hand_built if not place.startswith(home)] == []
