"""``nodewright plugins``: a broken provider is listed, named on stderr, and fails the command
(exit status 2), so an install check or a script notices it."""

from __future__ import annotations

import json

import pytest

from nodewright.commands import main
from tests.plugin.conftest import DistributionMaker


@pytest.fixture
def broken_provider(distribution: DistributionMaker, monkeypatch: pytest.MonkeyPatch) -> None:
    distribution(
        "nodewright-crashes",
        "0.1",
        entry_points={"crashes": "crashes_at_import"},
        modules={"crashes_at_import": "raise RuntimeError('boom at import')\n"},
    )
    monkeypatch.setenv("NODEWRIGHT_PLUGINS", "kwok,crashes")


@pytest.mark.usefixtures("broken_provider")
@pytest.mark.parametrize("json_output", [False, True], ids=["table", "json"])
def test_a_broken_provider_fails_the_command(
    capsys: pytest.CaptureFixture[str], json_output: bool
) -> None:
    assert main(["plugins", *(["--json"] if json_output else [])]) == 2
    out = capsys.readouterr()
    if json_output:
        statuses = {row["name"]: row["status"] for row in json.loads(out.out)}
        assert statuses["kwok"] == "ok"
        assert statuses["crashes"].startswith("error: ")
    else:
        assert "crashes" in out.out
        assert "kwok" in out.out
    assert out.err.splitlines() == [
        "error: provider crashes (nodewright-crashes 0.1): failed to import "
        "'crashes_at_import': RuntimeError: boom at import"
    ]


def test_healthy_providers_exit_zero(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NODEWRIGHT_PLUGINS", "kwok")
    assert main(["plugins"]) == 0
    assert capsys.readouterr().err == ""
