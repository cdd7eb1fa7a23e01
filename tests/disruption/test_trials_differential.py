"""Consolidation's shared-base simulations decide exactly as simulations built from scratch.

A disruption pass simulates candidate after candidate over one shared base
(``Context.simulate``, :mod:`nodewright.controllers.disruption.trials`); a command's
validation simulates once from scratch (``Context.simulate_alone``), as every simulation did
before the base existed. On 200 random clusters (several NodePools with budgets, taints,
limits and the three policies; spreads, affinity, anti-affinity, node selectors, tolerations;
PodDisruptionBudgets, do-not-disrupt pods and nodes, pending pods, unmanaged nodes, minValues)
both give the same answer for every candidate alone and for the first candidates together, and
a whole disruption pass run on each decides the same command and publishes the same events.

A shared simulation asked only for the decision may stop as soon as the answer is "no"
(:mod:`nodewright.scheduling.solver.decision`); the reference never stops early, so the
passes compare early-stopping trials against full ones, and each stopped simulation is checked
against the full answer for the same candidates.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from nodewright.api.core import Event
from nodewright.commands.host import load_host
from nodewright.controllers.disruption.candidates import GRACEFUL, Candidate
from nodewright.controllers.disruption.controller import DisruptionController
from nodewright.controllers.disruption.methods import Context
from nodewright.controllers.disruption.rescheduling import Rescheduling
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import karpenter_rules, kind_registry
from nodewright.simulation.limits import DEFAULT
from nodewright.simulation.runner import Simulation
from nodewright.simulation.snapshot import load_snapshot, read_items
from tests.disruption.random_clusters import cluster

CLUSTERS = 200
#: Candidates simulated alone per cluster, and the most simulated together (the first ones,
#: as multi-node consolidation tries them).
ALONE = 4
TOGETHER = 3
#: How long every eighth cluster runs on after its first pass.
LATER = timedelta(minutes=3)


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return load_host()


def _simulation(host: PluginHost, seed: int) -> Simulation:
    dump = cluster(seed)
    snapshot = read_items(
        dump["items"], f"cluster {seed}", kind_registry(host), karpenter_rules(host), limits=DEFAULT
    )
    simulation = Simulation(host)
    load_snapshot(simulation, snapshot)
    simulation.cluster.sync()
    for controller in simulation.operator.controllers[:3]:  # provider, NodeClass, NodePool status
        controller.reconcile()
    simulation.operator.disruption.conditions.reconcile()
    return simulation


def _canonical(rescheduling: Rescheduling) -> dict[str, Any]:
    result = rescheduling.result
    return {
        "errors": sorted(rescheduling.errors.items()),
        "new": [
            (
                claim.node_pool,
                str(claim.requirements),
                [it.name for it in claim.instance_types],
                [pod.key for pod in claim.pods],
                sorted(claim.requests.items()),
                claim.hostname,
                claim.min_values_relaxed,
            )
            for claim in result.new_node_claims
        ],
        "existing": [
            (name, [pod.key for pod in pods]) for name, pods in result.existing_nodes.items()
        ],
        "result_errors": sorted(result.errors.items()),
    }


def _candidate_sets(controller: DisruptionController) -> list[list[Candidate]]:
    candidates = controller.verdicts.candidates(GRACEFUL, ())
    ordered = sorted(candidates, key=lambda c: (-c.savings_ratio(), c.name))
    sets = [[c] for c in ordered[:ALONE]]
    sets += [ordered[:size] for size in range(2, min(len(ordered), TOGETHER) + 1)]
    return sets


def _from_scratch(context: Context, candidates: Any, decide: bool = False) -> Rescheduling:
    del decide  # always the full simulation
    return context.simulate_alone(candidates)


@contextmanager
def _reference(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every simulation of the pass built from scratch, as before the shared base."""
    with monkeypatch.context() as patch:
        patch.setattr(Context, "simulate", _from_scratch)
        yield


def _events(simulation: Simulation) -> list[tuple[str, str, str, str]]:
    return sorted(
        (
            e.involved_object.kind or "",
            e.involved_object.name or "",
            e.reason or "",
            e.message or "",
        )
        for e in simulation.cluster.state.sorted(Event)
    )


def _pass(simulation: Simulation) -> tuple[object, ...]:
    """One disruption pass: what it decided and what it told."""
    controller = simulation.operator.disruption
    wake = controller.reconcile()
    pending = controller.pending
    command = None if pending is None else (pending.command.describe(), pending.due)
    return (wake, command, sorted(controller.decisions.items()), _events(simulation))


def _compare_simulations(simulation: Simulation, seed: int, stopped: list[int]) -> None:
    controller = simulation.operator.disruption
    context = controller._context(controller.refresh())
    for candidates in _candidate_sets(controller):
        names = [c.name for c in candidates]
        full = context.simulate_alone(candidates)
        shared = _canonical(context.simulate(candidates))
        alone = _canonical(full)
        assert shared == alone, f"cluster {seed}, candidates {names}"
        decided = context.simulate(candidates, decide=True)
        if decided.result.decided_no:
            stopped[0] += 1
            could = full.all_scheduled() and len(full.result.new_node_claims) <= 1
            assert not could, f"cluster {seed}, candidates {names}: stopped at a wrong no"
        else:
            assert _canonical(decided) == alone, f"cluster {seed}, candidates {names}"


def _run(simulation: Simulation, later: bool) -> tuple[tuple[object, ...], object]:
    """One disruption pass; then, with ``later``, minutes of the whole operator: validation,
    replacements in flight, nodes draining and deleted, pods rescheduled, while consolidation
    keeps simulating."""
    first = _pass(simulation)
    if not later:
        return first, None
    simulation.advance(LATER)
    return first, _events(simulation)


@pytest.mark.parametrize("block", range(CLUSTERS // 20))
def test_shared_simulations_decide_as_simulations_from_scratch(
    host: PluginHost, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per cluster: every candidate alone and the first ones together give the same
    simulation; then a whole pass decides the same command and tells the same events."""
    commands = 0
    stopped = [0]
    for seed in range(block * 20, block * 20 + 20):
        # One simulation at a time: a simulation configures the plugin host for itself.
        simulation = _simulation(host, seed)
        _compare_simulations(simulation, seed, stopped)
        shared = _run(simulation, later=seed % 8 == 0)
        with _reference(monkeypatch):
            alone = _run(_simulation(host, seed), later=seed % 8 == 0)
        assert shared == alone, f"cluster {seed}"
        commands += shared[0][1] is not None
    # Not trivial: a fair share of the clusters ends the pass with a command to validate, and
    # some simulations stop at their decision.
    assert commands >= 3
    assert stopped[0] >= 1
