"""The opt-in pytest fixtures work in a test suite that enables them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

USES_FIXTURES = """
from nodewright.testing import fake_node_class, launch_request, make_node_claim


def test_plugin_host_holds_the_fake_provider(plugin_host, fake_provider, simulated_clock):
    node_class = fake_node_class()
    request = launch_request(plugin_host, make_node_claim("a", node_class), node_class)
    instance = plugin_host.launch(request)
    assert instance.created_at == simulated_clock.now()
    assert fake_provider.launch_calls == [request]


def test_make_plugin_host_reports_broken_plugins(make_plugin_host, fake_provider):
    from nodewright.testing import FakeProvider

    host = make_plugin_host(allow_errors=True, a=fake_provider, b=FakeProvider("b"))
    assert len(host.errors) == 2
"""


@pytest.mark.slow
def test_fixtures_are_available_with_dash_p(tmp_path: Path) -> None:
    (tmp_path / "test_uses_fixtures.py").write_text(textwrap.dedent(USES_FIXTURES))
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "nodewright.testing.pytest_plugin",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "2 passed" in completed.stdout
