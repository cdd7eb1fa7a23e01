"""Load a benchmark script under bench/ as a module, so tests can run its parts untimed."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str) -> ModuleType:
    """``bench/<name>.py`` as module ``<name>``. bench/ is not a package: a script there imports
    its sibling modules by name, as when it runs with bench/ first on the path, so bench/ joins
    the path here too (last, so it shadows nothing)."""
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    return importlib.import_module(name)
