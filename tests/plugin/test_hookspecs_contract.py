"""``nodewright.plugin.hookspecs`` is the provider contract: every hook says when it is
called, what it returns, what it may raise and whether it must be idempotent."""

from __future__ import annotations

import inspect

import pytest

from nodewright.plugin.reference import hook_functions

SECTIONS = ("**Called**", "**Returns**", "**Raises**", "**Idempotent")


@pytest.mark.parametrize("hook", hook_functions(), ids=lambda hook: hook.__name__)
def test_every_hook_documents_its_contract(hook: object) -> None:
    doc = inspect.getdoc(hook) or ""
    missing = [section for section in SECTIONS if section not in doc]
    assert missing == []
