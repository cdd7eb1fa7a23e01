"""Two processes' worth of KWOK provider on one cluster: each has its own ledger, and what one
launched and registered the other finds (get, list), adopts at launch and can delete."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from nodewright.plugin import Instance, InstanceNotFoundError, Node, NodeSpec, ObjectMeta
from nodewright.testing import MemoryCluster, SimulatedClock, launched_instance
from nodewright_kwok.provider import KWOKProvider
from providers.kwok.tests.kwok_helpers import launch_request


def _launched_and_registered(provider: KWOKProvider, clock: SimulatedClock, name: str) -> Instance:
    instance = launched_instance(provider.launch(launch_request(provider, name)))
    provider.reconcile(clock.now())
    return instance


def test_a_second_process_sees_and_deletes_the_first_ones_instances(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    old_leader = make_provider()
    first = _launched_and_registered(old_leader, clock, "default-a")
    second = _launched_and_registered(old_leader, clock, "default-b")
    clock.advance(timedelta(minutes=1))

    new_leader = make_provider()  # a fresh process: its own, empty, ledger
    listed = {i.provider_id: i for i in new_leader.list_instances()}
    assert set(listed) == {first.provider_id, second.provider_id}
    adopted = listed[first.provider_id]
    assert (adopted.instance_type, adopted.zone, adopted.capacity_type) == (
        first.instance_type,
        first.zone,
        first.capacity_type,
    )
    assert adopted.price == pytest.approx(first.price)
    assert adopted.node_claim == "default-a"
    assert adopted.node_pool == "default"
    assert adopted.node_class == "default"
    assert adopted.capacity == first.capacity
    assert adopted.state == "running"
    assert new_leader.get(second.provider_id).node_claim == "default-b"

    new_leader.delete(first.provider_id)
    assert cluster.get(Node, "default-a") is None
    with pytest.raises(InstanceNotFoundError):
        new_leader.get(first.provider_id)
    assert [i.provider_id for i in new_leader.list_instances()] == [second.provider_id]


def test_a_repeated_launch_adopts_the_instance_another_process_registered(
    make_provider: Callable[..., KWOKProvider], clock: SimulatedClock
) -> None:
    old_leader = make_provider()
    first = _launched_and_registered(old_leader, clock, "default-a")
    new_leader = make_provider()
    # the old leader died before writing the NodeClaim's status: the core launches again
    again = launched_instance(new_leader.launch(launch_request(new_leader, "default-a")))
    assert again.provider_id == first.provider_id
    assert len(new_leader.list_instances()) == 1


def test_get_on_a_miss_reads_the_cluster(
    make_provider: Callable[..., KWOKProvider], clock: SimulatedClock
) -> None:
    new_leader = make_provider()  # configured before the other process launched anything
    old_leader = make_provider()
    first = _launched_and_registered(old_leader, clock, "default-a")
    assert new_leader.get(first.provider_id).node_claim == "default-a"


def test_only_kwok_nodes_are_adopted_and_terminated_ones_stay_terminated(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    # a Node with a kwok providerID that no KWOK provider registered (no kwok annotation)
    cluster.create(
        Node(metadata=ObjectMeta(name="stray"), spec=NodeSpec(provider_id="kwok://stray"))
    )
    provider = make_provider()
    assert provider.list_instances() == []
    with pytest.raises(InstanceNotFoundError):
        provider.get("kwok://stray")

    first = _launched_and_registered(provider, clock, "default-a")
    stored = cluster.get(Node, "default-a")
    assert stored is not None
    node = stored.clone()
    node.metadata.finalizers.append("karpenter.sh/termination")
    cluster.update(node)
    provider.delete(first.provider_id)
    assert cluster.get(Node, "default-a") is not None  # held by its finalizer
    with pytest.raises(InstanceNotFoundError):  # but this process terminated it
        provider.get(first.provider_id)


def test_a_kwok_node_of_no_nodepool_is_not_an_instance(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster
) -> None:
    # made by hand (kwokctl, a snapshot's static node): KWOK's annotation, no NodePool label
    cluster.create(
        Node(
            metadata=ObjectMeta(name="by-hand", annotations={"kwok.x-k8s.io/node": "fake"}),
            spec=NodeSpec(provider_id="kwok://by-hand"),
        )
    )
    provider = make_provider()
    assert provider.list_instances() == []
    with pytest.raises(InstanceNotFoundError):
        provider.delete("kwok://by-hand")
    assert cluster.get(Node, "by-hand") is not None
