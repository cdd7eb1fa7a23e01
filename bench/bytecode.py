"""Compile nodewright and what it runs on to bytecode before a benchmark times it.

An installed nodewright has bytecode: pip compiles every module it installs. A development
checkout may not (``uv sync`` does not compile, and a machine that sets
``PYTHONDONTWRITEBYTECODE=1`` never writes what it compiled), so every benchmark child would
compile all the sources it imports again (about 2 s of CPU in ``whatif-30``), which a user
never pays. :func:`precompile` writes the bytecode once, into the ``__pycache__`` folders
beside the sources, as pip would; the children then read it even with ``PYTHONDONTWRITEBYTECODE=1``
(that setting stops writing bytecode, not reading it). What is compiled: the workspace's
packages (``core/``, ``providers/*/``) and every distribution they need at run time (their
requirements, followed, without optional extras).

    uv run --all-packages python bench/bytecode.py     # what the benchmarks do first
"""

from __future__ import annotations

import compileall
import re
import sys
import time
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker

ROOT = Path(__file__).resolve().parent.parent
#: The distributions a user installs: nodewright and its providers.
PRODUCT = ("nodewright", "nodewright-kwok", "nodewright-aws", "nodewright-azure")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _needed(requirement: str) -> str | None:
    """The distribution a requirement names, if it is needed at run time here (no extra)."""
    spec, _, marker = requirement.partition(";")
    if marker.strip() and not Marker(marker).evaluate({"extra": ""}):
        return None
    found = _NAME.match(spec.strip())
    return found.group(0) if found else None


def runtime_distributions() -> list[metadata.Distribution]:
    """The product's distributions and, followed, every one they require at run time."""
    seen: dict[str, metadata.Distribution] = {}
    queue = list(PRODUCT)
    while queue:
        name = queue.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = distribution
        queue.extend(n for r in distribution.requires or () if (n := _needed(r)) is not None)
    return list(seen.values())


def precompile() -> float:
    """Write the bytecode of the workspace and its runtime distributions; the CPU seconds it
    took (next to nothing once it is written: only changed sources are compiled again)."""
    started = time.process_time()
    folders = [ROOT / "core" / "nodewright", *(ROOT / "providers").glob("*/nodewright_*")]
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)
    for distribution in runtime_distributions():
        for file in distribution.files or ():
            if file.suffix == ".py":
                compileall.compile_file(Path(str(distribution.locate_file(file))), quiet=1)
    return time.process_time() - started


if __name__ == "__main__":
    seconds = precompile()
    print(f"bytecode written ({seconds:.1f} s of CPU)")
    sys.exit(0)
