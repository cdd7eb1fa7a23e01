"""The bounds on what one simulation may be asked to do, counted over the whole run: pods
asked for by all workloads together (initial manifests, later applies and scale steps), the
number of scenario steps and the simulated time they ask for. Each is an input error (exit
status 2) naming the step, before the step runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate
from tests.simulation.conftest import RunDump

#: One running pod, and a Deployment scaled to nothing, to scale later.
MANIFESTS = node_pool() + KWOK_NODE_CLASS + deployment("small", 1) + deployment("big", 0)


def test_a_scale_step_counts_the_pods_of_every_workload(simulate: Simulate, tmp_path: Path) -> None:
    scenario = "- scale: {kind: Deployment, name: big, replicas: 20000}\n"
    result = simulate(MANIFESTS, scenario)
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: {tmp_path / 'scenario.yaml'}:1: steps[0].scale.replicas: the workloads would "
        "ask for 20,001 pods together; a simulation runs at most 20,000 (--limits large "
        "allows 100,000)"
    )


def test_an_apply_step_counts_the_pods_already_asked_for(
    simulate: Simulate, tmp_path: Path
) -> None:
    (tmp_path / "more.yaml").write_text(deployment("more", 20_000))
    result = simulate(MANIFESTS, "- apply: more.yaml\n")
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: {tmp_path / 'scenario.yaml'}:1: steps[0].apply: the workloads would ask for "
        "20,001 pods together; a simulation runs at most 20,000 (--limits large allows "
        "100,000)"
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


def test_a_scenario_has_at_most_500_steps(simulate: Simulate, tmp_path: Path) -> None:
    result = simulate(MANIFESTS, "- advance: 1s\n" * 501)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'scenario.yaml'}: refused: 501 steps; a scenario has at most 500 "
        "(--limits large allows 1,000)"
    ]


def test_a_scenario_asks_for_at_most_a_week(simulate: Simulate, tmp_path: Path) -> None:
    scenario = "- advance: 100h\n- settle: {}\n- advance: 66h\n- advance: 1s\n"
    result = simulate(MANIFESTS, scenario)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'scenario.yaml'}:4: steps[3].advance: refused: the steps so far "
        "ask for 168h1s of simulated time (each settle without a time counts 2h); a scenario "
        "runs at most 168h (--limits large allows 1440h)"
    ]


#: Pods that each need a node of their own, and pods that do not.
HOSTNAME_ANTI_AFFINITY = """affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: apart}}
        topologyKey: kubernetes.io/hostname"""
HOSTNAME_SPREAD = """topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
     labelSelector: {matchLabels: {app: apart}}}"""
LOOSE_SPREADS = """topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,
     labelSelector: {matchLabels: {app: apart}}}
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
     labelSelector: {matchLabels: {app: apart}}}"""


#: The refusal of 1,001 pods that each need a node of their own, after the file and count.
APART_REFUSED = (
    "each need a node of their own (a required hostname anti-affinity or a DoNotSchedule "
    "hostname spread) together; a simulation runs at most 1,000 (--limits large allows 6,000)"
)


@pytest.mark.parametrize("spec", [HOSTNAME_ANTI_AFFINITY, HOSTNAME_SPREAD], ids=["anti", "spread"])
def test_at_most_a_thousand_pods_may_each_need_a_node_of_their_own(
    simulate: Simulate, tmp_path: Path, spec: str
) -> None:
    apart = deployment("apart", 1001, extra_spec=spec)
    result = simulate(node_pool() + KWOK_NODE_CLASS + apart)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'manifests.yaml'}: the workloads would ask for 1,001 pods that "
        + APART_REFUSED
    ]


def test_pods_that_each_need_a_node_of_their_own_count_over_every_workload(
    simulate: Simulate, tmp_path: Path
) -> None:
    # Pods of the two workloads could share nodes, but each pod's constraint still weighs on
    # every placement: 20 such workloads of 1,000 pods do not finish in minutes.
    first = deployment("apart", 600, extra_spec=HOSTNAME_ANTI_AFFINITY)
    second = deployment("apart-too", 401, extra_spec=HOSTNAME_SPREAD.replace("apart", "apart-too"))
    result = simulate(node_pool() + KWOK_NODE_CLASS + first + second)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'manifests.yaml'}: the workloads would ask for 1,001 pods that "
        + APART_REFUSED
    ]


def test_a_scale_step_counts_the_pods_that_need_a_node_of_their_own(
    simulate: Simulate, tmp_path: Path
) -> None:
    manifests = MANIFESTS + deployment("apart", 0, extra_spec=HOSTNAME_ANTI_AFFINITY)
    scenario = "- scale: {kind: Deployment, name: apart, replicas: 1001}\n"
    result = simulate(manifests, scenario)
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: {tmp_path / 'scenario.yaml'}:1: steps[0].scale.replicas: the workloads would "
        "ask for 1,001 pods that each need a node of their own (a required hostname "
        "anti-affinity or a DoNotSchedule hostname spread) together; a simulation runs at "
        "most 1,000 (--limits large allows 6,000)"
    )


def test_spreads_that_let_pods_share_a_node_count_only_towards_the_pod_limit(
    simulate: Simulate,
) -> None:
    # no NodePool offers the label, so the pods stay pending and the run is short
    pending = LOOSE_SPREADS + "\nnodeSelector: {example.com/nowhere: x}"
    result = simulate(MANIFESTS + deployment("apart", 1001, extra_spec=pending))
    assert result.exit_code == 0, result.stderr
    assert len(result.pending()) == 1001


def test_a_snapshot_has_at_most_60_nodes(run_dump: RunDump, tmp_path: Path) -> None:
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{index}"}}
        for index in range(61)
    ]
    run = run_dump({"apiVersion": "v1", "kind": "List", "items": nodes})
    assert run.exit_code == 2
    assert [line for line in run.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {tmp_path / 'dump.yaml'}: refused: 61 Nodes; a simulation starts from at most "
        "60 (--limits large allows 5,000); or dump the Nodes of fewer NodePools, with their pods"
    ]


def test_a_snapshot_counts_towards_the_pod_limit(run_dump: RunDump, tmp_path: Path) -> None:
    (web,) = [d for d in yaml.safe_load_all(deployment("web", 20_001)) if d]
    run = run_dump({"apiVersion": "v1", "kind": "List", "items": [web]})
    assert run.exit_code == 2
    assert [line for line in run.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {tmp_path / 'dump.yaml'}: the workloads would ask for 20,001 pods together; "
        "a simulation runs at most 20,000 (--limits large allows 100,000)"
    ]
