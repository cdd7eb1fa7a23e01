"""Opt-in pytest fixtures for tests that use providers.

Enable with ``pytest -p nodewright.testing.pytest_plugin`` or, in a top-level
``conftest.py``, ``pytest_plugins = ["nodewright.testing.pytest_plugin"]``. Nothing is
registered automatically: installing nodewright does not change anyone's test run.

* ``fake_provider``: a fresh :class:`~nodewright.testing.FakeProvider`.
* ``simulated_clock``: a :class:`~nodewright.clock.SimulatedClock` at the simulation epoch.
* ``make_plugin_host``: ``make_plugin_host(name=plugin, ...)`` builds a host holding only the
  given plugins (no entry points), configured with ``simulated_clock``; it fails the test
  when a plugin does not load, unless ``allow_errors=True``.
* ``plugin_host``: ``make_plugin_host(fake=fake_provider)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodewright.clock import SimulatedClock
from nodewright.plugin import ProviderContext
from nodewright.plugin.host import PluginHost
from nodewright.testing.conformance import UnavailableCluster
from nodewright.testing.fake_provider import FakeProvider

PluginHostMaker = Callable[..., PluginHost]


@pytest.fixture
def fake_provider() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
def simulated_clock() -> SimulatedClock:
    return SimulatedClock()


@pytest.fixture
def make_plugin_host(simulated_clock: SimulatedClock) -> PluginHostMaker:
    def make(*, allow_errors: bool = False, cluster: Any = None, **plugins: object) -> PluginHost:
        host = PluginHost.load(entry_points=False, plugins=plugins)
        host.configure(
            lambda _name: ProviderContext(
                cluster=cluster if cluster is not None else UnavailableCluster(),
                clock=simulated_clock,
                options={},
            )
        )
        if host.errors and not allow_errors:
            pytest.fail("plugins did not load:\n" + "\n".join(map(str, host.errors)))
        return host

    return make


@pytest.fixture
def plugin_host(make_plugin_host: PluginHostMaker, fake_provider: FakeProvider) -> PluginHost:
    return make_plugin_host(fake=fake_provider)
