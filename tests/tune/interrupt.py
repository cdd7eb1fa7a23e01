"""Ctrl-C on a running ``nodewright tune``, as a terminal sends it: the tune started as a
foreground job in a process group of its own, SIGINT to the group once two variants have
finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.tune.conftest import INFLATE, SCALE_UP_AND_DOWN

#: 41 values of consolidateAfter: far more variants than finish before the interrupt.
MANY_VARIANTS = """\
parameters:
  - field: spec.disruption.consolidateAfter
    range: {from: 0s, to: 400s, step: 10s}
"""


def group_alive(group: int) -> bool:
    """Whether any process of process group ``group`` still runs."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Interrupted:
    """What the interrupted tune left: its exit code, output and ``--json`` report."""

    pid: int
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any]


def interrupt_tune(
    tmp_path: Path,
    *where: str,
    env: Mapping[str, str] | None = None,
    explain: Callable[[], str] = str,
) -> Interrupted:
    """Run ``nodewright tune`` on inflate over :data:`MANY_VARIANTS` (``where``: ``--jobs 2``,
    ``--ray ADDRESS``) and press Ctrl-C after two variants finished; ``explain`` adds to the
    failure when the tune ends before that."""
    space = tmp_path / "space.yaml"
    space.write_text(MANY_VARIANTS)
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
            *where,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else {**os.environ, **env},
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    signal.signal(signal.SIGINT, ignored)
    assert process.stderr is not None
    try:
        seen = 0
        while seen < 2:
            line = process.stderr.readline()
            assert line, f"tune ended before two variants finished: {process.wait()}\n{explain()}"
            seen += line.startswith("variant ")
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: to the whole group
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return Interrupted(
        process.pid, process.returncode, stdout, stderr, json.loads(report.read_text())
    )
