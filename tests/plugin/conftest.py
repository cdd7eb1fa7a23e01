"""Fixtures for plugin tests: throwaway distributions that importlib.metadata really finds.

A distribution here is a ``<name>-<version>.dist-info`` folder (METADATA, entry_points.txt,
RECORD) next to the plugin's module in a temporary folder put first on ``sys.path``: exactly
what an installed wheel leaves behind, without pip or network.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from nodewright.plugin.names import ENTRY_POINT_GROUP

DistributionMaker = Callable[..., Path]


def write_distribution(
    root: Path,
    name: str,
    version: str,
    entry_points: Mapping[str, str],
    modules: Mapping[str, str],
) -> Path:
    """Write modules and a dist-info declaring ``entry_points`` under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    files = []
    for module, source in modules.items():
        path = root / f"{module}.py"
        path.write_text(textwrap.dedent(source))
        files.append(path.name)
    dist_info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    lines = [f"[{ENTRY_POINT_GROUP}]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    record = [f"{f},," for f in files] + [
        f"{dist_info.name}/{f},," for f in ("METADATA", "entry_points.txt", "RECORD")
    ]
    (dist_info / "RECORD").write_text("\n".join(record) + "\n")
    return root


@pytest.fixture
def distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DistributionMaker]:
    """``distribution(name, version, entry_points={...}, modules={...})`` installs a
    throwaway distribution for this test only."""
    created_modules: list[str] = []

    def make(
        name: str,
        version: str = "1.0",
        *,
        entry_points: Mapping[str, str],
        modules: Mapping[str, str],
    ) -> Path:
        root = write_distribution(tmp_path / name, name, version, entry_points, modules)
        monkeypatch.syspath_prepend(str(root))
        created_modules.extend(modules)
        return root

    yield make
    for module in created_modules:
        sys.modules.pop(module, None)
