"""Faults as rates: ``kwok.fault-rate`` draws failures from ``--seed``, so a chaos run can be
repeated exactly, and a different seed gives a different run."""

from __future__ import annotations

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

SCALE_UP = "- scale: {kind: Deployment, name: web, namespace: default, replicas: 30}\n"
CHAOS = "kwok.fault-rate=launch:0.5,get:0.2,capacity:0.3"


def _chaos(simulate: Simulate, seed: int) -> tuple[str, dict[str, object]]:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 0, cpu="3"),
        SCALE_UP,
        "--seed",
        str(seed),
        "--provider-option",
        CHAOS,
    )
    assert result.exit_code == 0, result.stderr
    return result.stdout, result.report


def test_the_same_seed_repeats_a_chaos_run_exactly(simulate: Simulate) -> None:
    first_out, first_report = _chaos(simulate, 5)
    again_out, again_report = _chaos(simulate, 5)
    assert "kwok: injected API error in launch (rate 0.5)" in first_out
    assert first_out == again_out
    assert first_report == again_report
    other_out, _ = _chaos(simulate, 6)
    assert other_out != first_out


def test_a_chaos_run_still_places_every_pod(simulate: Simulate) -> None:
    _, report = _chaos(simulate, 5)
    pods = report["pods"]
    assert isinstance(pods, list)
    assert all(p["node"] for p in pods)


def test_no_capacity_at_all_leaves_pods_pending_and_says_why(simulate: Simulate) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 2),
        None,
        "--provider-option",
        "kwok.fault-rate=capacity:1",
    )
    assert result.exit_code == 0, result.stderr
    assert len(result.pending()) == 2
    assert result.nodes() == []
    assert "insufficient capacity" in result.stdout.lower()
