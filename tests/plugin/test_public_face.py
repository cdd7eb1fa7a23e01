"""``nodewright.plugin`` is the provider kit: what it exports is there and documented."""

from __future__ import annotations

import re

import nodewright.plugin as face


def test_every_exported_name_resolves() -> None:
    missing = [name for name in face.__all__ if not hasattr(face, name)]
    assert missing == []


def test_every_exported_name_is_listed_in_the_module_docstring() -> None:
    doc = face.__doc__ or ""
    listed = set(re.findall(r":(?:class|data|func|mod):`~?([\w.]+)`", doc))
    undocumented = sorted(set(face.__all__) - {name.rsplit(".", 1)[-1] for name in listed})
    assert undocumented == []
