"""A NodePool requirement on a label of the user's own (``example.com/team``) labels the nodes
it launches with one value it allows, whatever its operator, as Karpenter resolves it; so the
nodes satisfy their own NodePool and are never found drifted from it (an unlabelled node was
``RequirementsDrifted`` the moment it launched and replaced every few seconds, forever)."""

from __future__ import annotations

import pytest

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate, SimulateResult

TEAM = "example.com/team"
#: Long enough for drift to be noticed and a replacement launched many times over.
SETTLE = "- settle: 3m\n"


def _requirement(operator: str, values: list[str]) -> str:
    shown = ", ".join(f'"{v}"' for v in values)
    return f"[{{key: {TEAM}, operator: {operator}, values: [{shown}]}}]"


def _assert_labelled_and_kept(result: SimulateResult, value: str) -> None:
    assert result.exit_code == 0, result.stderr
    nodes = result.nodes()
    assert [n["labels"].get(TEAM) for n in nodes] == [value]
    assert result.report["removedNodes"] == []
    assert "RequirementsDrifted" not in result.stdout
    assert result.pending() == []


@pytest.mark.parametrize(
    ("operator", "values", "label"),
    [
        ("In", ["b", "a"], "a"),  # several values: one of them (the first in order)
        ("Exists", [], "0"),  # any value: Karpenter picks an integer
        ("NotIn", ["0", "1"], "2"),  # an integer the requirement does not exclude
        ("Gt", ["5"], "6"),
        ("Lt", ["3"], "0"),
        ("Gte", ["7"], "7"),
        ("Lte", ["4"], "0"),
    ],
)
def test_a_custom_label_requirement_labels_the_node_and_never_drifts_it(
    simulate: Simulate, operator: str, values: list[str], label: str
) -> None:
    manifests = (
        KWOK_NODE_CLASS
        + node_pool(requirements=_requirement(operator, values))
        + deployment("web", 1)
    )
    _assert_labelled_and_kept(simulate(manifests, SETTLE), label)


def test_a_pod_selecting_one_allowed_value_gets_a_node_with_that_value(
    simulate: Simulate,
) -> None:
    manifests = (
        KWOK_NODE_CLASS
        + node_pool(requirements=_requirement("In", ["a", "b"]))
        + deployment("web", 1, extra_spec=f"nodeSelector: {{{TEAM}: b}}")
    )
    _assert_labelled_and_kept(simulate(manifests, SETTLE), "b")


def test_a_does_not_exist_requirement_leaves_the_label_off_and_the_node_kept(
    simulate: Simulate,
) -> None:
    manifests = (
        KWOK_NODE_CLASS
        + node_pool(requirements=_requirement("DoesNotExist", []))
        + deployment("web", 1)
    )
    result = simulate(manifests, SETTLE)
    assert result.exit_code == 0, result.stderr
    assert [TEAM in n["labels"] for n in result.nodes()] == [False]
    assert result.report["removedNodes"] == []


def test_a_consolidation_replacement_is_labelled_too(simulate: Simulate) -> None:
    # A pod left alone on a node too big for it: consolidation replaces the node by a cheaper one,
    # which must carry the label as well and stay.
    manifests = (
        KWOK_NODE_CLASS
        + node_pool(
            requirements=_requirement("Exists", [])[:-1]
            + ', {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}]',
            disruption="{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}",
        )
        + deployment("big", 1, cpu="7")
        + deployment("small", 1)
    )
    scenario = "- delete: {kind: Deployment, name: big, namespace: default}\n" + SETTLE
    result = simulate(manifests, scenario)
    assert result.exit_code == 0, result.stderr
    removed = result.report["removedNodes"]
    assert [r["disruptionReason"] for r in removed] == ["Underutilized"], removed
    _assert_labelled_and_kept_after_replacement(result)


def _assert_labelled_and_kept_after_replacement(result: SimulateResult) -> None:
    (node,) = result.nodes()
    assert node["labels"].get(TEAM) == "0"
    assert "RequirementsDrifted" not in result.stdout


def test_a_static_pool_labels_its_nodes_and_keeps_them(simulate: Simulate) -> None:
    manifests = KWOK_NODE_CLASS + node_pool(
        "warm", weight=None, replicas=2, requirements=_requirement("In", ["x", "y"])
    )
    result = simulate(manifests, SETTLE, "--feature-gates", "StaticCapacity=true")
    assert result.exit_code == 0, result.stderr
    assert [n["labels"].get(TEAM) for n in result.nodes()] == ["x", "x"]
    assert result.report["removedNodes"] == []
    assert "RequirementsDrifted" not in result.stdout


def test_a_pool_requiring_a_label_below_zero_is_refused_as_no_node_could_carry_it(
    simulate: Simulate,
) -> None:
    manifests = KWOK_NODE_CLASS + node_pool(requirements=_requirement("Lt", ["0"]))
    result = simulate(manifests, SETTLE)
    assert result.exit_code == 2
    assert (
        "spec.template.spec.requirements[0].values: operator Lt 0 allows no value, since a "
        "label value is never a negative integer, so no node could satisfy it"
    ) in result.stderr


def test_a_pod_requiring_a_label_below_zero_launches_nothing(simulate: Simulate) -> None:
    affinity = f"""
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions: [{{key: {TEAM}, operator: Lt, values: ["0"]}}]
"""
    manifests = (
        KWOK_NODE_CLASS
        + node_pool(requirements=_requirement("Exists", []))
        + deployment("web", 1, extra_spec=affinity)
    )
    result = simulate(manifests, SETTLE)
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    assert result.report["removedNodes"] == []
    (pending,) = result.pending()
    assert f"key {TEAM} Lt 0 allows no label value" in pending["reason"]
