"""A moto server on loopback and a small AWS world (VPC, subnets, security groups, AMIs,
EKS-optimized SSM parameters, an IAM role) for the AWS provider's tests."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
import botocore.exceptions
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ssm.models import Parameter, ssm_backends

from nodewright.clock import SimulatedClock
from nodewright.plugin.model import LaunchRequest, ProviderContext
from nodewright.testing.conformance import make_node_claim, node_claim_requirements
from nodewright_aws.cloudprovider import AWSProvider
from nodewright_aws.nodeclass import EC2NodeClass

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_sqs import SQSClient

REGION = "us-west-2"
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
K8S = "1.33"
CLUSTER = "test-cluster"
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}
TYPES = "m5.large,m5.xlarge,c5.large,c6g.large,c7g.xlarge,g5.12xlarge,t3.large"


@dataclass
class World:
    endpoint: str
    subnets: dict[str, str]
    security_group: str
    x86_ami: str
    arm_ami: str
    gpu_ami: str
    role: str

    def ec2(self) -> EC2Client:
        return boto3.client("ec2", region_name=REGION, endpoint_url=self.endpoint)

    def iam(self) -> IAMClient:
        return boto3.client("iam", region_name=REGION, endpoint_url=self.endpoint)

    def sqs(self) -> SQSClient:
        return boto3.client("sqs", region_name=REGION, endpoint_url=self.endpoint)


def seed_ssm(name: str, value: str, region: str = REGION) -> None:
    """moto refuses put_parameter under /aws/: write the parameter into its backend."""
    backend = ssm_backends[DEFAULT_ACCOUNT_ID][region]
    backend._parameters[name].append(
        # moto builds its own built-in parameters this way; its types mark two CloudFormation
        # hooks abstract that Parameter never implements.
        Parameter(  # type: ignore[abstract]
            account_id=DEFAULT_ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=datetime.datetime.now(),
            version=1,
            data_type="aws:ec2:image",
        )
    )


def al2023_parameter(arch: str, variant: str, k8s: str = K8S) -> str:
    prefix = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023"
    return f"{prefix}/{arch}/{variant}/recommended/image_id"


_IMAGES: list[tuple[str, str, str]] = []


def builtin_images(ec2: Any) -> tuple[str, str, str]:
    """Two x86_64 and one arm64 image from moto's built-in set (the same after every reset;
    listing them is slow, so once per session)."""
    if not _IMAGES:
        images = ec2.describe_images(Owners=["amazon"])["Images"]
        x86 = [i["ImageId"] for i in images if i.get("Architecture") == "x86_64"]
        arm = next(i["ImageId"] for i in images if i.get("Architecture") == "arm64")
        _IMAGES.append((x86[0], arm, x86[1]))
    return _IMAGES[0]


def build_world(endpoint: str) -> World:
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {}
    for index, zone in enumerate(ZONES):
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{index}.0/24", AvailabilityZone=zone)
        subnet_id = subnet["Subnet"]["SubnetId"]
        ec2.create_tags(
            Resources=[subnet_id], Tags=[{"Key": k, "Value": v} for k, v in DISCOVERY.items()]
        )
        subnets[zone] = subnet_id
    group = ec2.create_security_group(GroupName="nodes", Description="nodes", VpcId=vpc)["GroupId"]
    ec2.create_tags(Resources=[group], Tags=[{"Key": k, "Value": v} for k, v in DISCOVERY.items()])
    x86, arm, gpu = builtin_images(ec2)
    seed_ssm(al2023_parameter("x86_64", "standard"), x86)
    seed_ssm(al2023_parameter("arm64", "standard"), arm)
    seed_ssm(al2023_parameter("x86_64", "nvidia"), gpu)
    iam = boto3.client("iam", region_name=REGION, endpoint_url=endpoint)
    iam.create_role(RoleName="KarpenterNodeRole", AssumeRolePolicyDocument="{}")
    return World(endpoint, subnets, group, x86, arm, gpu, "KarpenterNodeRole")


def node_class_manifest(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": DISCOVERY}],
        "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
    }
    base.update(spec)
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default", "uid": "uid-default", "generation": 1},
        "spec": base,
    }


def node_class(**spec: Any) -> EC2NodeClass:
    return EC2NodeClass.model_validate(node_class_manifest(**spec))


def options(world: World, **extra: str) -> dict[str, str]:
    return {
        "region": REGION,
        "endpoint-url": world.endpoint,
        "cluster-name": CLUSTER,
        "kubernetes-version": K8S,
        "instance-types": TYPES,
        **extra,
    }


def configured_provider(
    world: World,
    clock: SimulatedClock | None = None,
    cluster: Any = None,
    extra: Mapping[str, str] | None = None,
) -> AWSProvider:
    """A provider on ``world`` with the test options and ``extra`` ones (option names)."""
    provider = AWSProvider(session_factory=moto_session)
    provider.configure(
        ProviderContext(
            cluster=cluster, clock=clock or SimulatedClock(), options=options(world, **extra or {})
        )
    )
    return provider


def _pricing_unavailable(**_: Any) -> None:
    raise botocore.exceptions.EndpointConnectionError(endpoint_url="pricing")


def moto_session(region: str) -> boto3.Session:
    """A session whose Pricing API fails fast, as an unreachable endpoint would: moto has
    none (it answers 500, which botocore retries), so the static table is used. Tests that
    exercise GetProducts stub it with botocore's Stubber."""
    session = boto3.Session(region_name=region)
    session.events.register("before-call.pricing.GetProducts", _pricing_unavailable)
    return session


def tags_of(description: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in description.get("Tags", [])}


def request_for(
    provider: AWSProvider,
    nc: EC2NodeClass,
    name: str,
    requirements: Sequence[tuple[str, str, Sequence[str]]] = (),
    uid: str | None = None,
) -> LaunchRequest:
    """The LaunchRequest the core would send: catalog types that fit, cheapest first."""
    claim = make_node_claim(name, nc, requirements, uid=uid)
    wanted = node_claim_requirements(claim)
    types = provider.instance_types(nc)
    priced = provider.offerings(nc, types)
    options = []
    for instance_type in types:
        if wanted.intersects(instance_type.requirements):
            continue
        offerings = [
            o
            for o in priced.get(instance_type.name, [])
            if o.available and not wanted.intersects(o.requirements())
        ]
        if offerings:
            options.append(instance_type.with_offerings(offerings))
    options.sort(key=lambda t: (min(o.price for o in t.offerings), t.name))
    return LaunchRequest(claim, nc, tuple(options), wanted)


def describe(world: World, instance_id: str) -> dict[str, Any]:
    reservations = world.ec2().describe_instances(InstanceIds=[instance_id])["Reservations"]
    return dict(reservations[0]["Instances"][0])
