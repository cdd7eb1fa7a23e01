"""Shared fixtures: run ``nodewright`` in-process as a user would and read what it prints."""

from __future__ import annotations

import json
import logging
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nodewright.commands import main


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

KWOK_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {name}
spec:
  weight: {weight}
  template:
    metadata:
      labels: {labels}
    spec:
      requirements: {requirements}
      taints: {taints}
      nodeClassRef:
        group: karpenter.kwok.sh
        kind: KWOKNodeClass
        name: default
  limits: {limits}
---
"""

KWOK_CLASS = """
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: default
---
"""


def node_pool(
    name: str = "default",
    *,
    weight: int = 1,
    requirements: str = "[]",
    taints: str = "[]",
    limits: str = "{}",
    labels: str = "{}",
) -> str:
    return KWOK_POOL.format(
        name=name,
        weight=weight,
        requirements=requirements,
        taints=taints,
        limits=limits,
        labels=labels,
    )


def deployment(
    name: str,
    replicas: int,
    cpu: str = "1",
    memory: str = "100Mi",
    extra_spec: str = "",
) -> str:
    spec = textwrap.indent(textwrap.dedent(extra_spec).strip(), " " * 6) if extra_spec else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: default
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
{spec}
      containers:
        - name: app
          image: pause
          resources:
            requests: {{cpu: "{cpu}", memory: "{memory}"}}
---
"""


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
