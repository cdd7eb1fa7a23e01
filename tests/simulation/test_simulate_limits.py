"""The bounds on what one simulation may be asked to do, counted over the whole run: pods
asked for by all workloads together (initial manifests, later applies and scale steps), the
number of scenario steps and the simulated time they ask for. Each is an input error (exit
status 2) naming the step, before the step runs."""

from __future__ import annotations

from pathlib import Path

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

#: One running pod, and a Deployment scaled to nothing, to scale later.
MANIFESTS = node_pool() + KWOK_NODE_CLASS + deployment("small", 1) + deployment("big", 0)


def test_a_scale_step_counts_the_pods_of_every_workload(simulate: Simulate, tmp_path: Path) -> None:
    scenario = "- scale: {kind: Deployment, name: big, replicas: 100000}\n"
    result = simulate(MANIFESTS, scenario)
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: {tmp_path / 'scenario.yaml'}:1: steps[0].scale.replicas: the workloads would "
        "ask for 100001 pods together; a simulation runs at most 100000"
    )


def test_an_apply_step_counts_the_pods_already_asked_for(
    simulate: Simulate, tmp_path: Path
) -> None:
    (tmp_path / "more.yaml").write_text(deployment("more", 100_000))
    result = simulate(MANIFESTS, "- apply: more.yaml\n")
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: {tmp_path / 'scenario.yaml'}:1: steps[0].apply: the workloads would ask for "
        "100001 pods together; a simulation runs at most 100000"
    )


def test_scaling_a_workload_down_and_another_up_within_the_bound_runs(
    simulate: Simulate,
) -> None:
    scenario = (
        "- scale: {kind: Deployment, name: small, replicas: 0}\n"
        "- scale: {kind: Deployment, name: big, replicas: 3}\n"
    )
    result = simulate(MANIFESTS, scenario)
    assert result.exit_code == 0
    assert sorted(p["name"].rsplit("-", 2)[0] for p in result.pods()) == ["big"] * 3


def test_a_scenario_has_at_most_a_thousand_steps(simulate: Simulate, tmp_path: Path) -> None:
    result = simulate(MANIFESTS, "- advance: 1s\n" * 1001)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'scenario.yaml'}: refused: 1001 steps; a scenario has at most 1000"
    ]


def test_a_scenario_asks_for_at_most_1440_hours(simulate: Simulate, tmp_path: Path) -> None:
    scenario = "- advance: 720h\n- settle: {}\n- advance: 718h\n- advance: 1s\n"
    result = simulate(MANIFESTS, scenario)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'scenario.yaml'}:4: steps[3].advance: refused: the steps so far "
        "ask for 1440h1s of simulated time; a scenario runs at most 1440h (each settle "
        "without a time counts 2h)"
    ]
