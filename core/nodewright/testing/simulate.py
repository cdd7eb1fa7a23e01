"""Running ``nodewright simulate`` from a test and reading its JSON report.

A provider's end-to-end tests write a few manifests, run the simulation with the provider's
options and assert on the report (``nodes``, ``removedNodes``, ``whatIf``, ``notes``)::

    code, report = simulate_manifests(tmp_path, {"pool.yaml": POOL}, "--provider-option", "x=y")
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from nodewright.commands import main


def simulate_report(tmp_path: Path, *arguments: str) -> tuple[int, dict[str, Any]]:
    """``nodewright simulate ARGUMENTS --json tmp_path/report.json``: the exit code and the
    report ({} when none was written)."""
    report = tmp_path / "report.json"
    try:
        code = main(["simulate", *arguments, "--json", str(report)])
    finally:
        logging.getLogger("nodewright").handlers.clear()
    return code, json.loads(report.read_text()) if report.exists() else {}


def simulate_manifests(
    tmp_path: Path, manifests: Mapping[str, str], *options: str
) -> tuple[int, dict[str, Any]]:
    """Write ``manifests`` (file name to YAML) into ``tmp_path/manifests`` and simulate them."""
    folder = tmp_path / "manifests"
    folder.mkdir()
    for name, text in manifests.items():
        (folder / name).write_text(text)
    return simulate_report(tmp_path, str(folder), *options)


def load_script(path: Path) -> ModuleType:
    """A script file (not on the import path) loaded as a module, ``__main__`` not run."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
