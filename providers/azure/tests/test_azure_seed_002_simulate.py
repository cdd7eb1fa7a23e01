"""Seed 002 (AKS Node Auto Provisioning) end to end in ``nodewright simulate`` with the Azure
provider, against the loopback fake of ARM, Entra and the Retail Prices API.

The manifests are the seed's own (``examples/azure/seed-002``: karpenter.sh/v1beta1 NodePools
and a karpenter.azure.com/v1alpha2 AKSNodeClass, converted on load). The real Simulation runs
the real controllers; the provider authenticates with a client secret at the fake Entra and
creates NICs and VMs in the fake ARM; the simulated kubelet registers each VM's Node.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import CONDITION_READY, NodeClaim
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_paths
from nodewright.api.meta import find_condition
from nodewright.clock import SimulatedClock
from nodewright.commands import main
from nodewright.commands.host import load_host
from nodewright.simulation.runner import Simulation
from nodewright_azure import plugin as azure_plugin
from nodewright_azure.nodeclass import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    AKSNodeClass,
)
from providers.azure.tests.azure_helpers import RESOURCE_GROUP, fake_options
from providers.azure.tests.fake_azure import FakeAzure
from providers.azure.tests.fake_azure_catalog import UBUNTU_GALLERY

SEED = Path(__file__).resolve().parents[3] / "examples" / "azure" / "seed-002"
CLIENT_ID = "nap-client"
SECRET = "nap-secret-value"


def _options(fake: FakeAzure, tmp_path: Path) -> dict[str, str]:
    fake.clients[CLIENT_ID] = SECRET
    secret = tmp_path / "client-secret"
    secret.write_text(SECRET)
    return fake_options(
        fake,
        auth_mode="client-secret",
        tenant_id="tenant-1",
        client_id=CLIENT_ID,
        client_secret_file=str(secret),
        authority_host=fake.url,
    )


@pytest.fixture
def fake(tmp_path: Path, clock: SimulatedClock) -> Iterator[FakeAzure]:
    azure = FakeAzure(tmp_path, now=clock.now).start()
    yield azure
    azure_plugin.provider.close()
    azure.stop()


@pytest.fixture
def simulation(fake: FakeAzure, clock: SimulatedClock, tmp_path: Path) -> Simulation:
    return Simulation(
        load_host(), provider_options={"azure": _options(fake, tmp_path)}, clock=clock
    )


def _apply(sim: Simulation, *paths: Path) -> None:
    registry = KindRegistry()
    for kind in sim.host.node_class_kinds():
        registry.register(kind.model, kind.extra_versions)
    sim.apply(load_paths(list(paths), registry))
    sim.settle()


def _delete_pod(sim: Simulation, name: str) -> None:
    sim.cluster.delete(Pod, name, "default")
    sim.settle()


def _only_node(sim: Simulation) -> Node:
    nodes = sim.cluster.list(Node)
    assert len(nodes) == 1, [n.name for n in nodes]
    return nodes[0]


def _vm_and_nic(node: Node) -> tuple[str, str]:
    """The fake's keys of the node's VM and NIC (both named after it)."""
    key = f"{RESOURCE_GROUP.lower()}/{node.name}"
    return key, key


def test_seed_002_pools_weights_labels_and_consolidation(
    simulation: Simulation, fake: FakeAzure
) -> None:
    sim = simulation
    _apply(sim, SEED / "manifests", SEED / "pod-test.yaml")

    node_class = sim.cluster.get(AKSNodeClass, "default")
    assert node_class is not None
    ready = find_condition(node_class.status.conditions, CONDITION_READY)
    assert ready is not None
    assert ready.status == "True"
    assert str(node_class.status.images[0]["id"]).startswith(  # type: ignore[index]
        f"/CommunityGalleries/{UBUNTU_GALLERY}/images/2204gen2containerd/versions/"
    )

    # 1. The default pool: amd64, linux, on-demand, sku-family D -> a 2-vCPU D-series VM.
    node = _only_node(sim)
    claim = sim.cluster.list(NodeClaim)[0]
    assert node.name == f"aks-{claim.name}"  # the VM's name, as AKS nodes are named
    labels = node.metadata.labels
    assert labels["node.kubernetes.io/instance-type"].startswith("Standard_D2")
    assert labels["karpenter.azure.com/sku-name"] == labels["node.kubernetes.io/instance-type"]
    zone = labels["topology.kubernetes.io/zone"]
    assert zone.startswith("japaneast-")
    assert zone.rsplit("-", 1)[1] in {"1", "2", "3"}
    assert {
        k: labels.get(k)
        for k in (
            "karpenter.azure.com/sku-cpu",
            "karpenter.azure.com/sku-family",
            "karpenter.azure.com/sku-gpu-count",
            "karpenter.azure.com/sku-memory",
            "karpenter.azure.com/sku-networking-accelerated",
            "karpenter.azure.com/sku-version",
            "karpenter.sh/capacity-type",
            "karpenter.sh/nodepool",
            "karpenter.sh/registered",
            "karpenter.sh/initialized",
            "kubernetes.azure.com/mode",
            "kubernetes.azure.com/role",
            "kubernetes.io/arch",
            "kubernetes.io/os",
            "kubernetes.io/hostname",
            "topology.kubernetes.io/region",
        )
    } == {
        "karpenter.azure.com/sku-cpu": "2",
        "karpenter.azure.com/sku-family": "D",
        "karpenter.azure.com/sku-gpu-count": "0",
        "karpenter.azure.com/sku-memory": "8192",
        "karpenter.azure.com/sku-networking-accelerated": "true",
        "karpenter.azure.com/sku-version": labels["karpenter.azure.com/sku-name"][-1],
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
        "kubernetes.azure.com/mode": "user",
        "kubernetes.azure.com/role": "agent",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": node.name,
        "topology.kubernetes.io/region": "japaneast",
    }
    assert "karpenter.azure.com/zone" not in labels  # removed from Karpenter Azure
    # What AKS's bootstrap adds (the seed's node shows the node resource group and overlay).
    assert labels["kubernetes.azure.com/cluster"] == RESOURCE_GROUP
    assert labels["kubernetes.azure.com/podnetwork-type"] == "overlay"
    assert node.status.capacity["cpu"] == "2"
    # The NodeClaim carries the drift hash and the image the VM boots.
    assert claim.metadata.annotations[HASH_VERSION_ANNOTATION] == HASH_VERSION
    assert claim.metadata.annotations[HASH_ANNOTATION].isdigit()
    assert claim.status.image_id == node_class.status.images[0]["id"]  # type: ignore[index]
    pod = sim.cluster.get(Pod, "test", "default")
    assert pod is not None
    assert pod.spec.node_name == node.name
    vm_key, nic_key = _vm_and_nic(node)
    assert vm_key in fake.vms
    assert nic_key in fake.nics

    # Deleting the pod empties the node; consolidation deletes it, its VM and its NIC.
    _delete_pod(sim, "test")
    assert sim.cluster.list(Node) == []
    assert sim.cluster.list(NodeClaim) == []
    assert fake.vms == {}
    assert fake.nics == {}

    # 2. The weight-10 pool (sku-cpu 8) wins over default for the next pod.
    _apply(
        sim,
        SEED / "nodepool-my-node.yaml",
        SEED / "pod-test.yaml",
    )
    node = _only_node(sim)
    assert node.metadata.labels["karpenter.sh/nodepool"] == "my-node"
    assert node.metadata.labels["karpenter.azure.com/sku-cpu"] == "8"
    assert node.status.capacity["cpu"] == "8"
    _delete_pod(sim, "test")
    assert sim.cluster.list(Node) == []
    assert fake.vms == {}
    assert fake.nics == {}

    # 3. A pod selecting sku-memory 131072 gets a 16-vCPU E-series node from my-node-comp.
    _apply(
        sim,
        SEED / "nodepool-my-node-comp.yaml",
        SEED / "pod-test-comp.yaml",
    )
    node = _only_node(sim)
    labels = node.metadata.labels
    assert labels["karpenter.sh/nodepool"] == "my-node-comp"
    assert labels["karpenter.azure.com/sku-family"] == "E"
    assert labels["karpenter.azure.com/sku-cpu"] == "16"
    assert labels["karpenter.azure.com/sku-memory"] == "131072"
    assert labels["node.kubernetes.io/instance-type"].startswith("Standard_E16")
    vm_key, nic_key = _vm_and_nic(node)
    assert (
        fake.vms[vm_key]["properties"]["hardwareProfile"]["vmSize"]
        == (labels["node.kubernetes.io/instance-type"])
    )
    _delete_pod(sim, "test-comp")
    assert sim.cluster.list(Node) == []
    assert fake.vms == {}
    assert fake.nics == {}
    deletes = [p.split("?")[0] for m, p in fake.requests if m == "DELETE"]
    # One force-delete per VM; each NIC went with its VM (deleteOption: Delete).
    assert sum("/virtualMachines/" in p for p in deletes) == 3


def test_the_example_scenario_runs_from_the_command_line(
    fake: FakeAzure, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nodewright simulate examples/azure/seed-002/manifests --scenario ...`` as a user runs
    it (the fake stamps VMs with wall-clock time here; nothing depends on it)."""
    fake.now = lambda: datetime.now().astimezone()
    report_file = tmp_path / "report.json"
    argv = [
        "simulate",
        str(SEED / "manifests"),
        "--scenario",
        str(SEED / "scenario.yaml"),
        "--json",
        str(report_file),
    ]
    for name, value in _options(fake, tmp_path).items():
        argv += ["--provider-option", f"azure.{name}={value}"]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    report: dict[str, Any] = json.loads(report_file.read_text())
    assert report["nodes"] == []
    removed = {n["nodePool"]: n for n in report["removedNodes"]}
    assert set(removed) == {"default", "my-node", "my-node-comp"}
    assert removed["default"]["instanceType"].startswith("Standard_D2")
    assert removed["default"]["capacityType"] == "on-demand"
    assert removed["my-node-comp"]["instanceType"].startswith("Standard_E16")
    for node in removed.values():
        assert node["disruption"] == "Consolidation/Delete"
        assert node["name"] == f"aks-{node['nodeClaim']}"
        assert node["zone"].startswith("japaneast-")
    assert fake.vms == {}
    assert fake.nics == {}
