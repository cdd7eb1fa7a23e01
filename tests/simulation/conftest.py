"""Fixtures of the simulation tests: ``simulate --from-dump`` run in-process on a dump, and
the example dump's objects to vary."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.commands import main
from nodewright.simulation.kubernetes import EmbeddedKubernetes

ROOT = Path(__file__).resolve().parents[2]
DUMP = ROOT / "examples" / "what-if" / "cluster-dump.yaml"


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    @property
    def what_if(self) -> dict[str, Any]:
        return dict(self.report["whatIf"])

    def changes(self) -> list[tuple[str, str, str | None]]:
        return [(c["name"], c["action"], c["reason"]) for c in self.what_if["changes"]]


RunDump = Callable[..., Run]


@pytest.fixture
def run_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> RunDump:
    """``nodewright simulate --from-dump DUMP --json ...`` with more arguments; a dump given
    as a dict or text is written to a file first."""

    def run(dump: dict[str, Any] | Path | str, *extra: str) -> Run:
        if isinstance(dump, Path):
            path = dump
        else:
            path = tmp_path / "dump.yaml"
            path.write_text(dump if isinstance(dump, str) else yaml.safe_dump(dump))
        report_file = tmp_path / "report.json"
        try:
            code = main(["simulate", "--from-dump", str(path), "--json", str(report_file), *extra])
        finally:
            logging.getLogger("nodewright").handlers.clear()
        out = capsys.readouterr()
        report = json.loads(report_file.read_text()) if report_file.exists() else {}
        return Run(code, out.out, out.err, report)

    return run


def example() -> dict[str, Any]:
    """The example dump, to vary."""
    return copy.deepcopy(yaml.safe_load(DUMP.read_text()))


def item(dump: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    """The dump's object of that kind and name."""
    return next(i for i in dump["items"] if i["kind"] == kind and i["metadata"]["name"] == name)


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock()


@pytest.fixture
def cluster(request: pytest.FixtureRequest, clock: SimulatedClock) -> MemoryCluster:
    """The in-memory cluster of the embedded-Kubernetes tests; a module's ``CLUSTER_SEED``
    (default 11) seeds the names it generates."""
    return MemoryCluster(clock, seed=getattr(request.module, "CLUSTER_SEED", 11))


@pytest.fixture
def kube(cluster: MemoryCluster, clock: SimulatedClock) -> EmbeddedKubernetes:
    return EmbeddedKubernetes(cluster, clock)
