from __future__ import annotations

from collections.abc import Callable

import pytest

from nodewright.plugin import ProviderContext
from nodewright.testing import MemoryCluster, SimulatedClock
from nodewright_kwok.provider import KWOKProvider


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock()


@pytest.fixture
def cluster(clock: SimulatedClock) -> MemoryCluster:
    return MemoryCluster(clock)


@pytest.fixture
def make_provider(cluster: MemoryCluster, clock: SimulatedClock) -> Callable[..., KWOKProvider]:
    """A configured provider; options as keyword arguments (underscores become dashes)."""

    def make(**options: str) -> KWOKProvider:
        provider = KWOKProvider()
        context = ProviderContext(
            cluster=cluster,
            clock=clock,
            options={key.replace("_", "-"): value for key, value in options.items()},
        )
        provider.configure(context)
        return provider

    return make


@pytest.fixture
def provider(make_provider: Callable[..., KWOKProvider]) -> KWOKProvider:
    return make_provider()
