"""The KWOK provider passes the suite every provider must pass, through the plugin host."""

from __future__ import annotations

import pytest

from nodewright.testing import MemoryCluster, ProviderConformance, SimulatedClock
from nodewright_kwok import plugin
from nodewright_kwok.nodeclass import KWOKNodeClass


class TestKWOKConformance(ProviderConformance):
    @pytest.fixture
    def provider(self) -> object:
        return plugin

    @pytest.fixture
    def node_class(self) -> KWOKNodeClass:
        return KWOKNodeClass.model_validate({"metadata": {"name": "default"}, "spec": {}})

    @pytest.fixture
    def cluster(self, clock: SimulatedClock) -> MemoryCluster:
        return MemoryCluster(clock)
