"""``simulate --from-dump`` of an EKS cluster with the offline EC2 catalog: the provider is the
one of the snapshot's EC2NodeClass, Karpenter's nodes and a managed node group's alike are
priced from the catalog, and the empty Karpenter node is removed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.testing.simulate import simulate_report

ROOT = Path(__file__).resolve().parents[3]
M5_LARGE = 0.096  # the catalog's on-demand m5.large (us-east-1 list price, in every region)


def _node(name: str, zone: str, instance: str, *, karpenter: bool) -> dict[str, Any]:
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": "eu-west-1",
    }
    if karpenter:
        labels |= {
            "karpenter.sh/nodepool": "default",
            "karpenter.sh/capacity-type": "on-demand",
            "karpenter.k8s.aws/ec2nodeclass": "default",
            # what Karpenter's AWS provider labels an m5.large with (the NodePool selects them)
            "karpenter.k8s.aws/instance-category": "m",
            "karpenter.k8s.aws/instance-generation": "5",
        }
    else:
        labels |= {
            "eks.amazonaws.com/nodegroup": "initial",
            "eks.amazonaws.com/capacityType": "ON_DEMAND",
        }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "spec": {"providerID": f"aws:///{zone}/{instance}"},
        "status": {
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
            "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def _dump() -> dict[str, Any]:
    node_class, pool = yaml.safe_load_all(
        (ROOT / "examples" / "aws" / "nodeclass.yaml").read_text()
    )
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    busy = "ip-10-0-1-1.eu-west-1.compute.internal"
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            node_class,
            pool,
            _node(busy, "eu-west-1a", "i-0aaaaaaaaaaaaaaa1", karpenter=True),
            _node(
                "ip-10-0-1-2.eu-west-1.compute.internal",
                "eu-west-1b",
                "i-0aaaaaaaaaaaaaaa2",
                karpenter=True,
            ),
            _node(
                "ip-10-0-0-9.eu-west-1.compute.internal",
                "eu-west-1a",
                "i-0bbbbbbbbbbbbbbb9",
                karpenter=False,
            ),
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "app", "namespace": "default", "uid": "uid-app"},
                "spec": {
                    "nodeName": busy,
                    "containers": [
                        {"name": "app", "image": "app", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
                "status": {"phase": "Running"},
            },
        ],
    }


def test_an_eks_snapshot_is_priced_from_the_offline_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "eks.yaml"
    dump.write_text(yaml.safe_dump(_dump()))
    code, report = simulate_report(
        tmp_path, "--from-dump", str(dump), "--provider-option", "aws.offline=eu-west-1"
    )
    assert code == 0, capsys.readouterr().err
    what_if = report["whatIf"]
    assert [(n["name"], n["managed"], n["pricePerHour"]) for n in what_if["currentNodes"]] == [
        ("ip-10-0-0-9.eu-west-1.compute.internal", False, pytest.approx(M5_LARGE)),
        ("ip-10-0-1-1.eu-west-1.compute.internal", True, pytest.approx(M5_LARGE)),
        ("ip-10-0-1-2.eu-west-1.compute.internal", True, pytest.approx(M5_LARGE)),
    ]
    assert [(c["name"], c["action"], c["reason"]) for c in what_if["changes"]] == [
        ("ip-10-0-1-2.eu-west-1.compute.internal", "removed", "Empty")
    ]
    assert what_if["projectedPricePerHour"] == pytest.approx(2 * M5_LARGE)
    assert what_if["unpricedNodes"] == []
    # the node table prices the snapshot's nodes from the catalog too
    nodes = report["nodes"]
    assert [n["pricePerHour"] for n in nodes] == [pytest.approx(M5_LARGE)] * 2


def _zonal_dump(status_subnets: list[dict[str, str]] | None, selector: list[Any]) -> dict[str, Any]:
    """An EC2NodeClass (its status listing ``status_subnets``), a NodePool, and six pods that
    must spread over every zone the NodeClass offers (``DoNotSchedule``), on no node yet."""
    node_class, pool = yaml.safe_load_all(
        (ROOT / "examples" / "aws" / "nodeclass.yaml").read_text()
    )
    node_class["spec"]["subnetSelectorTerms"] = selector
    if status_subnets is not None:
        node_class["status"] = {"subnets": status_subnets}
    spread = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    web = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "topologySpreadConstraints": [spread],
                    "containers": [
                        {"name": "web", "image": "web", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            },
        },
    }
    return {"apiVersion": "v1", "kind": "List", "items": [node_class, pool, web]}


def _zones(tmp_path: Path, dump: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> set[str]:
    path = tmp_path / "eks.yaml"
    path.write_text(yaml.safe_dump(dump))
    code, report = simulate_report(
        tmp_path, "--from-dump", str(path), "--provider-option", "aws.offline=us-east-1"
    )
    assert code == 0, capsys.readouterr().err
    assert not [p for p in report["pods"] if p["node"] is None]
    return {n["zone"] for n in report["nodes"]}


def test_offline_nodes_launch_only_in_the_zones_of_the_nodeclass_subnets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Karpenter resolved the selector to two subnets: us-east-1 has six zones, the class two
    subnets = [
        {"id": "subnet-0b0000000000000b1", "zone": "us-east-1b", "zoneID": "use1-az1"},
        {"id": "subnet-0c0000000000000c1", "zone": "us-east-1c", "zoneID": "use1-az2"},
    ]
    tags = [{"tags": {"karpenter.sh/discovery": "my-cluster"}}]
    assert _zones(tmp_path, _zonal_dump(subnets, tags), capsys) == {"us-east-1b", "us-east-1c"}
    # selected by ID, the subnets are in the zones the status gives them
    ids = [{"id": "subnet-0c0000000000000c1"}]
    assert _zones(tmp_path, _zonal_dump(subnets[1:], ids), capsys) == {"us-east-1c"}
    # with no status to say, a tag selector reaches every zone of the region (us-east-1e
    # offers none of the cheapest types)
    assert len(_zones(tmp_path, _zonal_dump(None, tags), capsys)) == 5
