"""The FakeProvider passes the suite every provider must pass."""

from __future__ import annotations

import pytest

from nodewright.testing import FakeNodeClass, FakeProvider, ProviderConformance, fake_node_class


class TestFakeProviderConformance(ProviderConformance):
    @pytest.fixture
    def provider(self) -> FakeProvider:
        return FakeProvider()

    @pytest.fixture
    def node_class(self) -> FakeNodeClass:
        return fake_node_class()
