"""The module-size check run by bin/check: over-limit modules are refused unless listed, and
the allow-list only shrinks (no growth, entries follow their module down and then leave)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_check() -> Any:
    spec = importlib.util.spec_from_file_location(
        "module_size", ROOT / "scripts" / "module_size.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = load_check()


def test_modules_within_the_limit_pass() -> None:
    assert check.problems({"a.py": 600, "b.py": 10}, {}, limit=600) == []


def test_a_new_module_over_the_limit_is_refused_and_told_to_split() -> None:
    [message] = check.problems({"big.py": 601}, {}, limit=600)
    assert message.startswith("big.py: 601 lines, over the 600-line module limit.")
    assert "Split it" in message
    assert "Do not add it" in message


def test_a_listed_module_may_not_grow() -> None:
    [message] = check.problems({"big.py": 900}, {"big.py": 850}, limit=600)
    assert "more than the 850" in message
    assert "do not raise the entry" in message


def test_a_listed_module_at_its_size_passes() -> None:
    assert check.problems({"big.py": 850}, {"big.py": 850}, limit=600) == []


def test_the_entry_follows_a_shrinking_module_down() -> None:
    [message] = check.problems({"big.py": 700}, {"big.py": 850}, limit=600)
    assert "Lower the entry to '700 big.py'" in message


def test_a_module_under_the_limit_leaves_the_list() -> None:
    [message] = check.problems({"big.py": 600}, {"big.py": 850}, limit=600)
    assert "Remove its entry" in message


def test_an_entry_for_a_missing_module_is_stale() -> None:
    [message] = check.problems({}, {"gone.py": 850}, limit=600)
    assert message.startswith("gone.py: listed in")
    assert "Remove its entry" in message


def test_the_allowlist_reads_sizes_and_paths_and_skips_comments() -> None:
    text = "# header\n\n850 core/big.py  # being split\n"
    assert check.read_allowlist(text) == {"core/big.py": 850}
    with pytest.raises(ValueError, match="line 1"):
        check.read_allowlist("core/big.py 850\n")


def test_lower_follows_modules_down_and_drops_those_within_the_limit() -> None:
    text = "# header\n900 grown.py\n850 shrunk.py  # being split\n700 split.py\n650 gone.py\n"
    sizes = {"grown.py": 950, "shrunk.py": 700, "split.py": 400}
    lowered = check.lowered(text, sizes, limit=600)
    assert lowered == "# header\n900 grown.py\n700 shrunk.py  # being split\n"
    # What --lower cannot fix, growth, is still refused.
    [message] = check.problems(sizes, check.read_allowlist(lowered), limit=600)
    assert message.startswith("grown.py: 950 lines, more than the 900")
