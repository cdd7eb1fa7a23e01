"""Every distribution of the workspace builds a wheel; ``nodewright`` and ``nodewright-kwok``,
installed alone into a clean virtualenv, give a working ``nodewright simulate`` (the way users
install it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv to build and install wheels")
def test_wheels_install_into_a_clean_virtualenv_and_simulate(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        ["uv", "build", "--all-packages", "--wheel", "-o", str(dist)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    built = sorted(p.name for p in dist.glob("*.whl"))
    assert [w.split("-")[0] for w in built] == [
        "nodewright",
        "nodewright_aws",
        "nodewright_azure",
        "nodewright_kwok",
    ]
    wheels = [w for w in built if w.split("-")[0] in ("nodewright", "nodewright_kwok")]
    venv = tmp_path / "venv"
    subprocess.run(["uv", "venv", "-q", "-p", "python3", str(venv)], check=True)
    subprocess.run(
        [
            "uv",
            "pip",
            "install",
            "-q",
            "--python",
            str(venv / "bin" / "python"),
            *(str(dist / w) for w in wheels),
        ],
        check=True,
        capture_output=True,
    )
    nodewright = venv / "bin" / "nodewright"
    plugins = subprocess.run(
        [str(nodewright), "plugins"], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert "KWOKNodeClass" in plugins.stdout
    example = ROOT / "examples" / "inflate"
    simulated = subprocess.run(
        [
            str(nodewright),
            "simulate",
            str(example / "manifests"),
            "--scenario",
            str(example / "scenario.yaml"),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert "10 pod(s) bound, 0 pending" in simulated.stdout
