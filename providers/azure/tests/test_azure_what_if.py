"""``simulate --from-dump`` of an AKS cluster with the offline Azure catalog: the provider is
the one of the snapshot's AKSNodeClass, Karpenter's nodes and the system pool's node alike are
priced from the catalog, and the empty Karpenter node is removed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.testing.simulate import simulate_report

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "azure"
D2S_V3 = 0.128  # the offline catalog's Standard_D2s_v3 in japaneast


def _node(name: str, zone: str, *, karpenter: bool) -> dict[str, Any]:
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": "Standard_D2s_v3",
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": "japaneast",
        "karpenter.azure.com/sku-family": "D",
    }
    if karpenter:
        labels |= {
            "karpenter.sh/nodepool": "default",
            "karpenter.sh/capacity-type": "on-demand",
            "karpenter.azure.com/aksnodeclass": "default",
        }
    else:
        labels |= {
            "kubernetes.azure.com/agentpool": "system",
            "kubernetes.azure.com/scalesetpriority": "regular",
        }
    vm = f"/subscriptions/0/resourceGroups/mc/providers/Microsoft.Compute/virtualMachines/{name}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": f"azure://{vm}"},
        "status": {
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "1900m", "memory": "5Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _dump() -> dict[str, Any]:
    node_class = yaml.safe_load((EXAMPLE / "aksnodeclass.yaml").read_text())
    pool = next(yaml.safe_load_all((EXAMPLE / "nodepools.yaml").read_text()))
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {
            "nodeName": "aks-default-a",
            "containers": [
                {"name": "app", "image": "app", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
        "status": {"phase": "Running"},
    }
    nodes = [
        _node("aks-default-a", "japaneast-1", karpenter=True),
        _node("aks-default-b", "japaneast-2", karpenter=True),
        _node("aks-system-0", "japaneast-1", karpenter=False),
    ]
    return {"apiVersion": "v1", "kind": "List", "items": [node_class, pool, *nodes, pod]}


def test_an_aks_snapshot_is_priced_from_the_offline_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "aks.json"
    dump.write_text(json.dumps(_dump()))
    code, report = simulate_report(
        tmp_path, "--from-dump", str(dump), "--provider-option", "azure.offline=japaneast"
    )
    assert code == 0, capsys.readouterr().err
    what_if = report["whatIf"]
    assert [(n["name"], n["managed"], n["pricePerHour"]) for n in what_if["currentNodes"]] == [
        ("aks-default-a", True, pytest.approx(D2S_V3)),
        ("aks-default-b", True, pytest.approx(D2S_V3)),
        ("aks-system-0", False, pytest.approx(D2S_V3)),
    ]
    assert [(c["name"], c["action"], c["reason"]) for c in what_if["changes"]] == [
        ("aks-default-b", "removed", "Empty")
    ]
    assert what_if["projectedPricePerHour"] == pytest.approx(2 * D2S_V3)
