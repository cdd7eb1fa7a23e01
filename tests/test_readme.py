"""The README shows what its first command prints, all of it, as it prints it."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from nodewright.commands import main

ROOT = Path(__file__).resolve().parents[1]
FIRST_COMMAND = (
    "uv run --all-packages nodewright simulate examples/inflate/manifests "
    "--scenario examples/inflate/scenario.yaml"
)


def test_the_readme_shows_the_whole_output_of_its_first_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (ROOT / "README.md").read_text()
    assert FIRST_COMMAND in readme
    shown = re.search(r"this is all of it:\n\n```text\n(.*?)```", readme, re.S)
    assert shown is not None
    monkeypatch.chdir(ROOT)
    arguments = FIRST_COMMAND.split("nodewright ", 1)[1].split()
    try:
        assert main(arguments) == 0
    finally:
        logging.getLogger("nodewright").handlers.clear()
    assert capsys.readouterr().out == shown.group(1)
