"""On a live cluster the emulated kubelets keep each Node alive as a real kubelet does: a
Lease in ``kube-node-lease`` renewed every 10 s, and the Ready heartbeat refreshed every 5
minutes (every 10 s when the Lease cannot be written), so the node lifecycle controller never
sees them go silent. A simulation has no such controller and gets none of it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from nodewright.plugin import (
    ClusterError,
    Lease,
    LeaseSpec,
    Node,
    ObjectMeta,
    OwnerReference,
    ProviderContext,
)
from nodewright.testing import MemoryCluster, SimulatedClock
from nodewright_kwok.heartbeat import NODE_LEASE_NAMESPACE
from nodewright_kwok.provider import KWOKProvider
from providers.kwok.tests.kwok_helpers import launch_request


def _configured(cluster: MemoryCluster, clock: SimulatedClock, **options: str) -> KWOKProvider:
    provider = KWOKProvider()
    context = ProviderContext(
        cluster=cluster,
        clock=clock,
        options={key.replace("_", "-"): value for key, value in options.items()},
        live_cluster=True,
    )
    provider.configure(context)
    return provider


@pytest.fixture
def provider(cluster: MemoryCluster, clock: SimulatedClock) -> KWOKProvider:
    """The provider as ``nodewright run`` configures it: on a live cluster."""
    return _configured(cluster, clock)


def _lease(cluster: MemoryCluster, name: str = "n1") -> Lease | None:
    return cluster.get(Lease, name, NODE_LEASE_NAMESPACE)


def _heartbeat(cluster: MemoryCluster, name: str = "n1") -> object:
    node = cluster.get(Node, name)
    assert node is not None
    [ready] = [c for c in node.status.conditions if c.type == "Ready"]
    return ready.last_heartbeat_time


def _run(provider: KWOKProvider, clock: SimulatedClock, seconds: float) -> None:
    """Reconcile as the operator does: again after the wait the provider asks for."""
    end = clock.now() + timedelta(seconds=seconds)
    while clock.now() < end:
        wait = provider.reconcile(clock.now())
        clock.advance(min(wait, end - clock.now()) if end > clock.now() else wait)


def test_a_registered_node_gets_a_lease_it_owns(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider.launch(launch_request(provider, "n1"))
    provider.reconcile(clock.now())
    node = cluster.get(Node, "n1")
    lease = _lease(cluster)
    assert node is not None
    assert lease is not None
    assert lease.spec.holder_identity == "n1"
    assert lease.spec.lease_duration_seconds == 40
    assert lease.spec.renew_time == clock.now()
    [owner] = lease.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid) == ("Node", "n1", node.metadata.uid)


def test_the_lease_is_renewed_every_ten_seconds_and_never_runs_out(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider.launch(launch_request(provider, "n1"))
    start = clock.now()
    renewals = set()
    while clock.now() - start < timedelta(minutes=3):
        wait = provider.reconcile(clock.now())
        assert wait <= timedelta(seconds=10)
        lease = _lease(cluster)
        assert lease is not None
        assert lease.spec.renew_time is not None
        assert clock.now() - lease.spec.renew_time < timedelta(seconds=40)
        renewals.add(lease.spec.renew_time)
        clock.advance(wait)
    assert len(renewals) >= 3 * 60 // 10 - 1


def test_the_heartbeat_is_posted_every_five_minutes_while_the_lease_holds(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider.launch(launch_request(provider, "n1"))
    provider.reconcile(clock.now())
    first = _heartbeat(cluster)
    _run(provider, clock, 4 * 60)
    assert _heartbeat(cluster) == first
    _run(provider, clock, 90)
    assert _heartbeat(cluster) != first
    assert clock.now() - _heartbeat(cluster) <= timedelta(seconds=90)  # type: ignore[operator]


class NoLeases(MemoryCluster):
    """A cluster where Leases cannot be written (RBAC without them, say)."""

    def create(self, obj):  # type: ignore[no-untyped-def]
        if isinstance(obj, Lease):
            raise ClusterError("leases are forbidden")
        return super().create(obj)


def test_without_a_lease_the_heartbeat_is_posted_every_ten_seconds(
    clock: SimulatedClock, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = NoLeases(clock)
    provider = _configured(cluster, clock)
    provider.launch(launch_request(provider, "n1"))
    for _ in range(6):
        provider.reconcile(clock.now())
        assert clock.now() - _heartbeat(cluster) <= timedelta(seconds=10)  # type: ignore[operator]
        clock.advance(timedelta(seconds=10))
    warnings = [r for r in caplog.records if "cannot renew the Lease" in r.getMessage()]
    assert [r.levelname for r in warnings].count("WARNING") == 1  # said once, not every pass


def test_a_deleted_node_takes_its_lease_with_it(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider.launch(launch_request(provider, "n1"))
    provider.reconcile(clock.now())
    assert _lease(cluster) is not None
    provider.delete("kwok://n1")
    assert _lease(cluster) is None


def test_a_lease_left_by_an_earlier_node_of_the_same_name_is_taken_over(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    stale = Lease(
        metadata=ObjectMeta(
            name="n1",
            namespace=NODE_LEASE_NAMESPACE,
            owner_references=[OwnerReference(api_version="v1", kind="Node", name="n1", uid="old")],
        ),
        spec=LeaseSpec(holder_identity="n1", renew_time=clock.now() - timedelta(hours=1)),
    )
    uid = cluster.create(stale).metadata.uid
    assert _lease(cluster) is not None
    provider.launch(launch_request(provider, "n1"))
    provider.reconcile(clock.now())
    node = cluster.get(Node, "n1")
    lease = _lease(cluster)
    assert node is not None
    assert lease is not None
    assert lease.metadata.uid == uid  # the same Lease, updated
    assert [ref.uid for ref in lease.metadata.owner_references] == [node.metadata.uid]
    assert lease.spec.renew_time == clock.now()


def test_without_manage_nodes_no_lease_is_written(
    cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = _configured(cluster, clock, manage_nodes="false")
    provider.launch(launch_request(provider, "n1"))
    provider.reconcile(clock.now())
    assert cluster.get(Node, "n1") is not None
    assert _lease(cluster) is None


def test_a_simulation_gets_no_leases_and_no_heartbeat_writes(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    """Nothing watches them there: they would only make a settled cluster look busy."""
    provider = make_provider()
    provider.launch(launch_request(provider, "n1"))
    provider.reconcile(clock.now())
    settled = cluster.resource_version()
    first = _heartbeat(cluster)
    _run(provider, clock, 15 * 60)
    assert _lease(cluster) is None
    assert _heartbeat(cluster) == first
    assert cluster.resource_version() == settled
