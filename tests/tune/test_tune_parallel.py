"""Variants in parallel: the results do not depend on how many processes ran them, and Ctrl-C
stops a tune cleanly, keeping and ranking what had finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.tune.conftest import INFLATE, SCALE_UP_AND_DOWN, SPACE, Tune


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


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_ctrl_c_stops_the_workers_and_ranks_what_had_finished(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    # 41 variants: far more than finish in the moments before the interrupt.
    space.write_text(
        "parameters:\n"
        "  - field: spec.disruption.consolidateAfter\n"
        "    range: {from: 0s, to: 400s, step: 10s}\n"
    )
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCALE_UP_AND_DOWN)
    report = tmp_path / "tune.json"
    # A terminal's foreground job takes Ctrl-C, but a background job of a non-interactive shell
    # (as CI runs the suite) inherits SIGINT ignored, and Python then never raises on it. While
    # SIGINT is handled here, the child starts with it at its default, as under a terminal.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nodewright.commands",
            "tune",
            str(INFLATE),
            "--scenario",
            str(scenario),
            "--space",
            str(space),
            "--json",
            str(report),
            "--jobs",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    signal.signal(signal.SIGINT, ignored)
    assert process.stderr is not None
    try:
        seen: list[str] = []
        while len(seen) < 2:
            line = process.stderr.readline()
            assert line, f"tune ended before two variants finished: {process.wait()}"
            if line.startswith("variant "):
                seen.append(line)
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: to the whole group
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted: the variants that had finished are ranked" in stdout
    data = json.loads(report.read_text())
    assert data["interrupted"] is True
    assert data["variantsAsked"] == 42
    assert 2 <= data["variantsFinished"] < 42
    assert data["variantsFinished"] == len(data["variants"])
    assert data["winner"] is not None
    # The workers are gone with the command.
    deadline = time.monotonic() + 30
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_alive(process.pid)
