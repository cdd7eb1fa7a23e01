"""The AWS provider passes the suite every provider must pass, against moto on loopback."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from nodewright.testing import MemoryCluster, ProviderConformance, SimulatedClock
from nodewright_aws.cloudprovider import AWSProvider
from nodewright_aws.nodeclass import EC2NodeClass
from nodewright_aws.plugin import AWSPlugin
from providers.aws.tests.aws_helpers import World, moto_session, node_class, options


class TestAWSConformance(ProviderConformance):
    @pytest.fixture
    def provider(self, world: World) -> object:
        return AWSPlugin(AWSProvider(session_factory=moto_session))

    @pytest.fixture
    def provider_options(self, world: World) -> Mapping[str, str]:
        return options(world)

    @pytest.fixture
    def cluster(self, clock: SimulatedClock) -> MemoryCluster:
        """Holds the class: describing an instance reads its EC2NodeClass from the cluster."""
        cluster = MemoryCluster(clock)
        cluster.create(node_class())
        return cluster

    @pytest.fixture
    def node_class(self) -> EC2NodeClass:
        return node_class()
