"""Where ``nodewright run`` logs go: LOG_OUTPUT_PATHS, as Karpenter's (stdout, stderr or
files); the chart sends them to stdout as Karpenter's chart does."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright.commands import main
from nodewright.service import logs


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger("nodewright")
    handlers, level, propagate = list(root.handlers), root.level, root.propagate
    yield
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:], root.level, root.propagate = handlers, level, propagate


def test_logs_go_to_every_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "nodewright.log"
    logs.configure("info", "json", output_paths=["stdout", str(file)])
    logging.getLogger("nodewright.provisioner").info("found provisionable pod(s)")
    printed = capsys.readouterr()
    assert printed.err == ""
    (line,) = printed.out.splitlines()
    assert json.loads(line)["message"] == "found provisionable pod(s)"
    assert file.read_text().splitlines() == [line]


def test_a_path_that_cannot_be_opened_is_refused_before_anything_changes(tmp_path: Path) -> None:
    root = logging.getLogger("nodewright")
    before = list(root.handlers)
    with pytest.raises(OSError, match="No such file"):
        logs.configure("info", "json", output_paths=["stdout", str(tmp_path / "no" / "x.log")])
    assert root.handlers == before


def test_run_names_the_setting_when_it_cannot_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOG_OUTPUT_PATHS", str(tmp_path / "missing" / "x.log"))
    assert main(["run"]) == 2
    error = capsys.readouterr().err
    assert "--log-output-paths / LOG_OUTPUT_PATHS:" in error
    assert "x.log" in error
    monkeypatch.setenv("LOG_OUTPUT_PATHS", " , ")
    assert main(["run"]) == 2
    assert (
        "LOG_OUTPUT_PATHS: name at least one of stdout, stderr or a file" in capsys.readouterr().err
    )
