"""Launch (NIC then VM, long-running operations), the error catalogue, Get, List and Delete,
through the real SDK clients against the fake ARM."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import timedelta

import pytest

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from nodewright.clock import SimulatedClock
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    InsufficientCapacityError,
    LaunchError,
)
from nodewright.plugin.model import Instance, LaunchRequest, LaunchResult
from nodewright.testing import launched_instance, make_node_claim
from nodewright.testing.conformance import node_claim_requirements
from nodewright_azure import labels as L
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.nodeclass import AKSNodeClass
from providers.azure.tests.azure_helpers import RESOURCE_GROUP, node_class
from providers.azure.tests.fake_azure import FakeAzure

VM_PUT = r"/virtualMachines/aks-"


def request_for(
    provider: AzureProvider,
    name: str,
    requirements: Iterable[tuple[str, str, Iterable[str]]] = (),
    nc: AKSNodeClass | None = None,
) -> LaunchRequest:
    nc = nc or node_class(tags={"team/owner": "web"})
    claim = make_node_claim(name, nc, requirements)
    wanted = node_claim_requirements(claim)
    types = provider.instance_types(nc)
    offerings = provider.offerings(nc, types)
    options = []
    for listed in types:
        priced = listed.with_offerings(offerings[listed.name])
        if wanted.intersects(priced.requirements):
            continue
        fit = [o for o in priced.offerings if o.available and o.matches(wanted)]
        if fit:
            options.append(priced.with_offerings(fit))
    options.sort(key=lambda t: (min(o.price for o in t.offerings), t.name))
    return LaunchRequest(claim, nc, tuple(options), wanted)


D2_ZONE_2 = [
    (INSTANCE_TYPE_LABEL, "In", ["Standard_D2_v4"]),
    (ZONE_LABEL, "In", ["japaneast-2"]),
    (CAPACITY_TYPE_LABEL, "In", ["on-demand"]),
]


def vm_puts(fake: FakeAzure) -> list[str]:
    return [p for m, p in fake.requests if m == "PUT" and "/virtualMachines/" in p]


def test_launch_creates_nic_then_vm_named_after_the_node_claim(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    instance = launched_instance(provider.launch(request_for(provider, "default-65f84", D2_ZONE_2)))
    puts = [p.split("?")[0].rsplit("/", 2)[-2] for m, p in fake.requests if m == "PUT"]
    assert puts == ["networkInterfaces", "virtualMachines"]
    vm = fake.vms[f"{RESOURCE_GROUP.lower()}/aks-default-65f84"]
    nic = fake.nics[f"{RESOURCE_GROUP.lower()}/aks-default-65f84"]
    assert vm["zones"] == ["2"]
    assert vm["properties"]["hardwareProfile"]["vmSize"] == "Standard_D2_v4"
    assert vm["properties"]["priority"] == "Regular"
    assert vm["properties"]["storageProfile"]["osDisk"]["diskSizeGB"] == 128
    assert vm["properties"]["networkProfile"]["networkInterfaces"][0]["id"] == nic["id"]
    assert nic["properties"]["enableAcceleratedNetworking"] is True
    assert nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"].endswith(
        "/subnets/aks-subnet"
    )
    assert vm["tags"] == {
        "team_owner": "web",
        "karpenter.azure.com_cluster": "aks-test",
        "compute.aks.billing": "linux",
        "karpenter.sh_nodepool": "default",
        "karpenter.azure.com_nodeclaim": "default-65f84",
        "karpenter.azure.com_nodeclaim-uid": "uid-default-65f84",
        "karpenter.azure.com_aksnodeclass": "default",
    }
    assert instance.provider_id == (
        "azure:///subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/"
        "mc_rg_cluster_japaneast/providers/Microsoft.Compute/virtualMachines/aks-default-65f84"
    )
    assert instance.zone == "japaneast-2"
    assert instance.capacity_type == "on-demand"
    assert instance.state == "running"
    assert instance.labels[L.SKU_CPU] == "2"
    assert instance.labels[L.SKU_MEMORY] == "8192"
    assert instance.labels[ZONE_LABEL] == "japaneast-2"


def test_spot_vms_are_evicted_by_deletion(provider: AzureProvider, fake: FakeAzure) -> None:
    instance = launched_instance(
        provider.launch(
            request_for(
                provider,
                "spot-1",
                [
                    (INSTANCE_TYPE_LABEL, "In", ["Standard_E16as_v5"]),
                    (CAPACITY_TYPE_LABEL, "In", ["spot"]),
                ],
            )
        )
    )
    props = fake.vms[f"{RESOURCE_GROUP.lower()}/aks-spot-1"]["properties"]
    assert (props["priority"], props["evictionPolicy"]) == ("Spot", "Delete")
    assert props["billingProfile"] == {"maxPrice": -1}
    assert instance.capacity_type == "spot"
    assert instance.labels[L.AKS_SCALESET_PRIORITY] == "spot"


def test_a_retry_after_a_crash_finds_what_the_first_attempt_made(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    request = request_for(provider, "crash-1", D2_ZONE_2)
    first = launched_instance(provider.launch(request))
    again = launched_instance(provider.launch(request))
    assert again.provider_id == first.provider_id
    assert len(vm_puts(fake)) == 1
    assert [i.node_claim for i in provider.list_instances()] == ["crash-1"]


def test_a_nic_left_by_a_crash_is_reused(provider: AzureProvider, fake: FakeAzure) -> None:
    fake.fail("PUT", VM_PUT, 500, "InternalServerError", "crash", times=100)
    with pytest.raises(Exception):  # noqa: PT011 - the first attempt dies
        provider.launch(request_for(provider, "crash-2", D2_ZONE_2))
    fake.faults.clear()
    fake.nics[f"{RESOURCE_GROUP.lower()}/aks-crash-2"] = {
        "name": "aks-crash-2",
        "id": f"{fake.rg_path(RESOURCE_GROUP)}/providers/Microsoft.Network/"
        "networkInterfaces/aks-crash-2",
        "tags": {},
        "properties": {"provisioningState": "Succeeded"},
    }
    instance = launched_instance(provider.launch(request_for(provider, "crash-2", D2_ZONE_2)))
    assert instance.state == "running"
    assert len([k for k in fake.nics if k.endswith("aks-crash-2")]) == 1


def test_throttling_and_server_errors_are_retried(provider: AzureProvider, fake: FakeAzure) -> None:
    fake.fail("PUT", VM_PUT, 429, "TooManyRequests", "slow down", headers={"Retry-After": "0"})
    fake.fail("PUT", VM_PUT, 503, "ServerBusy", "busy")
    provider.launch(request_for(provider, "retry-1", D2_ZONE_2))
    assert len(vm_puts(fake)) == 3


def test_lro_polls_until_the_operation_succeeds(provider: AzureProvider, fake: FakeAzure) -> None:
    fake.lro_polls = 3
    instance = launched_instance(provider.launch(request_for(provider, "slow-1", D2_ZONE_2)))
    assert instance.state == "running"
    polls = [p for _, p in fake.requests if "/operations/" in p]
    assert len(polls) >= 8  # NIC and VM, four status reads each


def _launch_failure(
    provider: AzureProvider, fake: FakeAzure, name: str, *, code: str, message: str, sync: bool,
    requirements: list[tuple[str, str, list[str]]] | None = None,
) -> BaseException:  # fmt: skip
    if sync:
        fake.fail("PUT", VM_PUT, 409, code, message)
    else:
        fake.async_failures[f"aks-{name}"] = (code, message)
    with pytest.raises(Exception) as info:  # noqa: PT011
        provider.launch(request_for(provider, name, requirements or D2_ZONE_2))
    # Nothing is left behind: the VM (asynchronous failures) and the NIC are deleted.
    assert not [k for k in fake.vms if k.endswith(f"aks-{name}")]
    assert not [k for k in fake.nics if k.endswith(f"aks-{name}")]
    return info.value


ZONES = ["japaneast-1", "japaneast-2", "japaneast-3"]


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("code", "message", "zones", "types", "ttl"),
    [
        ("SkuNotAvailable", "The requested VM size Standard_D2_v4 is currently not available",
         ZONES, ["on-demand"], timedelta(hours=23)),
        ("ZonalAllocationFailed", "Allocation failed. We do not have sufficient capacity",
         ["japaneast-2"], ["on-demand", "spot"], timedelta(hours=1)),
        ("AllocationFailed", "Allocation failed.", ZONES, ["on-demand", "spot"],
         timedelta(hours=1)),
        ("OverconstrainedZonalAllocationRequest", "Allocation failed. VM(s) with the following "
         "constraints cannot be allocated", ["japaneast-2"], ["on-demand"], timedelta(hours=1)),
        ("OverconstrainedAllocationRequest", "Allocation failed.", ZONES, ["on-demand"],
         timedelta(hours=1)),
        ("OperationNotAllowed", "Operation could not be completed as it results in exceeding "
         "approved standardDv4Family Cores quota. Family Cores quota: Current Limit: 0",
         [*ZONES, "0"], ["on-demand"], timedelta(hours=1)),
        ("OperationNotAllowed", "Operation could not be completed as it results in exceeding "
         "approved standardDv4Family Cores quota. Family Cores quota: Current Limit: 10",
         [*ZONES, "0"], ["on-demand"], timedelta(minutes=10)),
    ],
)  # fmt: skip
def test_capacity_errors_name_the_offerings_and_their_family(  # noqa: PLR0917
    provider: AzureProvider,
    fake: FakeAzure,
    clock: SimulatedClock,
    sync: bool,
    code: str,
    message: str,
    zones: list[str],
    types: list[str],
    ttl: timedelta,
) -> None:
    name = f"ice-{'s' if sync else 'a'}"
    requirements = [(ZONE_LABEL, "In", ["japaneast-2"]), (CAPACITY_TYPE_LABEL, "In", ["on-demand"]),
                    ("karpenter.azure.com/sku-family", "In", ["D"]),
                    ("kubernetes.io/arch", "In", ["amd64"])]  # fmt: skip
    request = request_for(provider, name, requirements)
    assert request.instance_types[0].name in ("Standard_D2_v4", "Standard_D2s_v5")
    first = request.instance_types[0].name
    error = _launch_failure(
        provider, fake, name, code=code, message=message, sync=sync, requirements=requirements
    )
    assert isinstance(error, InsufficientCapacityError)
    assert error.ttl == ttl
    expected = {(first, z, t) for z in zones for t in types}
    assert expected <= set(error.offerings)
    # Larger sizes of the same VM family fail the same way; other families are untouched.
    family = "Standard_D4_v4" if first == "Standard_D2_v4" else "Standard_D4s_v5"
    assert (family, "japaneast-2", "on-demand") in error.offerings
    assert not [o for o in error.offerings if o[0].startswith("Standard_E")]
    # The provider's offerings say so until the TTL runs out.
    nc = node_class()
    offered = provider.offerings(nc, provider.instance_types(nc))[first]
    down = {(o.zone, o.capacity_type) for o in offered if not o.available}
    assert ("japaneast-2", "on-demand") in down
    clock.advance(ttl)
    provider.reconcile(clock.now())
    offered = provider.offerings(nc, provider.instance_types(nc))[first]
    assert all(o.available for o in offered)


def test_spot_quota_makes_every_spot_offering_unavailable(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    error = _launch_failure(
        provider, fake, "lowpri", code="OperationNotAllowed", sync=True,
        message="Operation results in exceeding quota limits of LowPriorityCores. Maximum "
        "allowed: 0", requirements=[(CAPACITY_TYPE_LABEL, "In", ["spot"])],
    )  # fmt: skip
    assert isinstance(error, InsufficientCapacityError)
    assert error.offerings
    assert {o[2] for o in error.offerings} == {"spot"}
    assert error.ttl == timedelta(hours=1)


def test_regional_quota_is_capacity_error_without_offerings(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    error = _launch_failure(
        provider, fake, "regional", code="OperationNotAllowed", sync=True,
        message="Operation could not be completed as it results in exceeding approved Total "
        "Regional Cores quota.",
    )  # fmt: skip
    assert isinstance(error, InsufficientCapacityError)
    assert error.offerings == ()


def test_other_errors_are_launch_errors_with_the_arm_code(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    error = _launch_failure(
        provider, fake, "badparam", code="InvalidParameter", sync=True,
        message="The value of parameter imageReference is invalid.",
    )  # fmt: skip
    assert isinstance(error, LaunchError)
    assert error.reason == "InvalidParameter"
    assert "imageReference" in error.message


def test_restricted_zone_gives_sku_not_available_from_arm(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    # E4s_v4 is restricted in zone 3: the catalog does not offer it there...
    request = request_for(provider, "e4", [(INSTANCE_TYPE_LABEL, "In", ["Standard_E4s_v4"]),
                                           (ZONE_LABEL, "In", ["japaneast-3"])])  # fmt: skip
    assert request.instance_types == ()
    # ...and ARM refuses it with the real error when asked anyway.
    fake.skus = [s for s in fake.skus if s["name"] != "Standard_E4s_v4"] + [
        {**s, "restrictions": []} for s in fake.skus if s["name"] == "Standard_E4s_v4"
    ]
    provider.instance_type_provider.skus = None  # the provider's view is stale; ARM's is not
    request = request_for(provider, "e4", [(INSTANCE_TYPE_LABEL, "In", ["Standard_E4s_v4"]),
                                           (ZONE_LABEL, "In", ["japaneast-3"])])  # fmt: skip
    fake.skus = [s for s in fake.skus if s["name"] != "Standard_E4s_v4"] + [
        {**s, "restrictions": [{"type": "Zone", "values": ["japaneast"],
                                "restrictionInfo": {"zones": ["3"]}}]}
        for s in fake.skus if s["name"] == "Standard_E4s_v4"
    ]  # fmt: skip
    with pytest.raises(InsufficientCapacityError, match="SkuNotAvailable"):
        provider.launch(request)


def test_get_list_and_delete(provider: AzureProvider, fake: FakeAzure) -> None:
    instances: list[Instance] = [
        launched_instance(provider.launch(request_for(provider, f"pool-{i}", D2_ZONE_2)))
        for i in range(3)
    ]
    other = dict(fake.vms[f"{RESOURCE_GROUP.lower()}/aks-pool-0"])
    other = {**other, "properties": {"hardwareProfile": {"vmSize": "Standard_D2_v4"}},
             "name": "aks-elsewhere", "tags": {"karpenter.azure.com_cluster": "other",
                                                         "karpenter.sh_nodepool": "x"}}  # fmt: skip
    fake.vms[f"{RESOURCE_GROUP.lower()}/aks-elsewhere"] = other
    listed = provider.list_instances()  # 4 VMs, two per page
    assert sorted(i.node_claim for i in listed) == ["pool-0", "pool-1", "pool-2"]
    found = provider.get(instances[1].provider_id)
    assert found.instance_type == "Standard_D2_v4"
    assert found.node_pool == "default"
    assert found.created_at.tzinfo is not None
    target = instances[0].provider_id
    provider.delete(target)
    deletes = [p for m, p in fake.requests if m == "DELETE"]
    assert "forceDeletion=true" in deletes[0]
    for _ in range(50):
        try:
            provider.delete(target)
        except InstanceNotFoundError:
            break
    else:
        pytest.fail("delete never finished")
    assert not [k for k in fake.nics if k.endswith("aks-pool-0")]
    with pytest.raises(InstanceNotFoundError):
        provider.get(target)
    with pytest.raises(InstanceNotFoundError):
        provider.delete(target)
    with pytest.raises(InstanceNotFoundError):
        provider.get("kwok://not-azure")


def test_a_create_slower_than_launch_is_followed_and_its_failure_recorded(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, clock: SimulatedClock
) -> None:
    provider = make_provider(launch_wait="0", polling_interval="0.01")
    fake.lro_polls = 5
    fake.async_failures["aks-late-1"] = ("ZonalAllocationFailed", "Allocation failed.")
    # Requests sized from offerings as they were before the failure (the core's catalog).
    stale_zone_2 = request_for(provider, "late-2", D2_ZONE_2)
    d2_on_demand = [(INSTANCE_TYPE_LABEL, "In", ["Standard_D2_v4"]), D2_ZONE_2[2]]
    stale_any_zone = request_for(provider, "late-3", d2_on_demand)
    instance = launched_instance(provider.launch(request_for(provider, "late-1", D2_ZONE_2)))
    assert isinstance(instance, Instance)
    assert instance.state == "pending"
    for _ in range(500):
        provider.reconcile(clock.now())
        if not [k for k in fake.vms if k.endswith("aks-late-1")]:
            break
        time.sleep(0.01)  # the SDK's poller thread works on the wall clock
    with pytest.raises(InstanceNotFoundError):
        provider.get(instance.provider_id)
    assert not [k for k in fake.nics if k.endswith("aks-late-1")]
    nc = node_class()
    offered = provider.offerings(nc, provider.instance_types(nc))["Standard_D2_v4"]
    down = {(o.zone, o.capacity_type) for o in offered if not o.available}
    assert down == {("japaneast-2", "on-demand"), ("japaneast-2", "spot")}
    # A launch sized for the failed offering names it, so the core stops offering it too.
    with pytest.raises(InsufficientCapacityError) as raised:
        provider.launch(stale_zone_2)
    assert raised.value.offerings == (("Standard_D2_v4", "japaneast-2", "on-demand"),)
    assert timedelta(0) < raised.value.ttl <= timedelta(hours=1)  # a zonal failure: 1 h
    # One that could go elsewhere launches there and reports what it skipped.
    result = provider.launch(stale_any_zone)
    assert isinstance(result, LaunchResult)
    assert result.instance.zone != "japaneast-2"
    assert result.unavailable_offerings == (("Standard_D2_v4", "japaneast-2", "on-demand"),)
