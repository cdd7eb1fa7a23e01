"""The README's install lines, run as written, for each extra: the wheels ``bin/build`` makes,
a fresh virtualenv, ``pip install --find-links dist "nodewright[EXTRA]"`` with no constraints
file (the dependencies come from the package index, as a user gets them), then
``nodewright plugins``. And the provider tutorial's first step and its ``pip install .``: a
provider installs next to the nodewright installed that way.

Needs the package index (pip reaches it here, as in CI); the three installs run at once."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = ("kwok", "aws", "azure")
PROVIDERS = {"kwok": "KWOKNodeClass", "aws": "EC2NodeClass", "azure": "AKSNodeClass"}
#: The README writes the KWOK extra; the test installs each in its place.
WRITTEN = '"nodewright[kwok]"'
#: Past this, an install is taken to hang (pip backtracking through releases).
TIMEOUT = 900

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("uv") is None, reason="bin/build needs uv"),
]


def first_shell_block(markdown: Path, heading: str, language: str) -> list[str]:
    """The lines of the first ``language`` block after ``heading``, comments dropped."""
    text = markdown.read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}\n") :]
    found = re.search(rf"^```{language}\n(.*?)^```$", section, re.M | re.S)
    assert found, f"no {language} block under {heading} in {markdown.name}"
    lines = [line.partition("  #")[0].strip() for line in found.group(1).splitlines()]
    return [line.removeprefix("$ ") for line in lines if line]


def readme_lines() -> list[str]:
    return first_shell_block(ROOT / "README.md", "## Install", "sh")


@dataclass
class Install:
    """One extra's install, running or done; ``home`` holds its virtualenv (~/nodewright)."""

    extra: str
    process: subprocess.Popen[str]
    home: Path
    began: float
    output: str | None = None

    def finish(self) -> tuple[int, str]:
        if self.output is None:
            self.output, _ = self.process.communicate(timeout=TIMEOUT)
            took = time.monotonic() - self.began
            print(f"\nnodewright[{self.extra}]: installed in {took:.0f}s")
        return self.process.returncode, self.output


def _environment(home: Path) -> dict[str, str]:
    """A new user's: their own home (no pip cache, no pip configuration of their own) and
    none of this test run's virtualenv."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    return {**env, "HOME": str(home), "PIP_NO_INPUT": "1"}


@pytest.fixture(scope="module")
def installs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Install]]:
    lines = readme_lines()
    assert lines[0] == "bin/build"
    work = tmp_path_factory.mktemp("install")
    subprocess.run(
        [str(ROOT / "bin" / "build"), "--dist-dir", str(work / "dist")],
        check=True,
        capture_output=True,
        timeout=600,
    )
    script = "\n".join(lines[1:])
    assert WRITTEN in script
    started: dict[str, Install] = {}
    for extra in EXTRAS:
        where = work / extra
        (where / "home").mkdir(parents=True)
        (where / "dist").symlink_to(work / "dist")
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script.replace(WRITTEN, f'"nodewright[{extra}]"')],
            cwd=where,
            env=_environment(where / "home"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started[extra] = Install(extra, process, where / "home", time.monotonic())
    yield started
    for install in started.values():
        install.process.kill()
        install.process.wait()


@pytest.mark.parametrize("extra", EXTRAS)
def test_the_readme_installs_each_extra_from_the_built_wheels(
    installs: dict[str, Install], extra: str
) -> None:
    status, output = installs[extra].finish()
    assert status == 0, output
    listed = [line.split() for line in output.splitlines() if line.startswith(extra + " ")]
    assert listed, output
    assert listed[0][1] == f"nodewright-{extra}"
    assert PROVIDERS[extra] in listed[0]
    assert listed[0][-1] == "ok"
    # pip went straight to versions that fit, instead of trying release after release.
    assert "pip is looking at multiple versions of botocore" not in output


def test_the_provider_tutorial_installs_its_provider_next_to_that_nodewright(
    installs: dict[str, Install], tmp_path: Path
) -> None:
    tutorial = ROOT / "docs" / "plugins" / "writing-a-provider.md"
    first = first_shell_block(tutorial, "## 0. Installing nodewright", "console")
    assert first == readme_lines()[:3]
    status, output = installs["kwok"].finish()
    assert status == 0, output
    assert first_shell_block(tutorial, "## 9. Installing and using it", "console")[:2] == [
        "pip install .",
        "nodewright plugins",
    ]
    package = tmp_path / "nodewright-toy"
    shutil.copytree(ROOT / "docs" / "plugins" / "example", package)
    home = installs["kwok"].home
    activate = home / "nodewright" / "bin" / "activate"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", f". {activate}\npip install .\nnodewright plugins"],
        cwd=package,
        env=_environment(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    toy = [line.split() for line in done.stdout.splitlines() if line.startswith("toy ")]
    assert toy, done.stdout
    assert toy[0][1:3] == ["nodewright-toy", "0.1.0"]
    assert toy[0][-1] == "ok"
