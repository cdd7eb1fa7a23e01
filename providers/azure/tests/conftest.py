from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodewright.clock import SimulatedClock
from nodewright.plugin.model import ProviderContext
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.options import Settings
from providers.azure.tests.azure_helpers import FakeTokenCredential, fake_options
from providers.azure.tests.fake_azure import FakeAzure


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock()


@pytest.fixture
def fake(tmp_path: Path, clock: SimulatedClock) -> Iterator[FakeAzure]:
    azure = FakeAzure(tmp_path, now=clock.now).start()
    yield azure
    azure.stop()
    # azure-core does not close the connection of a streamed response it retries (429/5xx on
    # a long-running PUT); urllib3 drops it and the socket is closed only when collected.
    # Collect here, so the ResourceWarning of such a socket does not fail a later test.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture
def make_provider(fake: FakeAzure, clock: SimulatedClock) -> Iterator[Callable[..., AzureProvider]]:
    """A provider configured against the fake; options as keyword arguments."""
    made: list[AzureProvider] = []

    def make(**options: str) -> AzureProvider:
        credential = FakeTokenCredential(fake)

        def factory(_settings: Settings) -> FakeTokenCredential:
            return credential

        provider = AzureProvider(credential_factory=factory)
        provider.configure(
            ProviderContext(cluster=None, clock=clock, options=fake_options(fake, **options))
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


@pytest.fixture
def provider(make_provider: Callable[..., AzureProvider]) -> AzureProvider:
    return make_provider()
