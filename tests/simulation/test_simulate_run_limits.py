"""The bounds on what a simulation does, counted while it runs: the nodes it launches (pods
each too big to share a node, workloads scaled up and down, static NodePools, replacements)
and the units of work its controllers do (passes over the cluster, pods given to
provisioning, consolidation's simulations and the pods they move). Beyond either, the run
stops with exit status 2 and one line naming the step that went beyond (or the manifests,
while they settle) and the limit, with how far ``--limits large`` goes.

The limits themselves take tens of seconds to reach, so these runs lower the default ones
(as a smaller machine's limits would be) and keep the large ones as they are; the runs a
user commonly asks for run within the default ones as they are."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nodewright.simulation.limits import BY_NAME, DEFAULT
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate
from tests.simulation.conftest import ROOT, RunDump, example

EXAMPLES = ROOT / "examples"

#: Pods that each need a node of their own.
APART = """affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: apart}}
        topologyKey: kubernetes.io/hostname"""


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Default limits of 4 launched Nodes and a million units of work."""
    monkeypatch.setitem(BY_NAME, DEFAULT.name, replace(DEFAULT, launched_nodes=4, work=1_000_000))


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.usefixtures("small_limits")
def test_a_run_stops_when_its_pods_launch_more_nodes_than_the_limit(
    simulate: Simulate, tmp_path: Path
) -> None:
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("apart", 5, extra_spec=APART)
    result = simulate(manifests)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'manifests.yaml'}: refused: the run has launched 5 nodes; a "
        "simulation launches at most 4 (--limits large allows 20,000)"
    ]


@pytest.mark.usefixtures("small_limits")
def test_nodes_launched_count_over_the_whole_run(simulate: Simulate, tmp_path: Path) -> None:
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("apart", 3, extra_spec=APART)
    scenario = (
        "- scale: {kind: Deployment, name: apart, replicas: 0}\n"
        "- scale: {kind: Deployment, name: apart, replicas: 3}\n"
    )
    result = simulate(manifests, scenario)
    assert result.exit_code == 2
    assert _errors(result.stderr) == [
        f"error: {tmp_path / 'scenario.yaml'}:2: steps[1].scale: refused: the run has launched "
        "5 nodes; a simulation launches at most 4 (--limits large allows 20,000)"
    ]


@pytest.mark.usefixtures("small_limits")
def test_pods_each_too_big_to_share_a_node_stop_one_node_beyond_the_limit(
    simulate: Simulate, tmp_path: Path
) -> None:
    # 3 CPU on 4-CPU types: a node each. The pass plans no more nodes than the run may
    # launch and one beyond, rather than one per pod, however many pods wait.
    pool = node_pool(
        requirements="[{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ['4']}]"
    )
    result = simulate(pool + KWOK_NODE_CLASS + deployment("big", 40, cpu="3"))
    assert result.exit_code == 2
    assert _errors(result.stderr) == [
        f"error: {tmp_path / 'manifests.yaml'}: refused: the run has launched 5 nodes; a "
        "simulation launches at most 4 (--limits large allows 20,000)"
    ]


@pytest.mark.usefixtures("small_limits")
def test_a_run_stops_at_the_work_limit(simulate: Simulate, tmp_path: Path) -> None:
    # Two nodes consolidation looks at every 10 s: about 100,000 units an hour.
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("apart", 2, extra_spec=APART)
    result = simulate(manifests, "- advance: 1h\n- advance: 24h\n")
    assert result.exit_code == 2
    (line,) = _errors(result.stderr)
    assert line.startswith(
        f"error: {tmp_path / 'scenario.yaml'}:2: steps[1].advance: refused: the run has done "
    )
    assert line.endswith(
        " units of work (its controllers' passes over the cluster, nodes launched, pods given "
        "to provisioning and moved in consolidation's simulations); a simulation does at most "
        "1,000,000 (--limits large allows 500,000,000)"
    )
    done = int(line.split("the run has done ")[1].split(" units")[0].replace(",", ""))
    assert 1_000_000 < done < 1_100_000


#: Pods no instance type can hold, which provisioning tries again every pass, and as many
#: that share one node.
PENDING = node_pool() + KWOK_NODE_CLASS + deployment("huge", 10, cpu="1000")
BOUND = node_pool() + KWOK_NODE_CLASS + deployment("small", 10, cpu="100m")


@pytest.mark.parametrize(("manifests", "stops"), [(PENDING, True), (BOUND, False)])
def test_pods_left_pending_count_as_work_each_time_provisioning_tries_them(
    simulate: Simulate, monkeypatch: pytest.MonkeyPatch, manifests: str, stops: bool
) -> None:
    monkeypatch.setitem(BY_NAME, DEFAULT.name, replace(DEFAULT, work=1_500_000))
    result = simulate(manifests, "- advance: 1h\n- advance: 2h\n")
    if stops:
        assert result.exit_code == 2
        (line,) = _errors(result.stderr)
        assert "steps[1].advance: refused: the run has done " in line
    else:
        assert result.exit_code == 0, result.stderr
        assert 100_000 < result.report["work"] < 1_500_000


@pytest.mark.usefixtures("small_limits")
def test_the_large_limits_run_what_the_default_ones_stop(simulate: Simulate) -> None:
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("apart", 5, extra_spec=APART)
    result = simulate(manifests, "- advance: 24h\n", "--limits", "large")
    assert result.exit_code == 0, result.stderr
    assert len({pod["node"] for pod in result.pods()}) == 5
    assert result.report["work"] > 1_000_000


def test_a_week_of_the_inflate_example_at_400_pods_runs_within_the_default_limits(
    simulate: Simulate,
) -> None:
    manifests = "---\n".join(
        path.read_text() for path in sorted((EXAMPLES / "inflate" / "manifests").iterdir())
    )
    scenario = "- scale: {kind: Deployment, name: inflate, replicas: 400}\n- advance: 168h\n"
    result = simulate(manifests, scenario)
    assert result.exit_code == 0, result.stderr
    assert result.pending() == []
    # A small share of the limit: a cluster ten times the size runs a week too.
    assert result.report["work"] < DEFAULT.work / 10


def test_a_snapshots_nodes_are_not_launched_by_the_run(
    run_dump: RunDump, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The example's what-if launches nothing; its Karpenter nodes get NodeClaims as it loads.
    monkeypatch.setitem(BY_NAME, DEFAULT.name, replace(DEFAULT, launched_nodes=0))
    run = run_dump(example())
    assert run.exit_code == 0, run.stderr


def test_a_day_of_the_example_what_if_runs_within_the_default_limits(
    run_dump: RunDump, tmp_path: Path
) -> None:
    scenario = tmp_path / "day.yaml"
    scenario.write_text("- advance: 24h\n")
    run = run_dump(example(), "--scenario", str(scenario))
    assert run.exit_code == 0, run.stderr
    # A small share of the limit: a what-if of 60 nodes (the snapshot limit) runs a day too.
    assert run.report["work"] < DEFAULT.work / 10
