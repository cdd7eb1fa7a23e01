"""Initialization with DRA allocation on (Karpenter's ``initialization_test`` DRA cases): a
NodeClaim whose pods were given devices of some drivers (``karpenter.sh/requested-dra-drivers``)
is initialized only once each of those drivers has published a complete pool for its node."""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import DRA_DRIVERS_ANNOTATION
from nodewright.api.meta import ObjectMeta
from nodewright.api.resource import ResourcePool, ResourceSlice, ResourceSliceSpec
from nodewright.cluster.objects import mutable
from nodewright.controllers.options import Options
from nodewright.plugin.host import PluginHost
from nodewright.testing import FakeProvider, fake_node_class
from tests.controllers.test_lifecycle import FakeWorld
from tests.harness import OperatorHarness


class DraWorld(FakeWorld):
    def __init__(self, dra: bool = True) -> None:
        self.fake = FakeProvider()
        host = PluginHost.load(entry_points=False, plugins={"fake": self.fake})
        OperatorHarness.__init__(self, host, Options(dra=dra), node_registration_delay=None)
        self.node_class = self.cluster.create(fake_node_class())

    def dra_claim(self, drivers: str) -> NodeClaim:
        claim = mutable(self.claim())
        claim.metadata.annotations[DRA_DRIVERS_ANNOTATION] = drivers
        return self.cluster.update(claim)

    def publish(self, node: str, driver: str, name: str, count: int = 1) -> None:
        self.cluster.create(
            ResourceSlice(
                metadata=ObjectMeta(name=name),
                spec=ResourceSliceSpec(
                    driver=driver,
                    pool=ResourcePool(name=f"{node}-{driver}", resource_slice_count=count),
                    node_name=node,
                ),
            )
        )


def test_initialization_waits_for_each_requested_driver_to_publish_a_complete_pool() -> None:
    world = DraWorld()
    claim = world.dra_claim("gpu.example.com,nic.example.com")
    world.sim.advance(timedelta(seconds=1))
    node = world.register(claim)
    world.sim.advance(timedelta(seconds=1))
    assert world.condition(claim, "Initialized") == ("Unknown", "DRADriverPoolsNotPublished")
    current = world.cluster.get(NodeClaim, claim.name)
    assert current is not None
    (initialized,) = [c for c in current.status.conditions if c.type == "Initialized"]
    assert initialized.message == (
        'DRA driver "gpu.example.com" has not published a complete resource pool'
    )

    world.publish(node.name, "gpu.example.com", "gpus")
    world.publish(node.name, "nic.example.com", "nics-1", count=2)  # one of its two slices
    world.sim.advance(timedelta(seconds=10))
    assert world.condition(claim, "Initialized") == ("Unknown", "DRADriverPoolsNotPublished")

    world.publish(node.name, "nic.example.com", "nics-2", count=2)
    world.sim.advance(timedelta(seconds=10))
    assert world.condition(claim, "Initialized") == ("True", "Initialized")


def test_with_dra_requests_ignored_the_annotation_does_not_hold_initialization() -> None:
    world = DraWorld(dra=False)
    claim = world.dra_claim("gpu.example.com")
    world.sim.advance(timedelta(seconds=1))
    world.register(claim)
    world.sim.advance(timedelta(seconds=1))
    assert world.condition(claim, "Initialized") == ("True", "Initialized")
