"""The KWOK provider passes the suite every provider must pass, through the plugin host."""

from __future__ import annotations

import pytest

from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.testing import ProviderConformance
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
