"""``azure.offline=LOCATION``: the real provider and the real Azure SDK clients against the
bundled catalog through an in-process transport; no server, no identity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodewright.plugin import catalog_differences, decode_catalog, encode_catalog
from nodewright.testing.simulate import load_script, simulate_manifests, simulate_report
from nodewright_azure import plugin as azure_plugin
from nodewright_azure.offline.catalog import SPOT_SHARE_HIGH, SPOT_SHARE_LOW, load_catalog
from nodewright_azure.options import SettingsError, parse_settings

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "providers" / "azure" / "scripts" / "generate_offline_catalog.py"
SEED = ROOT / "examples" / "azure" / "seed-002"

NODE_CLASS = """\
apiVersion: karpenter.azure.com/v1beta1
kind: AKSNodeClass
metadata: {name: default}
spec: {imageFamily: Ubuntu2204}
"""

NODE_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.azure.com, kind: AKSNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [CAPACITY]}
        - key: node.kubernetes.io/instance-type
          operator: In
          values: [Standard_D2s_v5, Standard_D4s_v5, Standard_E4s_v5]
EXTRA"""

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: default}
spec:
  containers:
    - name: app
      image: pause
      resources: {requests: {cpu: "1"}}
"""


def simulate(
    tmp_path: Path, capacity: str, *options: str, extra: str = ""
) -> tuple[int, dict[str, Any]]:
    pool = NODE_POOL.replace("CAPACITY", capacity).replace("EXTRA", extra)
    manifests = {"class.yaml": NODE_CLASS, "pool.yaml": pool, "pod.yaml": POD}
    return simulate_manifests(tmp_path, manifests, *options)


def test_on_demand_launches_the_cheapest_size_at_its_list_price(tmp_path: Path) -> None:
    code, report = simulate(tmp_path, "on-demand", "--provider-option", "azure.offline=eastus")
    assert code == 0
    assert [p for p in report["pods"] if p["node"] is None] == []
    (node,) = report["nodes"]
    assert node["instanceType"] == "Standard_D2s_v5"
    assert node["capacityType"] == "on-demand"
    assert node["pricePerHour"] == pytest.approx(0.096)  # static_prices.json, eastus
    assert node["zone"] in {"eastus-1", "eastus-2", "eastus-3"}
    labels = node["labels"]
    assert labels["topology.kubernetes.io/region"] == "eastus"
    assert labels["karpenter.azure.com/sku-cpu"] == "2"
    assert labels["karpenter.azure.com/sku-family"] == "D"
    assert labels["kubernetes.io/arch"] == "amd64"


def test_spot_is_priced_below_on_demand(tmp_path: Path) -> None:
    code, report = simulate(tmp_path, "spot", "--provider-option", "azure.offline=japaneast")
    assert code == 0
    (node,) = report["nodes"]
    assert node["instanceType"] == "Standard_D2s_v5"
    assert node["capacityType"] == "spot"
    catalog = load_catalog()
    assert node["pricePerHour"] == pytest.approx(catalog.spot_price("japaneast", "Standard_D2s_v5"))
    on_demand = 0.124  # static_prices.json, japaneast
    assert on_demand * SPOT_SHARE_LOW <= node["pricePerHour"] < on_demand * SPOT_SHARE_HIGH


def test_a_zone_requirement_is_honoured(tmp_path: Path) -> None:
    code, report = simulate(
        tmp_path,
        "on-demand",
        "--provider-option",
        "azure.offline=eastus",
        extra="        - {key: topology.kubernetes.io/zone, operator: In, values: [eastus-3]}\n",
    )
    assert code == 0
    (node,) = report["nodes"]
    assert node["zone"] == "eastus-3"
    cloud = azure_plugin.provider.offline
    assert cloud is not None
    (vm,) = cloud.vms.values()
    assert vm["zones"] == ["3"]
    assert vm["properties"]["hardwareProfile"]["vmSize"] == node["instanceType"]


def test_seed_002_runs_offline_and_leaves_no_vm(tmp_path: Path) -> None:
    """examples/azure/seed-002 with no server: each step's node is a catalog size of the
    pool's family with a price, consolidated away; no VM or NIC is left at the end."""
    code, report = simulate_report(
        tmp_path,
        str(SEED / "manifests"),
        "--scenario",
        str(SEED / "scenario.yaml"),
        "--provider-option",
        "azure.offline=japaneast",
    )
    assert code == 0
    assert report["nodes"] == []
    removed = {n["nodePool"]: n for n in report["removedNodes"]}
    assert set(removed) == {"default", "my-node", "my-node-comp"}
    sizes = {s["name"]: s for s in load_catalog().skus("japaneast")}
    for node in removed.values():
        assert node["instanceType"] in sizes
        assert 0 < node["pricePerHour"] < 5
        assert node["zone"].startswith("japaneast-")
    assert removed["default"]["instanceType"].startswith("Standard_D2")
    assert removed["my-node"]["instanceType"].startswith("Standard_D8")
    assert removed["my-node-comp"]["instanceType"].startswith("Standard_E16")
    notes = [n for n in report["notes"] if n.startswith("provider azure: ")]
    assert any("approximate" in n for n in notes)
    cloud = azure_plugin.provider.offline
    assert cloud is not None
    assert cloud.vms == {}
    assert cloud.nics == {}


def test_unknown_location_is_one_line_naming_the_locations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = simulate(tmp_path, "on-demand", "--provider-option", "azure.offline=moonbase")
    assert code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "moonbase" in line]
    assert len(lines) == 1
    assert "available: eastus, japaneast" in lines[0]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("arm-endpoint", "https://127.0.0.1:8443"),
        ("prices-endpoint", "https://127.0.0.1:8443"),
        ("auth-mode", "client-secret"),
        ("client-secret-file", "/run/secret"),
        ("authority-host", "https://127.0.0.1:8443"),
    ],
)
def test_offline_conflicts_with_servers_and_identities(option: str, value: str) -> None:
    with pytest.raises(SettingsError, match=f"offline and {option} conflict"):
        parse_settings({"offline": "eastus", option: value})


def test_offline_fills_in_what_azure_would_need() -> None:
    settings = parse_settings({"offline": "EastUS"})
    assert settings.offline
    assert settings.location == "eastus"
    assert settings.missing() == []
    assert settings.vnet_subnet_id.endswith("/subnets/nodes")
    with pytest.raises(SettingsError, match="conflict"):
        parse_settings({"offline": "eastus", "location": "japaneast"})


def test_the_generation_script_reproduces_the_bundled_catalog() -> None:
    script = load_script(SCRIPT)
    bundled = decode_catalog(script.TARGET.read_bytes())
    rebuilt = script.build(bundled["generated"])
    assert catalog_differences(bundled, rebuilt) == []
    assert encode_catalog(rebuilt) == script.TARGET.read_bytes()
