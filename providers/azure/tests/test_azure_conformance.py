"""The Azure provider passes the suite every provider must pass, through the plugin host, over
the loopback fake of ARM (real azure-mgmt-compute and azure-mgmt-network clients)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from nodewright.testing import ProviderConformance
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.nodeclass import AKSNodeClass
from nodewright_azure.plugin import AzurePlugin
from providers.azure.tests.azure_helpers import FakeTokenCredential, fake_options, node_class
from providers.azure.tests.fake_azure import FakeAzure


class TestAzureConformance(ProviderConformance):
    @pytest.fixture
    def provider(self, fake: FakeAzure) -> Iterator[object]:
        credential = FakeTokenCredential(fake)
        azure = AzureProvider(credential_factory=lambda _s: credential)
        yield AzurePlugin(azure)
        azure.close()

    @pytest.fixture
    def provider_options(self, fake: FakeAzure) -> Mapping[str, str]:
        return fake_options(fake)

    @pytest.fixture
    def node_class(self) -> AKSNodeClass:
        return node_class(imageFamily="Ubuntu2204")
