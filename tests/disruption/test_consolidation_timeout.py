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
from tests.disruption.harness import Harness


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
