"""provision-mode=bootstrappingclient against the fake: the node bootstrapping server is asked
(with the ARM token) for the node's custom data and command, given the provision profile
Karpenter Azure sends; the bootstrap token goes where the server left its placeholder; the
VM gets that custom data and the ``cse-agent-karpenter`` CustomScript extension with the
command, also when its create outlasts the launch; a server that cannot answer or answers
without them fails the launch, naming the setting or what was missing."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodewright.clock import SimulatedClock
from nodewright.plugin import LaunchError, TemporaryProviderError
from nodewright.testing import launched_instance
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.options import SettingsError, parse_settings
from providers.azure.tests.azure_helpers import RESOURCE_GROUP, node_class
from providers.azure.tests.fake_azure import FakeAzure
from providers.azure.tests.test_azure_bootstrap import TOKEN, bootstrap_options
from providers.azure.tests.test_azure_instances import D2_ZONE_2, request_for

VM = f"{RESOURCE_GROUP.lower()}/aks-default-65f84"


def _provider(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, tmp_path: Path, **extra: str
) -> AzureProvider:
    return make_provider(
        provision_mode="bootstrappingclient",
        nodebootstrapping_server_url=fake.url,
        **bootstrap_options(tmp_path),
        **extra,
    )


def test_the_vm_is_bootstrapped_from_the_node_bootstrapping_server(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, tmp_path: Path
) -> None:
    provider = _provider(make_provider, fake, tmp_path)
    nc = node_class(
        kubelet={"cpuManagerPolicy": "static", "podPidsLimit": 4096},
        maxPods=60,
        linuxOSConfig={"sysctls": {"netCoreSomaxconn": 20000}},
    )
    assert provider.node_class_status(nc).ready
    launched_instance(provider.launch(request_for(provider, "default-65f84", D2_ZONE_2, nc)))
    (sent,) = fake.bootstrapping_requests
    profile = sent["provisionProfile"]
    assert profile["vmSize"] == "Standard_D2_v4"
    assert (profile["architecture"], profile["osType"], profile["osSku"]) == (
        "x64",
        "Linux",
        "Ubuntu",
    )
    assert profile["distro"] == "aks-ubuntu-containerd-22.04-gen2"
    assert profile["orchestratorVersion"] == "1.30.3"
    assert profile["maxPods"] == 60
    assert profile["mode"] == "User"
    assert profile["vnetSubnetID"].endswith("/subnets/aks-subnet")
    assert profile["nodeInitializationTaints"] == ["karpenter.sh/unregistered:NoExecute"]
    assert profile["nodeTaints"] == []
    assert profile["customNodeLabels"]["node.kubernetes.io/instance-type"] == "Standard_D2_v4"
    assert profile["customNodeLabels"]["karpenter.sh/nodepool"] == "default"
    assert profile["customKubeletConfig"] == {"cpuManagerPolicy": "static", "podMaxPids": 4096}
    assert profile["customLinuxOSConfig"] == {"sysctls": {"netCoreSomaxconn": 20000}}
    assert sent["provisionHelperValues"] == {"skuCPU": 2.0, "skuMemory": 8.0}
    # The server's custom data, with the bootstrap token where it left the placeholder.
    body = fake.vm_bodies[VM]
    custom_data = base64.b64decode(body["properties"]["osProfile"]["customData"]).decode()
    assert custom_data.startswith("#cloud-config\n")
    assert f"content: {TOKEN}\n" in custom_data
    assert "{{.TokenID}}" not in custom_data
    (extension,) = fake.vm_extensions[VM].items()
    name, payload = extension
    assert name == "cse-agent-karpenter"
    properties = payload["properties"]
    assert (properties["publisher"], properties["type"], properties["typeHandlerVersion"]) == (
        "Microsoft.Azure.Extensions",
        "CustomScript",
        "2.0",
    )
    assert properties["protectedSettings"] == {
        "commandToExecute": f"/opt/azure/containers/provision_start.sh TLS_BOOTSTRAP_TOKEN={TOKEN}"
    }
    assert payload["tags"]["karpenter.azure.com_nodeclaim"] == "default-65f84"
    # The server is asked with the ARM credential, under the cluster's path.
    (get,) = [p for m, p in fake.requests if p.lower().endswith("/nodebootstrapping")]
    assert get == (
        f"/subscriptions/{fake.subscription}/resourceGroups/{RESOURCE_GROUP}/providers/"
        "Microsoft.ContainerService/managedclusters/aks-test/nodeBootstrapping"
    )


def test_a_slow_vm_gets_its_extension_once_it_exists(
    make_provider: Callable[..., AzureProvider],
    fake: FakeAzure,
    tmp_path: Path,
    clock: SimulatedClock,
) -> None:
    provider = _provider(make_provider, fake, tmp_path, launch_wait="0", polling_interval="0.01")
    fake.lro_polls = 3
    instance = launched_instance(provider.launch(request_for(provider, "default-65f84", D2_ZONE_2)))
    assert instance.state == "pending"
    assert VM not in fake.vm_extensions
    for _ in range(500):
        provider.reconcile(clock.now())
        if VM in fake.vm_extensions:
            break
        time.sleep(0.01)  # the SDK's poller thread works on the wall clock
    assert list(fake.vm_extensions[VM]) == ["cse-agent-karpenter"]


@pytest.mark.parametrize(
    ("answer", "missing"),
    [({"customData": "Iw=="}, "cse"), ({"cse": "true"}, "customData")],
)
def test_an_answer_without_custom_data_or_command_fails_the_launch(
    make_provider: Callable[..., AzureProvider],
    fake: FakeAzure,
    tmp_path: Path,
    answer: dict[str, Any],
    missing: str,
) -> None:
    provider = _provider(make_provider, fake, tmp_path)
    fake.bootstrapping_answer = answer
    with pytest.raises(LaunchError) as failed:
        provider.launch(request_for(provider, "default-65f84", D2_ZONE_2))
    assert failed.value.reason == "NodeBootstrappingFailed"
    assert str(failed.value) == f"the node bootstrapping server answered without {missing}"
    assert fake.nics == {}, "nothing is created before the bootstrap is known"


def test_a_server_that_cannot_answer_names_the_setting(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, tmp_path: Path
) -> None:
    provider = _provider(make_provider, fake, tmp_path)
    fake.fail("GET", r"/nodeBootstrapping$", 500, "InternalError", "boom", times=10)
    with pytest.raises(TemporaryProviderError) as failed:
        provider.launch(request_for(provider, "default-65f84", D2_ZONE_2))
    assert f"(azure.nodebootstrapping-server-url={fake.url})" in str(failed.value)
    assert "InternalError" in str(failed.value)


def test_offline_has_no_node_bootstrapping_server() -> None:
    with pytest.raises(SettingsError, match="the offline cloud has no node bootstrapping server"):
        parse_settings(
            {
                "offline": "japaneast",
                "provision-mode": "bootstrappingclient",
                "nodebootstrapping-server-url": "https://bootstrap.example",
            }
        )
