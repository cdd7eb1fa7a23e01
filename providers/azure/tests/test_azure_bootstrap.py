"""Node bootstrap custom data: what the VM body the fake ARM received carries (cluster settings
from the options, kubelet flags from the NodeClass, the NodeClaim's labels and taints, max
pods), and that the bootstrap token stays out of logs and errors."""

from __future__ import annotations

import base64
import logging
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.api.core import Taint
from nodewright.plugin.errors import NodeClassNotReadyError
from nodewright.testing import launched_instance
from nodewright_azure.bootstrap import kubelet_labels
from nodewright_azure.cloudprovider import AzureProvider
from providers.azure.tests.azure_helpers import RESOURCE_GROUP, node_class
from providers.azure.tests.fake_azure import FakeAzure
from providers.azure.tests.test_azure_instances import D2_ZONE_2, request_for

TOKEN = "abcdef.0123456789abcdef"  # a TLS bootstrap token (id.secret)
CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----"


def bootstrap_options(tmp_path: Path) -> dict[str, str]:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    ca = tmp_path / "ca.crt"
    ca.write_text(CA)
    return {
        "cluster_endpoint": "aks-test-dns-12345678.hcp.japaneast.azmk8s.io",
        "cluster_ca_file": str(ca),
        "bootstrap_token_file": str(token),
        "kubernetes_version": "1.30.3",
        "dns_service_ip": "10.0.0.10",
        "network_plugin": "azure-overlay",
    }


def script_of(fake: FakeAzure, node_claim: str) -> dict[str, str]:
    """The variables the received custom data exports (the script decoded and parsed)."""
    body = fake.vm_bodies[f"{RESOURCE_GROUP.lower()}/aks-{node_claim}"]
    text = base64.b64decode(body["properties"]["osProfile"]["customData"]).decode()
    assert text.startswith("#!/bin/bash\n")
    assert text.rstrip().endswith("exec /opt/azure/containers/provision_start.sh")
    exported: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            exported[name] = shlex.split(value)[0] if value else ""
    return exported


def flags(exported: dict[str, str]) -> dict[str, str]:
    return dict(f.removeprefix("--").split("=", 1) for f in exported["KUBELET_FLAGS"].split())


def test_the_vm_carries_the_cluster_bootstrap_and_kubelet_flags(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, tmp_path: Path
) -> None:
    provider = make_provider(**bootstrap_options(tmp_path))
    nc = node_class(
        maxPods=110,
        kubelet={
            "cpuManagerPolicy": "static",
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80,
            "containerLogMaxFiles": 3,
            "allowedUnsafeSysctls": ["net.core.somaxconn", "kernel.msg*"],
        },
    )
    request = request_for(provider, "default-65f84", D2_ZONE_2, nc=nc)
    claim = request.node_claim
    claim.metadata.labels["team"] = "web"
    claim.spec.taints.append(Taint(key="dedicated", value="web", effect="NoSchedule"))
    claim.spec.startup_taints.append(
        Taint(key="node.cilium.io/agent-not-ready", effect="NoExecute")
    )
    provider.launch(request)

    exported = script_of(fake, "default-65f84")
    assert exported["API_SERVER_NAME"] == "aks-test-dns-12345678.hcp.japaneast.azmk8s.io"
    assert base64.b64decode(exported["KUBE_CA_CRT"]).decode() == CA
    assert exported["TLS_BOOTSTRAP_TOKEN"] == TOKEN
    assert exported["KUBERNETES_VERSION"] == "1.30.3"
    assert exported["NETWORK_PLUGIN"] == "azure-overlay"
    assert exported["NODE_NAME"] == "aks-default-65f84"
    assert exported["MAX_PODS"] == "110"
    kubelet = flags(exported)
    assert kubelet["max-pods"] == "110"
    # The overhead the scheduling simulation assumed for a D2_v4 (2 vCPU, 8 GiB).
    assert kubelet["kube-reserved"] == "cpu=100m,memory=1843Mi"
    assert kubelet["eviction-hard"] == "memory.available<750Mi"
    assert kubelet["cluster-dns"] == "10.0.0.10"
    assert kubelet["cpu-manager-policy"] == "static"
    assert kubelet["image-gc-high-threshold"] == "85"
    assert kubelet["image-gc-low-threshold"] == "80"
    assert kubelet["container-log-max-files"] == "3"
    assert kubelet["allowed-unsafe-sysctls"] == "net.core.somaxconn,kernel.msg*"
    labels = dict(pair.split("=", 1) for pair in kubelet["node-labels"].split(","))
    assert labels["team"] == "web"
    assert labels["karpenter.sh/nodepool"] == claim.metadata.labels["karpenter.sh/nodepool"]
    assert labels["karpenter.azure.com/sku-name"] == "Standard_D2_v4"
    assert labels["node.kubernetes.io/instance-type"] == "Standard_D2_v4"
    assert labels["topology.kubernetes.io/zone"] == "japaneast-2"
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    assert labels["kubernetes.azure.com/role"] == "agent"
    assert labels["kubernetes.azure.com/cluster"] == RESOURCE_GROUP
    assert labels["kubernetes.azure.com/podnetwork-type"] == "overlay"
    assert labels["kubernetes.azure.com/network-name"] == "aks-vnet-1"
    assert labels["kubernetes.azure.com/network-subnet"] == "aks-subnet"
    assert labels["kubernetes.azure.com/network-subscription"] == fake.subscription
    assert "kubernetes.io/hostname" not in labels
    assert kubelet["register-with-taints"].split(",") == [
        "dedicated=web:NoSchedule",
        "node.cilium.io/agent-not-ready:NoExecute",
        "karpenter.sh/unregistered:NoExecute",
    ]
    # ARM never returns custom data: the stored VM has none.
    stored = fake.vms[f"{RESOURCE_GROUP.lower()}/aks-default-65f84"]
    assert "customData" not in stored["properties"]["osProfile"]


def test_max_pods_defaults_from_the_network_plugin(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure
) -> None:
    provider = make_provider(network_plugin="azure")
    provider.launch(request_for(provider, "default-aaaaa", D2_ZONE_2))
    exported = script_of(fake, "default-aaaaa")
    assert flags(exported)["max-pods"] == "30"
    assert "cpu-manager-policy" not in flags(exported)  # no kubelet settings, no flags


def test_the_bootstrap_token_is_never_logged(
    make_provider: Callable[..., AzureProvider],
    fake: FakeAzure,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    provider = make_provider(**bootstrap_options(tmp_path))
    instance = launched_instance(provider.launch(request_for(provider, "default-bbbbb", D2_ZONE_2)))
    assert TOKEN not in caplog.text
    assert TOKEN not in repr(provider.settings)
    assert TOKEN not in repr(instance)


def test_an_unreadable_token_file_is_an_error_naming_the_option(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure, tmp_path: Path
) -> None:
    provider = make_provider(bootstrap_token_file=str(tmp_path / "missing"))
    with pytest.raises(NodeClassNotReadyError, match=r"azure\.bootstrap-token-file"):
        provider.launch(request_for(provider, "default-ccccc", D2_ZONE_2))
    assert not fake.vms
    assert not fake.nics


def test_kubelet_labels_keep_only_what_node_restriction_allows() -> None:
    assert kubelet_labels(
        {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": "x",
            "node-role.kubernetes.io/agent": "",
            "node.kubernetes.io/instance-type": "Standard_D2_v4",
            "example.k8s.io/x": "y",
            "karpenter.sh/nodepool": "default",
            "team": "web",
        }
    ) == {
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "Standard_D2_v4",
        "karpenter.sh/nodepool": "default",
        "team": "web",
    }
