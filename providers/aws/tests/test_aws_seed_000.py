"""Seed 000 end to end: ``nodewright simulate`` with the AWS provider against moto.

The seed's v1alpha5 Provisioner (``examples/aws-seed-000``) is converted on load into a
NodePool and an EC2NodeClass; moto (server mode, loopback) holds the seed's VPC
(10.0.0.0/16, subnets and a security group tagged ``karpenter.sh/discovery: alpha`` in
eu-west-1a/b/c) and the EKS AL2 AMI parameters. The real Simulation (operator, embedded
Kubernetes, simulated kubelets) launches real moto instances through CreateFleet, the
simulated kubelet registers each under the instance's private DNS name, and the workloads
land as the article describes. Scaling to zero terminates the instances in moto.
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.commands import main
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import load_checked
from nodewright.simulation.limits import DEFAULT
from nodewright.simulation.runner import Simulation
from nodewright.simulation.scenario import load_scenario, run_step, scenario_hint
from nodewright_aws.cloudprovider import AWSProvider
from nodewright_aws.plugin import AWSPlugin
from nodewright_aws.pricing import PriceBook
from providers.aws.tests.aws_helpers import builtin_images, moto_session, seed_ssm

if TYPE_CHECKING:
    from mypy_boto3_ec2.type_defs import InstanceTypeDef, TagTypeDef

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "aws-seed-000"
REGION = "eu-west-1"
ZONES = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
K8S = "1.32"  # the AL2 alias the converted class uses is not published for 1.33+
QUEUE = "karpenter-interruption"
PROFILE = "KarpenterNodeInstanceProfile"
SEED_LABELS = (
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "karpenter.sh/capacity-type",
    "karpenter.sh/nodepool",
    "kubernetes.io/hostname",
)


@pytest.fixture
def seed_world(moto_endpoint: str) -> str:
    """The seed's AWS account in moto: VPC, three subnets, a security group, the EKS AL2
    AMI parameters, an instance profile and the interruption queue."""
    reset = urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(reset, timeout=10):
        pass
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=moto_endpoint)
    discovery: list[TagTypeDef] = [{"Key": "karpenter.sh/discovery", "Value": "alpha"}]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    for index, zone in enumerate(ZONES):
        subnet = ec2.create_subnet(
            VpcId=vpc, CidrBlock=f"10.0.{index}.0/24", AvailabilityZone=zone
        )["Subnet"]["SubnetId"]
        ec2.create_tags(Resources=[subnet], Tags=discovery)
    group = ec2.create_security_group(GroupName="nodes", Description="nodes", VpcId=vpc)
    ec2.create_tags(Resources=[group["GroupId"]], Tags=discovery)
    x86, arm, gpu = builtin_images(
        boto3.client("ec2", region_name="us-west-2", endpoint_url=moto_endpoint)
    )
    images = {i["ImageId"] for i in ec2.describe_images(ImageIds=[x86, arm, gpu])["Images"]}
    assert images == {x86, arm, gpu}  # moto's built-in images exist in every region
    prefix = f"/aws/service/eks/optimized-ami/{K8S}"
    for suffix, image in (("", x86), ("-arm64", arm), ("-gpu", gpu)):
        seed_ssm(f"{prefix}/amazon-linux-2{suffix}/recommended/image_id", image, REGION)
    iam = boto3.client("iam", region_name=REGION, endpoint_url=moto_endpoint)
    iam.create_instance_profile(InstanceProfileName=PROFILE)
    boto3.client("sqs", region_name=REGION, endpoint_url=moto_endpoint).create_queue(
        QueueName=QUEUE
    )
    return moto_endpoint


def provider_options(endpoint: str) -> dict[str, str]:
    return {
        "region": REGION,
        "endpoint-url": endpoint,
        "kubernetes-version": K8S,
        "default-instance-profile": PROFILE,
        "instance-types": "c5.*,c6i.*,m5.*",
        "interruption-queue": QUEUE,
        "cluster-endpoint": "https://seed.example.eks.amazonaws.com",
    }


#: Spot discount per zone for the stand-in spot prices (moto quotes 0.00001 for every type,
#: which would make the cheapest-first order alphabetical).
SPOT_FACTOR = {"eu-west-1a": 0.34, "eu-west-1b": 0.31, "eu-west-1c": 0.36}


def seed_session(endpoint: str) -> Callable[[str], boto3.Session]:
    """Sessions for the provider with stand-ins where moto falls short:

    - Pricing fails fast (moto has no Pricing API): the static on-demand table is used;
    - DescribeSpotPriceHistory answers on-demand x a per-zone discount instead of moto's
      flat 0.00001;
    - after CreateFleet, the instance gets the launch template's security groups, as EC2
      does (moto leaves the VPC default), so the simulation does not see SecurityGroupDrift.
    """
    static = PriceBook(REGION)
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint)
    templates: list[str] = []

    def remember_templates(params: dict[str, Any], **_: Any) -> None:
        templates[:] = [
            c["LaunchTemplateSpecification"]["LaunchTemplateName"]
            for c in params.get("LaunchTemplateConfigs", [])
        ]

    def apply_template_groups(parsed: dict[str, Any], **_: Any) -> None:
        groups: list[str] = []
        for name in templates:
            version = ec2.describe_launch_template_versions(LaunchTemplateName=name)[
                "LaunchTemplateVersions"
            ][0]
            for interface in version["LaunchTemplateData"].get("NetworkInterfaces", []):
                groups.extend(interface.get("Groups", []))
        for fleet_instance in parsed.get("Instances") or []:
            for instance_id in fleet_instance.get("InstanceIds", []):
                if groups:
                    ec2.modify_instance_attribute(InstanceId=instance_id, Groups=groups)

    def spot_prices(parsed: dict[str, Any], **_: Any) -> None:
        for record in parsed.get("SpotPriceHistory", []):
            on_demand = static.on_demand_price(record["InstanceType"]) or 1.0
            factor = SPOT_FACTOR.get(record["AvailabilityZone"], 0.4)
            record["SpotPrice"] = f"{on_demand * factor:.5f}"

    def factory(region: str) -> boto3.Session:
        session = moto_session(region)
        session.events.register("provide-client-params.ec2.CreateFleet", remember_templates)
        session.events.register("after-call.ec2.CreateFleet", apply_template_groups)
        session.events.register("after-call.ec2.DescribeSpotPriceHistory", spot_prices)
        return session

    return factory


def simulation(endpoint: str) -> Simulation:
    """The real Simulation (operator, embedded Kubernetes, simulated kubelets) with the AWS
    plugin on a session with moto stand-ins (:func:`seed_session`)."""
    provider = AWSProvider(seed_session(endpoint))
    host = PluginHost.load(entry_points=False, plugins={"aws": AWSPlugin(provider)})
    return Simulation(host, provider_options={"aws": provider_options(endpoint)})


def instances(endpoint: str, states: tuple[str, ...]) -> list[InstanceTypeDef]:
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint)
    found: list[InstanceTypeDef] = []
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[{"Name": "instance-state-name", "Values": list(states)}]
    )
    for page in pages:
        for reservation in page["Reservations"]:
            found.extend(reservation["Instances"])
    return found


def tags(instance: InstanceTypeDef) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance.get("Tags", [])}


def bound_pods(sim: Simulation, app: str) -> list[Pod]:
    return [
        p for p in sim.cluster.list(Pod) if p.metadata.labels.get("app") == app and p.spec.node_name
    ]


def zone_of(sim: Simulation, node_name: str) -> str:
    node = sim.cluster.get(Node, node_name)
    assert node is not None
    return node.metadata.labels["topology.kubernetes.io/zone"]


def run(sim: Simulation, step_index: int) -> None:
    scenario = load_scenario(EXAMPLE / "scenario.yaml", DEFAULT)
    run_step(sim, scenario.steps[step_index], sim.host, DEFAULT)


def start(endpoint: str) -> Simulation:
    sim = simulation(endpoint)
    sim.apply(
        load_checked([EXAMPLE / "manifests"], sim.host, file_hint=scenario_hint, limits=DEFAULT)
    )
    sim.settle()
    return sim


def karpenter_nodes(sim: Simulation) -> list[Node]:
    return [n for n in sim.cluster.list(Node) if "karpenter.sh/nodepool" in n.metadata.labels]


def existing_nodes(sim: Simulation) -> set[str]:
    return {
        n.name for n in sim.cluster.list(Node) if "karpenter.sh/nodepool" not in n.metadata.labels
    }


def assert_seed_labels(sim: Simulation, endpoint: str) -> None:
    """Every node Karpenter launched carries the labels the seed lists, names and values
    matching the EC2 instance behind it, which carries Karpenter's tags."""
    live = {i["InstanceId"]: i for i in instances(endpoint, ("pending", "running"))}
    nodes = karpenter_nodes(sim)
    assert nodes
    assert len(nodes) == len(live)
    claims = {c.status.provider_id: c for c in sim.cluster.list(NodeClaim)}
    for node in nodes:
        labels = node.metadata.labels
        missing = [k for k in SEED_LABELS if k not in labels]
        assert not missing, f"node {node.name} lacks {missing}"
        assert labels["kubernetes.io/arch"] == "amd64"
        assert labels["kubernetes.io/os"] == "linux"
        assert labels["topology.kubernetes.io/region"] == REGION
        assert labels["topology.kubernetes.io/zone"] in ZONES
        assert labels["karpenter.sh/nodepool"] == "default"  # was provisioner-name
        assert labels["karpenter.sh/capacity-type"] == "spot"  # spot first, as in the seed
        assert labels["kubernetes.io/hostname"] == node.name
        instance_id = (node.spec.provider_id or "").rsplit("/", 1)[-1]
        instance = live[instance_id]
        # The Node is named as EC2 names the machine: its private DNS name.
        assert node.name == instance["PrivateDnsName"]
        assert node.name.startswith("ip-10-0-")
        assert labels["node.kubernetes.io/instance-type"] == instance["InstanceType"]
        assert labels["topology.kubernetes.io/zone"] == instance["Placement"]["AvailabilityZone"]
        assert instance.get("InstanceLifecycle") == "spot"
        instance_tags = tags(instance)
        assert instance_tags["karpenter.sh/nodepool"] == "default"
        assert instance_tags["karpenter.k8s.aws/ec2nodeclass"] == "default"
        assert instance_tags["karpenter.sh/discovery"] == "alpha"  # the provider: tags
        assert instance_tags["eks:eks-cluster-name"] == sim.options.cluster_name
        assert instance_tags[f"kubernetes.io/cluster/{sim.options.cluster_name}"] == "owned"
        claim = claims[node.spec.provider_id]
        assert instance_tags["karpenter.sh/nodeclaim"] == claim.name
        assert (
            claim.metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"]
            == "nodewright-v1"
        )


def test_seed_000_pod_affinity_lands_in_one_zone_on_labelled_spot_nodes(
    seed_world: str,
) -> None:
    """Seed: the 8 inflate pods share one zone; the existing nodes of that zone with room
    take what they can (one each), one new spot node in that zone takes the rest."""
    sim = start(seed_world)
    run(sim, 0)  # inflate, required podAffinity on zone
    pods = bound_pods(sim, "inflate")
    assert len(pods) == 8
    zones = {zone_of(sim, p.spec.node_name or "") for p in pods}
    assert len(zones) == 1
    (zone,) = zones
    (new_node,) = karpenter_nodes(sim)
    assert new_node.metadata.labels["topology.kubernetes.io/zone"] == zone
    on_existing = Counter(p.spec.node_name for p in pods if p.spec.node_name in existing_nodes(sim))
    assert set(on_existing.values()) == {1}
    assert sum(1 for p in pods if p.spec.node_name == new_node.name) == 8 - len(on_existing)
    assert_seed_labels(sim, seed_world)


def test_seed_000_preferred_anti_affinity_spreads_over_zones(seed_world: str) -> None:
    """Seed: five pods go to existing nodes in different zones, the three left share one
    new spot node (a c5.xlarge, as in the article), in a zone the preference still allows."""
    sim = start(seed_world)
    run(sim, 2)  # inflate with preferred podAntiAffinity on zone
    pods = bound_pods(sim, "inflate")
    assert len(pods) == 8
    existing = existing_nodes(sim)
    on_existing = [p for p in pods if p.spec.node_name in existing]
    assert len(on_existing) == 5
    assert {zone_of(sim, p.spec.node_name or "") for p in on_existing} == {
        "eu-west-1a",
        "eu-west-1b",
    }
    (new_node,) = karpenter_nodes(sim)
    assert sum(1 for p in pods if p.spec.node_name == new_node.name) == 3
    assert new_node.metadata.labels["node.kubernetes.io/instance-type"] == "c5.xlarge"
    # 1a and 1b already hold inflate pods: the new node goes where none is yet.
    assert new_node.metadata.labels["topology.kubernetes.io/zone"] == "eu-west-1c"
    assert_seed_labels(sim, seed_world)


def test_seed_000_zonal_statefulset_then_scale_to_zero_leaves_no_instance(
    seed_world: str,
) -> None:
    """Seed: the 20 replicas pinned to eu-west-1a (volumes bound on first consumer) get new
    nodes in eu-west-1a only; scaling to zero empties them, and after ttlSecondsAfterEmpty
    (consolidateAfter 30s) every instance is terminated in EC2."""
    sim = start(seed_world)
    run(sim, 4)  # express-nodejs: 20 replicas pinned to eu-west-1a, gp2 WaitForFirstConsumer
    pods = bound_pods(sim, "express-nodejs")
    assert len(pods) == 20
    assert {zone_of(sim, p.spec.node_name or "") for p in pods} == {"eu-west-1a"}
    assert {n.metadata.labels["topology.kubernetes.io/zone"] for n in karpenter_nodes(sim)} == {
        "eu-west-1a"
    }
    assert_seed_labels(sim, seed_world)
    launched = {i["InstanceId"] for i in instances(seed_world, ("pending", "running"))}
    assert launched
    run(sim, 5)  # scale to 0
    run(sim, 6)  # settle: empty nodes consolidated after 30 s
    assert karpenter_nodes(sim) == []
    assert sim.cluster.list(NodeClaim) == []
    assert len(existing_nodes(sim)) == 6  # the node group's nodes are not Karpenter's
    assert instances(seed_world, ("pending", "running")) == []
    gone = {i["InstanceId"] for i in instances(seed_world, ("shutting-down", "terminated"))}
    assert launched <= gone


def test_seed_000_spot_interruption_replaces_the_node(seed_world: str) -> None:
    sim = start(seed_world)
    run(sim, 0)
    (old_claim,) = sim.cluster.list(NodeClaim)
    (old,) = karpenter_nodes(sim)
    old_node = old.name
    on_old = sum(1 for p in bound_pods(sim, "inflate") if p.spec.node_name == old_node)
    provider_id = old_claim.status.provider_id or ""
    instance_id = provider_id.rsplit("/", 1)[-1]
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=seed_world)
    url = sqs.get_queue_url(QueueName=QUEUE)["QueueUrl"]
    sqs.send_message(
        QueueUrl=url,
        MessageBody=json.dumps(
            {
                "version": "0",
                "source": "aws.ec2",
                "detail-type": "EC2 Spot Instance Interruption Warning",
                "region": REGION,
                "resources": [f"arn:aws:ec2:{REGION}:123456789012:instance/{instance_id}"],
                "detail": {"instance-id": instance_id, "instance-action": "terminate"},
            }
        ),
    )
    sim.settle(timedelta(minutes=20))
    claims = sim.cluster.list(NodeClaim)
    assert old_claim.name not in {c.name for c in claims}
    assert claims, "a replacement NodeClaim launched"
    pods = bound_pods(sim, "inflate")
    assert len(pods) == 8
    assert old_node not in {p.spec.node_name for p in pods}
    assert len({zone_of(sim, p.spec.node_name or "") for p in pods}) == 1
    (replacement,) = karpenter_nodes(sim)
    assert sum(1 for p in pods if p.spec.node_name == replacement.name) == on_old
    states = {
        i["InstanceId"]: i["State"]["Name"]
        for i in instances(seed_world, ("pending", "running", "shutting-down", "terminated"))
    }
    assert states[instance_id] in ("shutting-down", "terminated")
    assert_seed_labels(sim, seed_world)


def test_seed_000_through_the_cli(
    seed_world: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nodewright simulate`` as a user runs it against moto: the entry-point plugin, options
    from ``--provider-option aws.*`` (its sessions get the same moto stand-ins)."""
    import nodewright_aws.plugin as entry_point

    monkeypatch.setattr(entry_point.provider, "_session_factory", seed_session(seed_world))
    report_file = tmp_path / "report.json"
    options = [
        arg
        for key, value in provider_options(seed_world).items()
        for arg in ("--provider-option", f"aws.{key}={value}")
    ]
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        f"steps:\n  - apply: {EXAMPLE / 'workloads' / 'inflate-pod-affinity.yaml'}\n"
    )
    code = main(
        [
            "simulate",
            str(EXAMPLE / "manifests"),
            "--scenario",
            str(scenario),
            "--json",
            str(report_file),
            *options,
        ]
    )
    assert code == 0
    report = json.loads(report_file.read_text())
    assert [p for p in report["pods"] if p["node"] is None] == []
    launched = [n for n in report["nodes"] if n["nodePool"] == "default"]
    assert len(launched) == 1
    (node,) = launched
    assert all(key in node["labels"] for key in SEED_LABELS)
    assert node["capacityType"] == "spot"
    assert node["zone"] in ZONES
    assert node["name"] == node["labels"]["kubernetes.io/hostname"]
    (instance,) = instances(seed_world, ("pending", "running"))
    assert node["name"] == instance["PrivateDnsName"]
    assert node["instanceType"] == instance["InstanceType"]
