"""Consolidation's time budgets (Karpenter's consolidation timeouts): a multi-node search
gives up after 1 minute and a single-node search after 3, counted in
``karpenter_voluntary_disruption_consolidation_timeouts_total`` and logged; the next pass
searches again."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from nodewright.clock import SimulatedClock
from nodewright.logfields import record_fields
from tests.builders import pool_manifest
from tests.disruption.harness import Harness, fake_type


class LeapingClock(SimulatedClock):
    """Simulated time that, while ``leap`` is set, jumps forward by it at every reading, as
    a wall clock moves through a pass slower than the budgets."""

    leap = timedelta(0)

    def now(self) -> datetime:
        if self.leap:
            self.advance(self.leap)
        return super().now()


def _timeouts(kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "karpenter_voluntary_disruption_consolidation_timeouts_total",
        {"consolidation_type": kind},
    )
    return value or 0.0


def _three_nodes_one_pod_each(tmp_path: Path, clock: LeapingClock) -> Harness:
    harness = Harness(tmp_path, clock=clock)
    for node in harness.launch_nodes(3, "default-instance-type"):
        harness.bind_pods(node, 1)
    harness.start()
    return harness


def test_a_search_past_its_budget_stops_counts_and_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = LeapingClock()
    harness = _three_nodes_one_pod_each(tmp_path, clock)
    before = {kind: _timeouts(kind) for kind in ("multi", "single")}
    clock.leap = timedelta(minutes=4)  # every reading is past any budget set before it
    with caplog.at_level(logging.INFO, logger="nodewright.disruption"):
        harness.operator.disruption.reconcile()
    clock.leap = timedelta(0)

    assert harness.operator.disruption.pending is None, "no command from a search cut short"
    assert _timeouts("multi") == before["multi"] + 1
    assert _timeouts("single") == before["single"] + 1
    lines = {r.getMessage(): dict(record_fields(r)) for r in caplog.records}
    assert lines["failed to find a multi-node consolidation after timeout"] == {
        "last_batch_size": 1
    }
    assert lines["abandoning single-node consolidation due to timeout"] == {
        "candidates_evaluated": 0
    }


def test_the_next_pass_searches_again_and_simulated_time_never_runs_out(tmp_path: Path) -> None:
    clock = LeapingClock()
    harness = _three_nodes_one_pod_each(tmp_path, clock)
    clock.leap = timedelta(minutes=4)
    harness.operator.disruption.reconcile()
    clock.leap = timedelta(0)
    before = {kind: _timeouts(kind) for kind in ("multi", "single")}

    harness.run(60)

    assert len(harness.live_claim_names()) == 1, "the three nodes merge into one"
    assert {kind: _timeouts(kind) for kind in ("multi", "single")} == before, (
        "simulated time stands still during a pass: no budget runs out"
    )


def _two_pools(tmp_path: Path, clock: LeapingClock) -> tuple[Harness, dict[str, str]]:
    """NodePools ``a`` and ``b``, each with a large node whose big pod fits nowhere cheaper
    (tried first: the most to save) and a small node whose pod fits beside it. Single-node
    consolidation tries a's large, b's large, a's small, b's small; the first small one goes."""
    types = [
        fake_type("small-instance-type", 2, 2, price=1.0),
        fake_type("large-instance-type", 4, 4, price=2.0),
    ]
    harness = Harness(
        tmp_path, types=types, clock=clock, pools=[pool_manifest("a"), pool_manifest("b")]
    )
    nodes = {}
    for pool in ("a", "b"):
        nodes[f"{pool}-large"] = harness.node("large-instance-type", pool=pool)
        nodes[f"{pool}-small"] = harness.node("small-instance-type", pool=pool)
        harness.bind_pods(nodes[f"{pool}-large"], 1, owner=f"{pool}-big", cpu="3")
        harness.bind_pods(nodes[f"{pool}-small"], 1, owner=f"{pool}-little")
    harness.start()
    return harness, nodes


def _chosen(harness: Harness) -> list[str]:
    pending = harness.operator.disruption.pending
    assert pending is not None, "a command waits for its validation"
    return [candidate.name for candidate in pending.command.candidates]


def test_without_a_timeout_pools_take_turns_by_name(tmp_path: Path) -> None:
    harness, nodes = _two_pools(tmp_path, LeapingClock())
    harness.operator.disruption.reconcile()
    assert _chosen(harness) == [nodes["a-small"]]


def test_pools_a_search_ran_out_of_time_before_reaching_go_first_next_time(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As Karpenter's single-node consolidation: the NodePools a search that timed out never
    reached are tried first by the next search (then the others, turn by turn)."""
    clock = LeapingClock()
    harness, nodes = _two_pools(tmp_path, clock)
    # Each reading moves 2 minutes: the search (3 minutes) tries a's large node, then stops.
    clock.leap = timedelta(minutes=2)
    with caplog.at_level(logging.INFO, logger="nodewright.disruption"):
        harness.operator.disruption.reconcile()
    clock.leap = timedelta(0)
    assert harness.operator.disruption.pending is None
    lines = {r.getMessage(): dict(record_fields(r)) for r in caplog.records}
    assert lines["abandoning single-node consolidation due to timeout"] == {
        "candidates_evaluated": 1
    }

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="nodewright.disruption"):
        harness.operator.disruption.reconcile()
    lines = {r.getMessage(): dict(record_fields(r)) for r in caplog.records}
    assert lines[
        "prioritizing nodepools that have not yet been considered due to timeouts in previous runs"
    ] == {"nodepools": "b"}
    assert _chosen(harness) == [nodes["b-small"]], "pool b goes first: b's small node is taken"
