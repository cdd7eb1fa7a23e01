"""The AKS machine API provision modes against the fake ARM: the machine PUT (size, zone,
priority, node image version from the shared gallery, labels, taints, kubelet settings,
linuxOSConfig sysctls, tags), adoption, get / list / delete through ``deleteMachines``,
provisioning failures, batched creates (``BatchPutMachine``) and managing existing machines
from the VM mode."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest

from nodewright.api.core import Taint
from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from nodewright.clock import SimulatedClock
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    InsufficientCapacityError,
    TemporaryProviderError,
)
from nodewright.testing import launched_instance
from nodewright_azure import labels as L
from nodewright_azure.aksmachine import machine_name, machine_of_vm
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.options import SettingsError, parse_settings
from providers.azure.tests.azure_helpers import node_class
from providers.azure.tests.fake_azure import FakeAzure
from providers.azure.tests.test_azure_instances import request_for

SIG = "10945678-1234-1234-1234-123456789012"
MACHINES = {
    "provision_mode": "aksmachineapi",
    "aks_machines_pool_name": "nodes",
    "cluster_resource_group": "rg",
    "use_sig": "true",
    "sig_subscription_id": SIG,
    "kubernetes_version": "1.31.2",
}
D2_ZONE_2 = [
    (INSTANCE_TYPE_LABEL, "In", ["Standard_D2_v4"]),
    (ZONE_LABEL, "In", ["japaneast-2"]),
    (CAPACITY_TYPE_LABEL, "In", ["on-demand"]),
]
SYSCTLS = {"vmMaxMapCount": 262144, "netIPv4TCPKeepaliveIntvl": 30}


@pytest.fixture
def machines(make_provider: Callable[..., AzureProvider]) -> AzureProvider:
    return make_provider(**MACHINES)


def test_machine_names_fit_the_aks_limit() -> None:
    assert machine_name("default-65f84") == "default-65f84"
    long = machine_name("a-very-long-nodepool-name-for-testing-x7k2p")
    assert len(long) == 34
    assert long.endswith("-x7k2p")
    assert long == machine_name("a-very-long-nodepool-name-for-testing-x7k2p")
    assert machine_of_vm("nodes", "aks-nodes-default-65f84-12345678-vm") == "default-65f84"
    assert machine_of_vm("nodes", "aks-default-65f84") is None


def test_a_node_claim_becomes_an_aks_machine(machines: AzureProvider, fake: FakeAzure) -> None:
    nc = node_class(
        imageFamily="Ubuntu2204",
        kubelet={"imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 60},
        linuxOSConfig={"sysctls": SYSCTLS, "transparentHugePageEnabled": "never"},
    )
    request = request_for(machines, "default-65f84", D2_ZONE_2, nc)
    request.node_claim.spec.taints = [Taint(key="dedicated", value="web", effect="NoSchedule")]
    instance = launched_instance(machines.launch(request))
    assert [m for m, p in fake.requests if "/virtualMachines/" in p] == []  # no VM, no NIC
    ((name, body, header),) = fake.machine_requests
    assert (name, header) == ("default-65f84", None)
    assert body["zones"] == ["2"]
    properties = body["properties"]
    assert properties["hardware"] == {"vmSize": "Standard_D2_v4"}
    assert properties["priority"] == "Regular"
    assert properties["nodeImageVersion"] == "AKSUbuntu-2204gen2containerd-202511.03.0"
    assert properties["operatingSystem"]["osSKU"] == "Ubuntu2204"
    assert properties["operatingSystem"]["linuxProfile"]["linuxOSConfig"] == {
        "transparentHugePageEnabled": "never",
        "sysctls": {"vmMaxMapCount": 262144, "netIpv4TcpkeepaliveIntvl": 30},
    }
    kubernetes = properties["kubernetes"]
    assert kubernetes["orchestratorVersion"] == "1.31.2"
    assert kubernetes["kubeletConfig"] == {"imageGcHighThreshold": 80, "imageGcLowThreshold": 60}
    assert kubernetes["nodeInitializationTaints"] == [
        "dedicated=web:NoSchedule",
        "karpenter.sh/unregistered:NoExecute",
    ]
    assert kubernetes["nodeLabels"][CAPACITY_TYPE_LABEL] == "on-demand"
    assert kubernetes["nodeLabels"][L.PLACEMENT_SCOPE] == "zonal"
    assert properties["tags"]["karpenter.sh_nodepool"] == "default"
    assert properties["tags"]["karpenter.azure.com_aksmachine_nodeclaim"] == "default-65f84"
    vm = machine_of_vm("nodes", instance.provider_id.rsplit("/", 1)[-1])
    assert vm == "default-65f84"
    assert instance.provider_id.lower().startswith(
        f"azure:///subscriptions/{fake.subscription}/resourcegroups/mc_rg_cluster_japaneast/"
    )
    assert (instance.instance_type, instance.zone, instance.capacity_type) == (
        "Standard_D2_v4",
        "japaneast-2",
        "on-demand",
    )
    assert instance.annotations[L.AKS_MACHINE_ANNOTATION].endswith(
        "/managedClusters/aks-test/agentPools/nodes/machines/default-65f84"
    )
    assert instance.image_id == "AKSUbuntu-2204gen2containerd-202511.03.0"


def test_the_machine_is_read_listed_adopted_and_deleted(
    machines: AzureProvider, fake: FakeAzure
) -> None:
    request = request_for(machines, "default-65f84", D2_ZONE_2)
    instance = launched_instance(machines.launch(request))
    assert machines.get(instance.provider_id).state == "running"  # provisioned by now
    assert [i.provider_id for i in machines.list_instances()] == [instance.provider_id]
    again = launched_instance(machines.launch(request))  # a repeated launch adopts it
    assert again.provider_id == instance.provider_id
    assert len(fake.machine_requests) == 1
    machines.delete(instance.provider_id)
    deletes = [
        p for m, p in fake.requests if m == "POST" and p.split("?")[0].endswith("/deleteMachines")
    ]
    assert len(deletes) == 1
    assert machines.get(instance.provider_id).state == "terminating"
    with pytest.raises(InstanceNotFoundError):
        machines.get(instance.provider_id)
    with pytest.raises(InstanceNotFoundError):
        machines.delete(instance.provider_id)


def test_a_failed_provisioning_marks_the_offering_and_deletes_the_machine(
    machines: AzureProvider, fake: FakeAzure
) -> None:
    fake.lro_polls = 0
    fake.async_failures["default-65f84"] = (
        "AllocationFailed",
        "Allocation failed. We do not have sufficient capacity for the requested VM size",
    )
    with pytest.raises(InsufficientCapacityError) as raised:
        machines.launch(request_for(machines, "default-65f84", D2_ZONE_2))
    assert ("Standard_D2_v4", "japaneast-2", "on-demand") in raised.value.offerings
    assert fake.machines["default-65f84"]["properties"]["provisioningState"] == "Deleting"


def test_machine_modes_need_the_pool_and_shared_images() -> None:
    with pytest.raises(SettingsError, match="aks-machines-pool-name is required"):
        parse_settings({"provision-mode": "aksmachineapi", "use-sig": "true"})
    with pytest.raises(SettingsError, match="use-sig must be true"):
        parse_settings({"provision-mode": "aksmachineapi", "aks-machines-pool-name": "p"})
    with pytest.raises(SettingsError, match="nodebootstrapping-server-url is required"):
        parse_settings({"provision-mode": "bootstrappingclient"})
    with pytest.raises(SettingsError, match="not one of"):
        parse_settings({"provision-mode": "vmss"})


def test_batched_creates_go_out_in_one_put_with_the_batch_header(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, clock: SimulatedClock
) -> None:
    batched = make_provider(**{**MACHINES, "provision_mode": "aksmachineapiheaderbatch"})
    requests = [request_for(batched, f"default-{n}", D2_ZONE_2) for n in ("aaaaa", "bbbbb")]
    for request in requests:
        with pytest.raises(TemporaryProviderError, match="batched create") as queued:
            batched.launch(request)
        assert queued.value.delay == timedelta(seconds=1)
    assert fake.machine_requests == []
    clock.advance(timedelta(seconds=1))  # idle for provider-batch-idle-duration
    instances = [launched_instance(batched.launch(r)) for r in requests]
    ((name, body, header),) = fake.machine_requests
    assert name == "default-aaaaa"
    assert "tags" not in body["properties"]
    assert "zones" not in body
    entries = json.loads(header or "{}")["batchMachines"]
    assert [(e["machineName"], e["zones"]) for e in entries] == [
        ("default-aaaaa", ["2"]),
        ("default-bbbbb", ["2"]),
    ]
    assert entries[1]["tags"]["karpenter.azure.com_nodeclaim"] == "default-bbbbb"
    assert len({i.provider_id for i in instances}) == 2


def test_a_full_batch_goes_out_at_once(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure
) -> None:
    batched = make_provider(
        **{**MACHINES, "provision_mode": "aksmachineapiheaderbatch"}, provider_batch_max_size="2"
    )
    with pytest.raises(TemporaryProviderError):
        batched.launch(request_for(batched, "default-aaaaa", D2_ZONE_2))
    second = launched_instance(batched.launch(request_for(batched, "default-bbbbb", D2_ZONE_2)))
    assert len(fake.machine_requests) == 1
    assert second.instance_type == "Standard_D2_v4"


def test_the_vm_mode_manages_existing_machines_only_when_told(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure
) -> None:
    made = launched_instance(
        make_provider(**MACHINES).launch(
            request_for(make_provider(**MACHINES), "default-65f84", D2_ZONE_2)
        )
    )
    vms_only = make_provider()
    assert vms_only.list_instances() == []
    with pytest.raises(InstanceNotFoundError):
        vms_only.get(made.provider_id)
    managing = make_provider(
        manage_existing_aks_machines="true",
        aks_machines_pool_name="nodes",
        cluster_resource_group="rg",
    )
    assert [i.provider_id for i in managing.list_instances()] == [made.provider_id]
    managing.delete(made.provider_id)
    assert fake.machines["default-65f84"]["properties"]["provisioningState"] == "Deleting"
