"""Variants in parallel: the results do not depend on how many processes ran them, and Ctrl-C
stops a tune cleanly, keeping and ranking what had finished."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.tune.conftest import SPACE, Tune
from tests.tune.interrupt import group_alive, interrupt_tune


def measured(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every variant's figures, without where it ran and what CPU it took."""
    return [
        {k: v for k, v in variant.items() if k not in ("cpuSeconds", "ranOn")}
        for variant in report["variants"]
    ]


def test_one_process_and_two_give_the_same_results(tune: Tune) -> None:
    alone = tune(SPACE, "--jobs", "1")
    shared = tune(SPACE, "--jobs", "2")

    assert alone.exit_code == shared.exit_code == 0
    assert measured(alone.report) == measured(shared.report)
    assert alone.report["winningManifests"] == shared.report["winningManifests"]
    assert alone.report["ran"] == "in this process"
    assert shared.report["ran"] == "2 local processes"
    workers = {v["ranOn"] for v in shared.report["variants"]}
    assert len(workers) == 2
    assert str(os.getpid()) not in {w.rsplit(":", 1)[1] for w in workers}
    # Off a terminal, one line per finished variant.
    finished = [line for line in shared.stderr.splitlines() if line.startswith("variant ")]
    assert len(finished) == 13


@pytest.mark.slow
def test_ctrl_c_stops_the_workers_and_ranks_what_had_finished(tmp_path: Path) -> None:
    run = interrupt_tune(tmp_path, "--jobs", "2")

    assert run.returncode == 130, run.stderr
    assert "Traceback" not in run.stderr
    assert "interrupted: the variants that had finished are ranked" in run.stdout
    data = run.report
    assert data["interrupted"] is True
    assert data["variantsAsked"] == 42
    assert 2 <= data["variantsFinished"] < 42
    assert data["variantsFinished"] == len(data["variants"])
    assert data["winner"] is not None
    # The workers are gone with the command.
    deadline = time.monotonic() + 30
    while group_alive(run.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not group_alive(run.pid)
