"""A distribution built in the test is found through its entry point by a fresh interpreter,
as it would be after ``pip install``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugin.conftest import write_distribution
from tests.plugin.samples import provider_source

DESCRIBE = (
    "import json, sys; from nodewright.plugin.host import PluginHost; "
    "print(json.dumps(PluginHost.load(only=sys.argv[1:]).describe()))"
)


def describe_in_subprocess(path: Path, *only: str) -> list[dict[str, str]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")]),
    }
    completed = subprocess.run(
        [sys.executable, "-c", DESCRIBE, *only],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    rows: list[dict[str, str]] = json.loads(completed.stdout)
    return rows


@pytest.mark.slow
def test_an_installed_distribution_is_discovered_through_its_entry_point(tmp_path: Path) -> None:
    write_distribution(
        tmp_path,
        "nodewright-throwaway",
        "3.1.4",
        entry_points={"throwaway": "throwaway_plugin", "crashes": "throwaway_crash"},
        modules={
            "throwaway_plugin": provider_source("throwaway"),
            "throwaway_crash": "raise RuntimeError('boom at import')\n",
        },
    )
    rows = describe_in_subprocess(tmp_path, "throwaway", "crashes")
    by_name = {row["name"]: row for row in rows}
    assert by_name["throwaway"] == {
        "name": "throwaway",
        "distribution": "nodewright-throwaway",
        "version": "3.1.4",
        "node_classes": "ThrowawayNodeClass (throwaway.example.com)",
        "hooks": "delete, get, instance_types, launch, list, provider_info",
        "status": "ok",
    }
    assert by_name["crashes"]["distribution"] == "nodewright-throwaway"
    assert by_name["crashes"]["status"] == (
        "error: failed to import 'throwaway_crash': RuntimeError: boom at import"
    )


@pytest.mark.slow
def test_without_the_distribution_nothing_is_found(tmp_path: Path) -> None:
    (row,) = describe_in_subprocess(tmp_path, "throwaway")
    assert row["name"] == "throwaway"
    assert "not installed" in row["status"]
