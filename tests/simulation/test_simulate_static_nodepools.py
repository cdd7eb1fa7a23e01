"""Static NodePools offline: ``simulate --feature-gates StaticCapacity=true`` and the scenario
step that scales a NodePool as ``kubectl scale nodepool`` does, with clear errors for the
changes the API server refuses."""

from __future__ import annotations

from pathlib import Path

from nodewright.testing.manifests import KWOK_NODE_CLASS, node_pool
from tests.conftest import Simulate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "static"
GATE = ("--feature-gates", "StaticCapacity=true")


def static_pool(replicas: int = 2) -> str:
    return node_pool("warm", weight=None, replicas=replicas)


def _example() -> str:
    return "\n---\n".join(
        (EXAMPLE / "manifests" / name).read_text() for name in ("nodepool.yaml", "web.yaml")
    )


def test_the_static_example_scales_up_to_its_node_limit_and_down_keeping_the_busy_node(
    simulate: Simulate,
) -> None:
    result = simulate(_example(), (EXAMPLE / "scenario.yaml").read_text(), *GATE)
    assert result.exit_code == 0, result.stderr
    (node,) = result.nodes()
    assert node["nodePool"] == "warm"
    assert [p.split("/")[1].startswith("web-") for p in node["pods"]] == [True]
    assert len(result.report["removedNodes"]) == 3, "4 nodes (limits.nodes), scaled to 1"
    assert "provisioning nodeclaims to satisfy replica count" in result.stdout
    assert "nodepool node limit reached\tNodePool=warm" in result.stdout
    assert "deprovisioning nodeclaims to satisfy replica count" in result.stdout
    assert result.pending() == []


def test_without_the_gate_a_static_pool_launches_nothing_and_says_why(
    simulate: Simulate,
) -> None:
    result = simulate(static_pool() + KWOK_NODE_CLASS)
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    assert 'NodePool "warm" is static (spec.replicas) but the StaticCapacity feature gate' in (
        result.stderr
    )


def test_scaling_a_static_pool_to_zero_removes_every_node(simulate: Simulate) -> None:
    scenario = "- scale: {kind: NodePool, name: warm, replicas: 0}\n"
    result = simulate(static_pool(3) + KWOK_NODE_CLASS, scenario, *GATE)
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    assert len(result.report["removedNodes"]) == 3


def test_a_dynamic_pool_cannot_be_scaled(simulate: Simulate) -> None:
    scenario = "- scale: {kind: NodePool, name: default, replicas: 2}\n"
    result = simulate(node_pool() + KWOK_NODE_CLASS, scenario, *GATE)
    assert result.exit_code == 2
    assert (
        "steps[0].scale: NodePool 'default' is dynamic (no spec.replicas), so it cannot be "
        "scaled: Cannot transition NodePool between static (replicas set) and dynamic"
    ) in result.stderr


def test_scaling_a_missing_pool_or_with_a_namespace_is_refused(simulate: Simulate) -> None:
    missing = simulate(
        static_pool() + KWOK_NODE_CLASS,
        "- scale: {kind: NodePool, name: cold, replicas: 1}\n",
        *GATE,
    )
    assert missing.exit_code == 2
    assert "steps[0].scale: NodePool 'cold' does not exist" in missing.stderr
    namespaced = simulate(
        static_pool() + KWOK_NODE_CLASS,
        "- scale: {kind: NodePool, name: warm, namespace: default, replicas: 1}\n",
        *GATE,
    )
    assert namespaced.exit_code == 2
    assert "steps[0].scale.namespace: a NodePool is cluster-scoped" in namespaced.stderr


def test_scaling_past_the_simulation_bound_is_refused(simulate: Simulate) -> None:
    scenario = "- scale: {kind: NodePool, name: warm, replicas: 1001}\n"
    result = simulate(static_pool() + KWOK_NODE_CLASS, scenario, *GATE)
    assert result.exit_code == 2
    assert (
        "static NodePools would ask for 1,001 nodes; a simulation runs at most 1,000 "
        "(--limits large allows 10,000)"
    ) in result.stderr


def test_applying_a_switch_between_static_and_dynamic_is_refused(
    simulate: Simulate, tmp_path: Path
) -> None:
    (tmp_path / "dynamic.yaml").write_text(
        static_pool().replace("  replicas: 2\n", "") + KWOK_NODE_CLASS
    )
    result = simulate(static_pool() + KWOK_NODE_CLASS, "- apply: dynamic.yaml\n", *GATE)
    assert result.exit_code == 2
    assert (
        'steps[0].apply: NodePool "warm": spec.replicas: Cannot transition NodePool between '
        "static (replicas set) and dynamic (replicas unset) provisioning modes"
    ) in result.stderr
