"""The consolidation benchmark on a small cluster: it runs, and its figures hold together."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "consolidation.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_consolidation", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_scaling_down_consolidates_to_near_the_lower_bound(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _load()
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
