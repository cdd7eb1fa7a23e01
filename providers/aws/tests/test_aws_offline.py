"""``aws.offline=REGION``: the real provider against the bundled catalog, no server at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nodewright_aws.plugin as aws_plugin
from nodewright.api.core import Node
from nodewright.api.karpenter import NodeClaim
from nodewright.plugin import catalog_differences, decode_catalog, encode_catalog
from nodewright.testing.simulate import load_script, simulate_manifests, simulate_report
from nodewright_aws.offline.catalog import SPOT_SHARE_HIGH, SPOT_SHARE_LOW, load_catalog
from nodewright_aws.options import parse_settings

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "providers" / "aws" / "scripts" / "generate_offline_catalog.py"
SEED = ROOT / "examples" / "aws-seed-000"

NODE_CLASS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-offline
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
"""

NODE_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [CAPACITY]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
EXTRA"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
        - name: app
          image: pause
          resources: {requests: {cpu: "1"}}
"""


def simulate(
    tmp_path: Path, capacity: str, *options: str, extra: str = "", node_class: str = NODE_CLASS
) -> tuple[int, dict[str, Any]]:
    pool = NODE_POOL.replace("CAPACITY", capacity).replace("EXTRA", extra)
    manifests = {"class.yaml": node_class, "pool.yaml": pool, "app.yaml": DEPLOYMENT}
    return simulate_manifests(tmp_path, manifests, *options)


def launched(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in report["nodes"] if n["nodePool"] == "default"]


def test_on_demand_launches_the_cheapest_type_at_its_list_price(tmp_path: Path) -> None:
    code, report = simulate(tmp_path, "on-demand", "--provider-option", "aws.offline=us-west-2")
    assert code == 0
    assert [p for p in report["pods"] if p["node"] is None] == []
    (node,) = launched(report)
    assert node["instanceType"] == "m5.large"
    assert node["capacityType"] == "on-demand"
    assert node["pricePerHour"] == pytest.approx(0.096)  # the us-east-1 list price
    assert not any("modelled (approximate) on-demand prices launched" in n for n in report["notes"])
    assert node["zone"] in load_catalog().offerings("us-west-2")["m5.large"]
    labels = node["labels"]
    assert labels["topology.kubernetes.io/region"] == "us-west-2"
    assert labels["karpenter.k8s.aws/instance-cpu"] == "2"
    assert labels["karpenter.k8s.aws/instance-memory"] == "8192"
    assert labels["kubernetes.io/arch"] == "amd64"
    assert labels["topology.k8s.aws/zone-id"].startswith("usw2-az")


def test_spot_launches_in_the_cheapest_zone_below_on_demand(tmp_path: Path) -> None:
    code, report = simulate(tmp_path, "spot", "--provider-option", "aws.offline=eu-west-1")
    assert code == 0
    (node,) = launched(report)
    assert node["instanceType"] == "m5.large"
    assert node["capacityType"] == "spot"
    catalog = load_catalog()
    zones = catalog.offerings("eu-west-1")["m5.large"]
    spot = {zone: catalog.spot_price("m5.large", zone) for zone in zones}
    assert node["zone"] == min(zones, key=lambda z: (spot[z], z))
    assert node["pricePerHour"] == pytest.approx(spot[node["zone"]])
    assert 0.096 * SPOT_SHARE_LOW <= node["pricePerHour"] < 0.096 * SPOT_SHARE_HIGH


def test_a_zone_requirement_is_honoured_even_when_dearer(tmp_path: Path) -> None:
    catalog = load_catalog()
    zones = catalog.offerings("eu-west-1")["m5.large"]
    dearest = max(zones, key=lambda z: catalog.spot_price("m5.large", z) or 0.0)
    zone = f"        - {{key: topology.kubernetes.io/zone, operator: In, values: [{dearest}]}}\n"
    code, report = simulate(
        tmp_path, "spot", "--provider-option", "aws.offline=eu-west-1", extra=zone
    )
    assert code == 0
    (node,) = launched(report)
    assert node["zone"] == dearest
    assert node["pricePerHour"] == pytest.approx(catalog.spot_price("m5.large", dearest))


def test_a_subnet_id_term_resolves_to_that_subnet_in_the_first_zone(tmp_path: Path) -> None:
    by_id = NODE_CLASS.replace(
        "subnetSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]",
        "subnetSelectorTerms: [{id: subnet-0123456789abcdef0}]",
    )
    code, report = simulate(
        tmp_path, "on-demand", "--provider-option", "aws.offline=us-west-2", node_class=by_id
    )
    assert code == 0
    (node,) = launched(report)
    first_zone = load_catalog().zones("us-west-2")[0][0]
    assert node["zone"] == first_zone
    cloud = aws_plugin.provider.offline
    assert cloud is not None
    (instance,) = cloud.instances.values()
    assert instance["SubnetId"] == "subnet-0123456789abcdef0"
    assert instance["PrivateDnsName"] == node["name"]


def test_amazon_linux_2_is_not_published_for_1_33_offline(tmp_path: Path) -> None:
    """As on AWS: the AL2 alias resolves no AMI for Kubernetes 1.33, so nothing launches and
    the pod stays pending."""
    al2 = NODE_CLASS.replace("al2023@latest", "al2@latest")
    code, report = simulate(
        tmp_path,
        "on-demand",
        "--provider-option",
        "aws.offline=us-west-2",
        "--provider-option",
        "aws.kubernetes-version=1.33",
        node_class=al2,
    )
    assert code == 0
    assert launched(report) == []
    (pending,) = [p for p in report["pods"] if p["node"] is None]
    assert "not ready" in pending["reason"]


def test_the_seed_example_runs_offline_and_leaves_no_instance(tmp_path: Path) -> None:
    """examples/aws-seed-000 as its README runs it, with no server: nodes of real instance
    types with prices, scaled to zero at the end (every launched node removed)."""
    code, report = simulate_report(
        tmp_path,
        str(SEED / "manifests"),
        "--scenario",
        str(SEED / "scenario.yaml"),
        "--provider-option",
        "aws.offline=eu-west-1",
    )
    assert code == 0
    assert launched(report) == []
    removed = report["removedNodes"]
    assert removed
    known = load_catalog().instance_types
    for node in removed:
        assert node["instanceType"] in known
        assert node["capacityType"] == "spot"
        assert node["pricePerHour"]
        assert node["pricePerHour"] > 0
        assert node["zone"].startswith("eu-west-1")
    assert report["dollarHours"] > 0
    notes = [n for n in report["notes"] if n.startswith("provider aws: ")]
    assert any("approximate" in n and "moto" in n for n in notes)
    modelled = {n["instanceType"] for n in removed} - load_catalog().listed
    if modelled:
        assert any(all(t in n for t in modelled) for n in notes)


def test_unknown_region_is_one_line_naming_the_regions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = simulate(tmp_path, "on-demand", "--provider-option", "aws.offline=mars-north-1")
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    problem = [line for line in lines if "mars-north-1" in line]
    assert len(problem) == 1
    assert "available: " in problem[0]
    assert "us-west-2" in problem[0]
    assert "eu-west-1" in problem[0]


def test_offline_conflicts_with_an_endpoint_or_another_region() -> None:
    with pytest.raises(ValueError, match="offline and endpoint-url conflict"):
        parse_settings({"offline": "us-west-2", "endpoint-url": "http://127.0.0.1:5000"})
    with pytest.raises(ValueError, match="conflict"):
        parse_settings({"offline": "us-west-2", "region": "eu-west-1"})
    same = parse_settings({"offline": "us-west-2", "region": "us-west-2"})
    assert same.offline
    assert same.region == "us-west-2"


def test_offline_needs_no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    code, report = simulate(tmp_path, "on-demand", "--provider-option", "aws.offline=us-east-1")
    assert code == 0
    assert [n["instanceType"] for n in launched(report)] == ["m5.large"]


def test_the_generation_script_reproduces_the_bundled_catalog() -> None:
    script = load_script(SCRIPT)
    bundled = decode_catalog(script.TARGET.read_bytes())
    rebuilt = script.build(bundled["generated"])
    assert catalog_differences(bundled, rebuilt) == []
    assert encode_catalog(rebuilt) == script.TARGET.read_bytes()
    assert bundled["sources"]["instance_types"].startswith("moto ")
    assert script.TARGET.stat().st_size < 200_000


HPC_CLASS = (
    NODE_CLASS
    + """\
  placementGroupSelector: {name: training}
  networkInterfaces:
    - {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}
    - {networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}
  connectionTracking: {tcpEstablishedTimeout: 3600}
"""
)
EFA_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""


def test_an_efa_workload_in_a_placement_group_launches_offline(tmp_path: Path) -> None:
    """An EFA-capable type of the catalog that can join a cluster group, launched into the
    group (the offline account holds one for any name), the group's ID on the node."""
    app = DEPLOYMENT.replace(
        '{requests: {cpu: "1"}}',
        '{requests: {cpu: "1", vpc.amazonaws.com/efa: "1"}, limits: {vpc.amazonaws.com/efa: "1"}}',
    )
    code, report = simulate_manifests(
        tmp_path,
        {"class.yaml": HPC_CLASS, "pool.yaml": EFA_POOL, "app.yaml": app},
        "--provider-option",
        "aws.offline=us-east-1",
    )
    assert code == 0
    assert [p for p in report["pods"] if p["node"] is None] == []
    (node,) = launched(report)
    info = load_catalog().instance_types[node["instanceType"]]
    assert info["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"] >= 1
    assert "cluster" in info["PlacementGroupInfo"]["SupportedStrategies"]
    cloud = aws_plugin.provider.offline
    assert cloud is not None
    (instance,) = cloud.instances.values()
    group = instance["Placement"]["GroupId"]
    assert group.startswith("pg-")
    assert node["labels"]["karpenter.k8s.aws/placement-group-id"] == group
    assert info["Hypervisor"] == "nitro"  # connectionTracking needs nitro
    # The simulated kubelet registers the capacity the launch promised: the class's efa-only
    # interface on card 0 leaves one ENI fewer for pods.
    context = aws_plugin.provider.context
    assert context is not None
    assert context.cluster is not None
    (registered,) = context.cluster.list(Node)
    (claim,) = context.cluster.list(NodeClaim)
    assert registered.status.capacity["pods"] == claim.status.capacity["pods"]


def _cordoned_node(name: str, zone: str, instance_id: str) -> str:
    return f"""\
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{topology.kubernetes.io/zone: {zone}, kubernetes.io/os: linux}}
spec:
  providerID: aws:///{zone}/{instance_id}
  unschedulable: true
status:
  capacity: {{cpu: "2", memory: 8Gi, pods: "29"}}
  allocatable: {{cpu: "2", memory: 8Gi, pods: "29"}}
  conditions: [{{type: Ready, status: "True"}}]
"""


def test_a_launch_never_takes_the_identity_of_a_node_already_in_the_cluster(
    tmp_path: Path,
) -> None:
    # A snapshot's nodes are instances the offline account never launched: one in every
    # zone with the ID the account hands out first, and one with the name of that first
    # instance. The launch must get an instance and a node of its own.
    region = "us-west-2"
    zones = load_catalog().offerings(region)["m5.large"]
    nodes = {
        f"node-{zone}.yaml": _cordoned_node(f"taken-{zone}", zone, "i-00000000000000001")
        for zone in zones
    }
    nodes["named.yaml"] = _cordoned_node(
        f"ip-172-31-0-5.{region}.compute.internal", zones[0], "i-0000000000000ffff"
    )
    pool = NODE_POOL.replace("CAPACITY", "on-demand").replace("EXTRA", "")
    code, report = simulate_manifests(
        tmp_path,
        {"class.yaml": NODE_CLASS, "pool.yaml": pool, "app.yaml": DEPLOYMENT, **nodes},
        "--provider-option",
        f"aws.offline={region}",
    )
    assert code == 0
    (node,) = launched(report)
    existing = {n["name"] for n in report["nodes"]} - {node["name"]}
    assert existing == {f"taken-{zone}" for zone in zones} | {
        f"ip-172-31-0-5.{region}.compute.internal"
    }
    assert node["name"] == f"ip-172-31-0-6.{region}.compute.internal"
    assert [p["node"] for p in report["pods"]] == [node["name"]]
