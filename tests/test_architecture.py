"""docs/architecture.md stays true: every path and module it names exists, its layer table is
the import-linter layers contract in the same order, and its controller table lists exactly
the reconcilers the independence contract keeps apart."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
#: Top-level folders a path in the doc may start with.
PATH_ROOTS = ("core/", "providers/", "docs/", "tests/", "bench/", "examples/", "charts/")


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def section(text: str, heading: str) -> str:
    """The lines under ``heading`` up to the next heading of any level."""
    start = text.index(heading + "\n") + len(heading) + 1
    following = re.search(r"^#", text[start:], re.M)
    return text[start : start + following.start()] if following else text[start:]


def table_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the first Markdown table in ``text``."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def contract(name: str) -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    matching = [c for c in contracts if c["name"] == name or c["name"].startswith(name)]
    assert len(matching) == 1, f"no single import-linter contract named {name!r}"
    found: dict[str, Any] = matching[0]
    return found


def test_every_path_named_exists() -> None:
    paths = [s for s in code_spans(DOC.read_text()) if s.startswith(PATH_ROOTS)]
    assert paths, "the doc names no paths"
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_module_named_exists() -> None:
    modules = {
        s
        for s in code_spans(DOC.read_text())
        if re.fullmatch(r"nodewright(_[a-z]+)?(\.[a-z_]+)*", s)
    }
    missing = sorted(m for m in modules if importlib.util.find_spec(m) is None)
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_the_layer_table_is_the_layers_contract() -> None:
    table = table_rows(section(DOC.read_text(), "# Architecture"))
    documented = [code_spans(row[1])[0] for row in table]
    assert documented == contract("core layers")["layers"]


def test_the_controller_table_lists_the_independent_controllers() -> None:
    table = table_rows(section(DOC.read_text(), "### The controllers"))
    documented = {
        path.removeprefix("core/").removesuffix("/").removesuffix(".py").replace("/", ".")
        for row in table
        for path in code_spans(row[1])
    }
    assert documented == set(contract("sibling controllers are independent")["modules"])
