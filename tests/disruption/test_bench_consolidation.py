"""The consolidation benchmark on a small cluster: it runs, and its figures hold together."""

from __future__ import annotations

import pytest

from tests.bench_modules import load_bench


def test_scaling_down_consolidates_to_near_the_lower_bound(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = load_bench("consolidation")
    outcome = bench.run(pods=150, keep=0.35, count=5, budget="50%", seed=7)
    printed = capsys.readouterr().out
    assert outcome.pending == 0
    assert outcome.removed > 0
    assert outcome.nodes_after < outcome.nodes_before
    assert outcome.cost_after < outcome.cost_before
    assert outcome.bound <= outcome.cost_after
    assert outcome.cost_after <= 1.5 * outcome.bound
    assert outcome.stable_seconds > 0
    assert "time to stable:" in printed
    assert "lower bound:" in printed
