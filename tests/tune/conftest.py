"""Fixtures of the tune tests: ``nodewright tune`` run in-process as a user runs it, on the
inflate example (scaled up, then down, so consolidation has something to do)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nodewright.commands import main

ROOT = Path(__file__).resolve().parents[2]
INFLATE = ROOT / "examples" / "inflate" / "manifests"

#: Scale inflate to 10 pods, then down to 3: an empty-or-underutilized node to consolidate.
SCALE_UP_AND_DOWN = """\
steps:
  - scale: {kind: Deployment, name: inflate, namespace: default, replicas: 10}
  - advance: 10m
  - scale: {kind: Deployment, name: inflate, namespace: default, replicas: 3}
  - advance: 30m
"""

#: Consolidation policy, its delay and the capacity type: 12 variants and the baseline.
SPACE = """\
parameters:
  - field: spec.disruption.consolidationPolicy
    values: [WhenEmpty, WhenEmptyOrUnderutilized]
  - field: spec.disruption.consolidateAfter
    range: {from: 0s, to: 10m, step: 5m}
  - field: spec.template.spec.requirements[karpenter.sh/capacity-type]
    values: [[spot], [on-demand]]
"""


@dataclass
class TuneRun:
    exit_code: int
    stdout: str
    stderr: str
    report: dict[str, Any]
    winner_file: Path

    def errors(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]

    def variant(self, index: int) -> dict[str, Any]:
        return next(v for v in self.report["variants"] if v["index"] == index)

    def ranked(self) -> list[int]:
        return [v["index"] for v in self.report["variants"]]

    def table(self) -> list[list[str]]:
        """The ranked table's rows, split on runs of spaces (header first)."""
        lines = self.stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("RANK"))
        rows = []
        for line in lines[start:]:
            if not line.strip():
                break
            rows.append(line.split())
        return rows


Tune = Callable[..., TuneRun]


@pytest.fixture
def tune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Tune:
    """Write the space (and a scenario), run ``nodewright tune INPUTS... --space ...``."""

    def run(
        space: str = SPACE,
        *extra: str,
        inputs: tuple[str, ...] = (str(INFLATE),),
        scenario: str | None = SCALE_UP_AND_DOWN,
    ) -> TuneRun:
        space_file = tmp_path / "space.yaml"
        space_file.write_text(space)
        report_file = tmp_path / "tune.json"
        winner_file = tmp_path / "winner.yaml"
        report_file.unlink(missing_ok=True)
        argv = [
            "tune",
            *inputs,
            "--space",
            str(space_file),
            "--json",
            str(report_file),
            "--winner",
            str(winner_file),
            *extra,
        ]
        if scenario is not None:
            scenario_file = tmp_path / "scenario.yaml"
            scenario_file.write_text(scenario)
            argv += ["--scenario", str(scenario_file)]
        try:
            code = main(argv)
        finally:
            logging.getLogger("nodewright").handlers.clear()
        out = capsys.readouterr()
        report = json.loads(report_file.read_text()) if report_file.exists() else {}
        return TuneRun(code, out.out, out.err, report, winner_file)

    return run
