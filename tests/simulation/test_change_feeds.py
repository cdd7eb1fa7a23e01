"""Every reader drains its change feed on every pass, needed or not: a feed left undrained
keeps the old version of every object that changed, which at 100,000 pods is gigabytes."""

from __future__ import annotations

from pathlib import Path

from nodewright.api.core import Pod
from nodewright.api.manifests.loading import load_paths
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import kind_registry
from nodewright.simulation.runner import Simulation
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool


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
