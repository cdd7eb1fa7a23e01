"""Orphan NIC garbage collection: NICs this cluster tagged that have no VM (a crash between
the NIC and the VM create) are deleted after a grace period, through the reconcile hook and
the provider's clock; NICs with a VM, of other clusters, or untagged are left alone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from azure.mgmt.network.models import NetworkInterface

from nodewright.clock import SimulatedClock
from nodewright_azure import labels as L
from nodewright_azure.cloudprovider import AzureProvider
from providers.azure.tests.azure_helpers import RESOURCE_GROUP, SUBNET
from providers.azure.tests.fake_azure import FakeAzure
from providers.azure.tests.test_azure_instances import D2_ZONE_2, request_for


def make_nic(provider: AzureProvider, name: str, tags: dict[str, str]) -> None:
    """A NIC made through the real SDK, as launch makes it (then no VM: the crash)."""
    _, network = provider.clients.clients()
    network.network_interfaces.begin_create_or_update(
        RESOURCE_GROUP,
        name,
        NetworkInterface(
            {
                "location": "japaneast",
                "tags": tags,
                "properties": {
                    "ipConfigurations": [{"name": name, "properties": {"subnet": {"id": SUBNET}}}]
                },
            }
        ),
    ).result()


def ours(nodepool: str = "default") -> dict[str, str]:
    return {L.TAG_CLUSTER: "aks-test", L.TAG_NODEPOOL: nodepool}


def nic_names(fake: FakeAzure) -> set[str]:
    return {key.split("/", 1)[1] for key in fake.nics}


def finish(provider: AzureProvider) -> None:
    """Let started deletes finish (the fake completes an operation after its polls)."""
    for poller in list(provider.instances.deletes.values()):
        poller.wait()


def test_an_orphan_nic_is_deleted_after_the_grace_period(
    provider: AzureProvider, fake: FakeAzure, clock: SimulatedClock
) -> None:
    provider.launch(request_for(provider, "default-aaaaa", D2_ZONE_2))  # NIC + VM: kept
    make_nic(provider, "aks-default-crash", ours())  # NIC, no VM: the orphan
    make_nic(provider, "aks-other-bbbbb", {L.TAG_CLUSTER: "other", L.TAG_NODEPOOL: "x"})
    make_nic(provider, "unrelated-nic", {})
    start = clock.now()
    assert provider.nic_gc.collect(start) == []  # first seen: the grace starts
    assert provider.nic_gc.collect(start + timedelta(seconds=179)) == []
    assert provider.nic_gc.collect(start + timedelta(seconds=180)) == ["aks-default-crash"]
    finish(provider)
    assert nic_names(fake) == {"aks-default-aaaaa", "aks-other-bbbbb", "unrelated-nic"}
    assert len(fake.vms) == 1


def test_a_nic_that_gets_its_vm_in_time_is_kept(
    provider: AzureProvider, fake: FakeAzure, clock: SimulatedClock
) -> None:
    make_nic(provider, "aks-default-slowvm", ours())
    start = clock.now()
    assert provider.nic_gc.collect(start) == []
    # The launch (retried after the crash) finds the NIC's name free and creates the VM.
    provider.launch(request_for(provider, "default-slowvm", D2_ZONE_2))
    assert provider.nic_gc.collect(start + timedelta(minutes=10)) == []
    assert "aks-default-slowvm" in nic_names(fake)


def test_reconcile_collects_on_the_provider_clock(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, clock: SimulatedClock
) -> None:
    provider = make_provider(nic_gc_grace="60s")
    make_nic(provider, "aks-default-crash", ours())
    provider.reconcile(clock.now())  # seen first
    clock.advance(timedelta(minutes=2))
    provider.reconcile(clock.now())  # garbage collection runs every 5 minutes: not yet
    assert "aks-default-crash" in nic_names(fake)
    clock.advance(timedelta(minutes=3))
    provider.reconcile(clock.now())
    finish(provider)
    assert "aks-default-crash" not in nic_names(fake)


def test_an_unconfigured_provider_collects_nothing() -> None:
    provider = AzureProvider()
    assert provider.nic_gc.collect(SimulatedClock().now()) == []
