"""The tutorial's provider (docs/plugins/example/) as a user gets it: its wheel is built with
its own ``[build-system]`` and installed next to nodewright (into a folder on PYTHONPATH, no
network, no dependencies fetched); then, from outside the source tree, its own tests pass
(the conformance suite among them), ``nodewright plugins`` lists it, ``nodewright crds``
prints its generated CRD and ``nodewright simulate`` launches its machines."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from nodewright.testing import ProviderConformance

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "plugins" / "example"
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv to build and install"),
]


def _uv(*args: str | Path, offline: bool = True) -> None:
    command = ["uv", *map(str, args), "--python", sys.executable]
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    if offline:
        # uv's cache holds the build backend when the workspace was built; without it, the
        # one download is hatchling from PyPI
        done = subprocess.run(
            [*command, "--offline"], check=False, capture_output=True, env=env, timeout=300
        )
        if done.returncode == 0:
            return
    subprocess.run(command, check=True, capture_output=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the example's wheel is installed into."""
    work = tmp_path_factory.mktemp("toy")
    _uv("build", "--wheel", "--out-dir", work / "dist", EXAMPLE)
    (wheel,) = (work / "dist").glob("nodewright_toy-*.whl")
    _uv("pip", "install", "--no-deps", "--target", work / "site", wheel)
    return work / "site"


def _run(site: Path, command: Sequence[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``command`` where only the installed wheel (not the source) provides the plugin."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [str(c) for c in command],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_the_wheel_holds_the_package_and_its_entry_point(site: Path) -> None:
    assert sorted(p.name for p in (site / "nodewright_toy").glob("*.py")) == [
        "__init__.py",
        "catalog.py",
        "nodeclass.py",
        "plugin.py",
    ]
    (info,) = site.glob("nodewright_toy-0.1.0.dist-info")
    entry_points = (info / "entry_points.txt").read_text()
    assert "[nodewright.providers]" in entry_points
    assert "toy = nodewright_toy.plugin:provider" in entry_points


def test_its_own_tests_and_the_conformance_suite_pass_on_the_installed_package(
    site: Path, tmp_path: Path
) -> None:
    shutil.copytree(EXAMPLE / "tests", tmp_path / "tests")
    done = _run(site, [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    conformance = [n for n, _ in inspect.getmembers(ProviderConformance) if n.startswith("test_")]
    passed = int(done.stdout.rsplit(" passed", 1)[0].rsplit(None, 1)[-1])
    assert passed == len(conformance) + 2  # and the two NodeClass tests
    where = _run(
        site,
        [sys.executable, "-c", "import nodewright_toy; print(nodewright_toy.__file__)"],
        tmp_path,
    )
    assert where.stdout.startswith(str(site))


def test_nodewright_plugins_lists_it(site: Path, tmp_path: Path) -> None:
    done = _run(site, [BIN / "nodewright", "plugins"], tmp_path)
    assert done.returncode == 0, done.stderr
    toy = re.compile(
        r"^toy\s+nodewright-toy\s+0\.1\.0\s+ToyNodeClass \(toy\.nodewright\.dev\)\s+ok$"
    )
    assert [line for line in done.stdout.splitlines() if toy.match(line)], done.stdout


def test_nodewright_crds_prints_its_generated_crd(site: Path, tmp_path: Path) -> None:
    done = _run(site, [BIN / "nodewright", "crds"], tmp_path)
    assert done.returncode == 0, done.stderr
    crds = {c["metadata"]["name"]: c for c in yaml.safe_load_all(done.stdout) if c}
    crd = crds["toynodeclasses.toy.nodewright.dev"]
    kubernetes_validate.validate(crd, "1.30.0", strict=True)
    assert crd["spec"]["names"]["kind"] == "ToyNodeClass"
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    zones: dict[str, Any] = schema["properties"]["spec"]["properties"]["zones"]
    assert zones["x-kubernetes-validations"] == [
        {"rule": "self.all(z, self.exists_one(y, y == z))", "message": "zones must not repeat"}
    ]
    assert zones["items"]["pattern"] == "^toy-[0-9]+[a-z]$"


def test_nodewright_simulate_launches_toy_machines(site: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    manifests = EXAMPLE / "manifests" / "toy.yaml"
    done = _run(site, [BIN / "nodewright", "simulate", manifests, "--json", report], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(report.read_text())
    assert [(n["instanceType"], n["zone"], n["capacityType"]) for n in result["nodes"]] == [
        ("toy.large", "toy-1a", "on-demand")
    ]
    assert len(result["pods"]) == 3
    assert all(pod["node"] == result["nodes"][0]["name"] for pod in result["pods"])
