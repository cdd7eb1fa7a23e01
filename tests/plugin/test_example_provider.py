"""The toy provider of docs/plugins/writing-a-provider.md passes the conformance suite.

Its own test file (docs/plugins/example/tests/test_conformance.py) is loaded and its test
class collected here, so the tutorial's code and its test run with every test run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "plugins" / "example"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

_spec = importlib.util.spec_from_file_location(
    "toy_provider_conformance", EXAMPLE / "tests" / "test_conformance.py"
)
assert _spec is not None
assert _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

TestToyConformance = _module.TestToyConformance
