"""The bounds on what a simulation does, counted while it runs: the nodes it launches (pods
each too big to share a node, workloads scaled up and down, static NodePools, replacements),
its node-hours and its pod-hours (each Node, each pod, times the simulated hours it is
there). Beyond any, the run stops with exit status 2 and one line naming the step that went
beyond (or the manifests, while they settle) and the limit, with how far ``--limits large``
goes.

The limits themselves take tens of seconds to reach, so these runs lower the default ones
(as a smaller machine's limits would be) and keep the large ones as they are."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nodewright.simulation.limits import BY_NAME, DEFAULT
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate
from tests.simulation.conftest import RunDump, example

#: Pods that each need a node of their own.
APART = """affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: apart}}
        topologyKey: kubernetes.io/hostname"""


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Default limits of 4 launched Nodes and 10 node-hours."""
    monkeypatch.setitem(BY_NAME, DEFAULT.name, replace(DEFAULT, launched_nodes=4, node_hours=10))


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
def test_a_run_stops_at_the_node_hours_limit(simulate: Simulate, tmp_path: Path) -> None:
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("apart", 2, extra_spec=APART)
    result = simulate(manifests, "- advance: 1h\n- advance: 24h\n")
    assert result.exit_code == 2
    (line,) = _errors(result.stderr)
    assert line.startswith(f"error: {tmp_path / 'scenario.yaml'}:2: steps[1].advance: refused: ")
    assert line.endswith(
        " node-hours (its Nodes times the simulated hours each was there; 2 Nodes now); a "
        "simulation runs at most 10 node-hours (--limits large allows 100,000)"
    )


def test_a_run_stops_at_the_pod_hours_limit(
    simulate: Simulate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ten small pods share a node: few node-hours, ten times as many pod-hours.
    monkeypatch.setitem(BY_NAME, DEFAULT.name, replace(DEFAULT, pod_hours=100))
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("small", 10, cpu="100m")
    result = simulate(manifests, "- advance: 9h\n- advance: 2h\n")
    assert result.exit_code == 2
    (line,) = _errors(result.stderr)
    assert line.startswith(f"error: {tmp_path / 'scenario.yaml'}:2: steps[1].advance: refused: ")
    assert line.endswith(
        " pod-hours (its pods times the simulated hours each was there; 10 pods now); a "
        "simulation runs at most 100 pod-hours (--limits large allows 200,000)"
    )


@pytest.mark.usefixtures("small_limits")
def test_the_large_limits_run_what_the_default_ones_stop(simulate: Simulate) -> None:
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("apart", 5, extra_spec=APART)
    result = simulate(manifests, "- advance: 24h\n", "--limits", "large")
    assert result.exit_code == 0, result.stderr
    assert len({pod["node"] for pod in result.pods()}) == 5


def test_a_snapshots_nodes_are_not_launched_by_the_run(
    run_dump: RunDump, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The example's what-if launches nothing; its Karpenter nodes get NodeClaims as it loads.
    monkeypatch.setitem(BY_NAME, DEFAULT.name, replace(DEFAULT, launched_nodes=0))
    run = run_dump(example())
    assert run.exit_code == 0, run.stderr
