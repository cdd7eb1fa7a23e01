"""Every reader drains its change feed on every pass, needed or not: a feed left undrained
keeps the old version of every object that changed, which at 100,000 pods is gigabytes."""

from __future__ import annotations

from pathlib import Path

from nodewright.api.core import Node, Pod
from nodewright.api.manifests.loading import load_paths
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import kind_registry
from nodewright.simulation.runner import Simulation
from nodewright.testing.manifests import (
    KWOK_NODE_CLASS,
    deployment,
    node_pool,
    pod_disruption_budget,
)


def test_a_settled_simulation_holds_no_undrained_changes(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(node_pool() + KWOK_NODE_CLASS + deployment("inflate", 200))
    host = PluginHost.load(only=["kwok"])
    simulation = Simulation(host)
    simulation.apply(load_paths([manifests], kind_registry(host)))
    simulation.settle()
    state = simulation.cluster.state
    assert state.count(Pod) == 200
    assert not state.unbound_pods()
    simulation.operator.run_once()
    simulation.kube.reconcile()
    assert state.held_changes() == 0


def test_a_simulation_that_drained_nodes_under_a_budget_holds_no_undrained_changes(
    tmp_path: Path,
) -> None:
    # The eviction check and the disruption controller keep the budget's count from the
    # pods that change; both catch up on every pass.
    manifests = tmp_path / "manifests.yaml"
    small = "[{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ['16']}]"
    manifests.write_text(
        node_pool(requirements=small, labels="{team: a}")
        + KWOK_NODE_CLASS
        + deployment("inflate", 10, cpu="3")
        + pod_disruption_budget("inflate", 1)
    )
    host = PluginHost.load(only=["kwok"])
    simulation = Simulation(host)
    simulation.apply(load_paths([manifests], kind_registry(host)))
    simulation.settle()
    state = simulation.cluster.state
    before = set(state.objects(Node))
    # A changed template drifts every node: each is drained, one pod at a time.
    manifests.write_text(node_pool(requirements=small, labels="{team: b}"))
    simulation.apply(load_paths([manifests], kind_registry(host)))
    simulation.settle()
    assert before.isdisjoint(state.objects(Node))
    assert not state.unbound_pods()
    simulation.operator.run_once()
    simulation.kube.reconcile()
    assert state.held_changes() == 0
