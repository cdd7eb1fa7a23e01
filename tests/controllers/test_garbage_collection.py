"""Bookkeeping the framework owns: NodeClaims whose instance vanished are deleted, instances
no NodeClaim owns are deleted after a grace period."""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.karpenter import NodeClaim
from nodewright.testing import launch_request, make_node_claim
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment
from nodewright_kwok.ledger import TERMINATED
from nodewright_kwok.nodeclass import KWOKNodeClass
from tests.controllers.kwok_world import KWOKWorld, four_cpu_pool


def test_a_nodeclaim_whose_instance_vanished_is_deleted_with_its_node() -> None:
    world = KWOKWorld({"manage-nodes": "false"})
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, deployment("web", 1))
    world.settle()
    (claim,) = world.claims()
    (entry,) = world.ledger.entries()
    entry.set_state(TERMINATED)  # terminated behind nodewright's back
    world.advance(timedelta(minutes=3))
    assert world.cluster.get(NodeClaim, claim.name) is None
    assert entry.instance.node_claim not in {n.name for n in world.nodes()}


def test_a_nodeclaim_is_kept_while_its_node_is_ready_whatever_the_cloud_says() -> None:
    world = KWOKWorld()
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, deployment("web", 1))
    world.settle()
    (claim,) = world.claims()
    (entry,) = world.ledger.entries()
    entry.set_state(TERMINATED)
    world.advance(timedelta(minutes=5))
    assert world.cluster.get(NodeClaim, claim.name) is not None


def test_an_instance_without_a_nodeclaim_is_deleted_after_thirty_seconds() -> None:
    world = KWOKWorld()
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS)
    world.settle()
    node_class = world.cluster.get(KWOKNodeClass, "default")
    assert node_class is not None
    orphan = make_node_claim("never-created", node_class)
    instance = world.sim.host.launch(launch_request(world.sim.host, orphan, node_class))
    launched_at = world.clock.now()

    world.advance(timedelta(seconds=29))
    assert instance.provider_id in world.live_instances(), "young instances may be adopted"
    world.advance(timedelta(minutes=3) - (world.clock.now() - launched_at))
    assert instance.provider_id not in world.live_instances()
    assert world.cluster.get(NodeClaim, "never-created") is None
    assert [n.name for n in world.nodes() if n.spec.provider_id == instance.provider_id] == []


def test_a_nodeclaim_adopts_the_instance_launched_for_it_before_a_crash() -> None:
    world = KWOKWorld()
    # The adopted node stays empty: keep consolidation from removing it during the wait.
    pool = four_cpu_pool(disruption="{consolidateAfter: Never}")
    world.apply(pool, KWOK_NODE_CLASS)
    world.settle()
    node_class = world.cluster.get(KWOKNodeClass, "default")
    assert node_class is not None
    # A claim its NodePool could have made (another one would be drifted and replaced).
    fits_pool = [
        ("kubernetes.io/os", "In", ["linux"]),
        ("karpenter.sh/capacity-type", "In", ["on-demand"]),
        ("karpenter.kwok.sh/instance-cpu", "In", ["4"]),
    ]
    claim = world.cluster.create(make_node_claim("adopted", node_class, fits_pool))
    # The launch went through, but the process died before it wrote the NodeClaim's status.
    instance = world.sim.host.launch(launch_request(world.sim.host, claim, node_class))
    world.advance(timedelta(minutes=3))
    adopted = world.cluster.get(NodeClaim, "adopted")
    assert adopted is not None
    assert adopted.status.provider_id == instance.provider_id
    assert world.live_instances() == [instance.provider_id]
