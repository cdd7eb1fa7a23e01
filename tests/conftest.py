"""Shared fixtures: run ``nodewright`` in-process as a user would and read what it prints."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from nodewright.commands import main

# Property tests check laws, not speed: on a loaded machine (CI shares two cores with the
# cluster and image suites) an example may take seconds, which is no failure.
settings.register_profile("nodewright", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nodewright")


@dataclass
class SimulateResult:
    exit_code: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    def nodes(self) -> list[dict[str, Any]]:
        return list(self.report.get("nodes", []))

    def pods(self) -> list[dict[str, Any]]:
        return list(self.report.get("pods", []))

    def pending(self) -> list[dict[str, Any]]:
        return [p for p in self.pods() if p["node"] is None]

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.report.get("events", []) if e["reason"] == reason]


Simulate = Callable[..., SimulateResult]


@pytest.fixture
def simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Simulate:
    """Write manifests (and a scenario) to files, run ``nodewright simulate``, return the result."""

    def run(manifests: str, scenario: str | None = None, *extra: str) -> SimulateResult:
        manifest_file = tmp_path / "manifests.yaml"
        manifest_file.write_text(manifests)
        report_file = tmp_path / "report.json"
        argv = ["simulate", str(manifest_file), "--json", str(report_file), *extra]
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
        return SimulateResult(code, out.out, out.err, report)

    return run
