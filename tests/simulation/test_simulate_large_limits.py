"""``--limits large``: every input refused at a default limit runs with it, and ``--help``
says what each choice allows. The inputs are the cheapest at each limit (pods no NodePool
can take stay pending; a static NodePool without its feature gate launches nothing)."""

from __future__ import annotations

import pytest
import yaml

from nodewright.commands import main
from nodewright.commands.host import load_host
from nodewright.simulation.inputs import karpenter_rules, kind_registry
from nodewright.simulation.limits import LARGE
from nodewright.simulation.snapshot import read_items
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate
from tests.simulation.conftest import RunDump
from tests.simulation.test_simulate_limits import HOSTNAME_ANTI_AFFINITY, MANIFESTS

LARGE_LIMITS = ("--limits", "large")
#: Pods that each need a node of their own, which no NodePool offers: they stay pending.
NOWHERE = HOSTNAME_ANTI_AFFINITY + "\nnodeSelector: {example.com/nowhere: x}"
#: An empty cluster, for time to pass cheaply.
EMPTY = node_pool() + KWOK_NODE_CLASS


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize(
    ("scenario", "manifests"),
    [
        ("- advance: 1s\n" * 501, MANIFESTS),
        ("- advance: 200h\n", EMPTY),
        ("- advance: 100h\n- advance: 100h\n", EMPTY),
    ],
    ids=["501-steps", "200h-step", "200h-in-all"],
)
def test_a_scenario_beyond_the_default_limits_runs_with_the_large_ones(
    simulate: Simulate, scenario: str, manifests: str
) -> None:
    refused = simulate(manifests, scenario)
    assert refused.exit_code == 2
    assert all("(--limits large allows " in line for line in _errors(refused.stderr))
    ran = simulate(manifests, scenario, *LARGE_LIMITS)
    assert ran.exit_code == 0, ran.stderr
    assert _errors(ran.stderr) == []


def test_more_pods_each_on_a_node_of_their_own_run_with_the_large_limits(
    simulate: Simulate,
) -> None:
    manifests = MANIFESTS + deployment("apart", 0, extra_spec=NOWHERE)
    scenario = "- scale: {kind: Deployment, name: apart, replicas: 1001}\n"
    assert "(--limits large allows 6,000)" in simulate(manifests, scenario).stderr
    ran = simulate(manifests, scenario, *LARGE_LIMITS)
    assert ran.exit_code == 0, ran.stderr
    assert len([p for p in ran.pending() if p["name"].startswith("apart-")]) == 1001


def test_more_static_nodes_are_accepted_with_the_large_limits(simulate: Simulate) -> None:
    # Without the StaticCapacity gate the pool launches nothing: only the bound is at stake.
    static = node_pool("warm", weight=None, replicas=1001)
    assert "(--limits large allows 10,000)" in simulate(static + KWOK_NODE_CLASS).stderr
    ran = simulate(static + KWOK_NODE_CLASS, None, *LARGE_LIMITS)
    assert ran.exit_code == 0, ran.stderr
    assert 'NodePool "warm" is static' in ran.stderr


def test_a_snapshot_of_more_nodes_runs_with_the_large_limits(run_dump: RunDump) -> None:
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{index}"}}
        for index in range(61)
    ]
    dump = {"apiVersion": "v1", "kind": "List", "items": nodes}
    assert "(--limits large allows 5,000)" in run_dump(dump).stderr
    ran = run_dump(dump, *LARGE_LIMITS)
    assert ran.exit_code == 0, ran.stderr
    assert len(ran.report["nodes"]) == 61


def test_the_large_limits_read_a_snapshot_of_more_pods() -> None:
    # Running 20,001 pods takes about 20 s of CPU; the bound is checked as the snapshot is read.
    (web,) = [d for d in yaml.safe_load_all(deployment("web", 20_001)) if d]
    host = load_host()
    snapshot = read_items(
        [web], "dump.yaml", kind_registry(host), karpenter_rules(host), limits=LARGE
    )
    assert [obj.name for obj in snapshot.objects] == ["web"]


@pytest.mark.parametrize("command", ["simulate", "tune"])
def test_help_says_what_each_choice_of_limits_allows(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    usage = " ".join(capsys.readouterr().out.split())
    assert "--limits {default,large}" in usage
    assert "default (20,000 pods, 60 snapshot Nodes, 168h a step and 168h in all" in usage
    assert "large (100,000 pods, 5,000 snapshot Nodes, 720h a step and 1440h in all" in usage
