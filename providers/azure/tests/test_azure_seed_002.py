"""Seed 002 (AKS Node Auto Provisioning) at the provider level: the launches its three NodePools
lead to, against the fake ARM seeded with japaneast SKUs and prices.

What is checked here: the instance type and labels each pool's NodeClaim gets, and that
deleting the node's VM finishes. The whole seed (pool weights, Nodes, consolidation) runs in
``nodewright simulate`` in ``test_azure_seed_002_simulate.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from nodewright.plugin.errors import InstanceNotFoundError
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import Instance
from nodewright.testing import launch_request, make_node_claim
from nodewright_azure.cloudprovider import AzureProvider
from providers.azure.tests.azure_helpers import node_class

DEFAULT_POOL = [
    ("kubernetes.io/arch", "In", ["amd64"]),
    ("kubernetes.io/os", "In", ["linux"]),
    ("karpenter.sh/capacity-type", "In", ["on-demand"]),
    ("karpenter.azure.com/sku-family", "In", ["D"]),
]
MY_NODE_POOL = [("karpenter.azure.com/sku-cpu", "In", ["8"])]
MY_NODE_COMP_POOL = [("karpenter.azure.com/sku-memory", "In", ["131072"])]
SEED_NODE_CLASS = {"imageFamily": "Ubuntu2204", "osDiskSizeGB": 128}


@pytest.fixture
def host(provider: AzureProvider) -> PluginHost:
    from nodewright_azure.plugin import AzurePlugin

    return PluginHost.load(entry_points=False, plugins={"azure": AzurePlugin(provider)})


def launch(
    host: PluginHost, name: str, pool: str, requirements: Iterable[tuple[str, str, list[str]]]
) -> Instance:
    nc = node_class(**SEED_NODE_CLASS)
    claim = make_node_claim(name, nc, requirements, node_pool=pool)
    return host.launch(launch_request(host, claim, nc))


def test_default_pool_gets_a_d2_with_the_seed_labels(host: PluginHost) -> None:
    instance = launch(host, "default-65f84", "default", DEFAULT_POOL)
    assert instance.instance_type == "Standard_D2_v4"
    labels = instance.labels
    assert {
        k: labels[k]
        for k in (
            "karpenter.azure.com/sku-cpu",
            "karpenter.azure.com/sku-family",
            "karpenter.azure.com/sku-gpu-count",
            "karpenter.azure.com/sku-memory",
            "karpenter.azure.com/sku-name",
            "karpenter.azure.com/sku-networking-accelerated",
            "karpenter.azure.com/sku-version",
            "karpenter.sh/capacity-type",
            "node.kubernetes.io/instance-type",
            "kubernetes.io/arch",
            "kubernetes.io/os",
            "topology.kubernetes.io/region",
        )
    } == {
        "karpenter.azure.com/sku-cpu": "2",
        "karpenter.azure.com/sku-family": "D",
        "karpenter.azure.com/sku-gpu-count": "0",
        "karpenter.azure.com/sku-memory": "8192",
        "karpenter.azure.com/sku-name": "Standard_D2_v4",
        "karpenter.azure.com/sku-networking-accelerated": "true",
        "karpenter.azure.com/sku-version": "4",
        "karpenter.sh/capacity-type": "on-demand",
        "node.kubernetes.io/instance-type": "Standard_D2_v4",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": "japaneast",
    }
    assert labels["topology.kubernetes.io/zone"] in ("japaneast-1", "japaneast-2", "japaneast-3")
    assert "karpenter.azure.com/zone" not in labels  # removed from Karpenter since the seed


def test_sku_cpu_8_pool_gets_an_8_vcpu_node(host: PluginHost) -> None:
    instance = launch(host, "my-node-lzf4f", "my-node", MY_NODE_POOL)
    assert instance.labels["karpenter.azure.com/sku-cpu"] == "8"
    assert instance.capacity["cpu"] == 8000


def test_sku_memory_131072_gets_the_16_vcpu_e_series_node_and_goes_when_deleted(
    host: PluginHost,
) -> None:
    instance = launch(host, "my-node-comp-v57hv", "my-node-comp", MY_NODE_COMP_POOL)
    assert instance.instance_type == "Standard_E16as_v5"  # as in the seed, the cheapest
    assert instance.capacity_type == "spot"  # the pool allows spot; so did the seed's node
    assert instance.labels["karpenter.azure.com/sku-cpu"] == "16"
    assert instance.labels["karpenter.azure.com/sku-family"] == "E"
    assert instance.labels["karpenter.azure.com/sku-memory"] == "131072"
    assert instance.labels["karpenter.azure.com/sku-storage-premium-capable"] == "true"
    assert instance.labels["karpenter.azure.com/sku-version"] == "5"
    for _ in range(50):
        try:
            host.delete("azure", instance.provider_id)
        except InstanceNotFoundError:
            break
    else:
        pytest.fail("the VM was never deleted")
    assert host.list_instances("azure") == []
