"""User data per AMI family, read back from the launch template in moto
(DescribeLaunchTemplateVersions) after a real launch, and decoded as the node would."""

from __future__ import annotations

import base64
import email
import tomllib
from email.message import Message
from typing import Any

import boto3
import pytest
import yaml

from nodewright.api.core import Taint
from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL
from nodewright.plugin.errors import LaunchError
from nodewright_aws.cloudprovider import AWSProvider
from providers.aws.tests.aws_helpers import (
    CLUSTER,
    REGION,
    World,
    configured_provider,
    node_class,
    request_for,
)

ENDPOINT = "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com"
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n").decode()
KUBELET = {
    "maxPods": 50,
    "clusterDNS": ["10.100.0.10"],
    "systemReserved": {"cpu": "100m", "memory": "100Mi"},
    "evictionHard": {"memory.available": "5%"},
    "imageGCHighThresholdPercent": 85,
    "imageGCLowThresholdPercent": 80,
}


@pytest.fixture
def provider(world: World) -> AWSProvider:
    return configured_provider(
        world,
        extra={
            "cluster-endpoint": ENDPOINT,
            "cluster-ca-bundle": CA,
            "cluster-cidr": "10.100.0.0/16",
        },
    )


def _launch_user_data(world: World, provider: AWSProvider, **spec: Any) -> str:
    nc = node_class(**spec)
    request = request_for(
        provider,
        nc,
        "claim-1",
        [(INSTANCE_TYPE_LABEL, "In", ["m5.large"]), (CAPACITY_TYPE_LABEL, "In", ["on-demand"])],
    )
    claim = request.node_claim
    claim.metadata.labels["team"] = "payments"
    claim.spec.taints = [Taint(key="dedicated", value="payments", effect="NoSchedule")]
    claim.spec.startup_taints = [Taint(key="example.com/agent-not-ready", effect="NoExecute")]
    provider.launch(request)
    ec2 = world.ec2()
    templates = ec2.describe_launch_templates(
        Filters=[{"Name": "tag:eks:eks-cluster-name", "Values": [CLUSTER]}]
    )["LaunchTemplates"]
    assert len(templates) == 1
    version = ec2.describe_launch_template_versions(
        LaunchTemplateName=templates[0]["LaunchTemplateName"]
    )["LaunchTemplateVersions"][0]
    return base64.b64decode(version["LaunchTemplateData"]["UserData"]).decode()


def _parts(text: str) -> list[tuple[str, str]]:
    message = email.message_from_string(text)
    assert message.is_multipart()
    parts = message.get_payload()
    assert isinstance(parts, list)
    found = []
    for part in parts:
        assert isinstance(part, Message), part
        found.append((part.get_content_type(), str(part.get_payload())))
    return found


EXPECTED_TAINTS = [
    {"key": "dedicated", "value": "payments", "effect": "NoSchedule"},
    {"key": "example.com/agent-not-ready", "effect": "NoExecute"},
    {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
]


def test_al2023_nodeconfig_carries_cluster_kubelet_labels_and_taints(
    world: World, provider: AWSProvider
) -> None:
    text = _launch_user_data(
        world,
        provider,
        kubelet=KUBELET,
        userData="#!/bin/bash\necho custom-step\n",
    )
    parts = _parts(text)
    assert [ct for ct, _ in parts] == ["application/node.eks.aws", "text/x-shellscript"]
    config = yaml.safe_load(parts[0][1])
    assert config["kind"] == "NodeConfig"
    assert config["spec"]["cluster"] == {
        "name": CLUSTER,
        "apiServerEndpoint": ENDPOINT,
        "certificateAuthority": CA,
        "cidr": "10.100.0.0/16",
    }
    kubelet = config["spec"]["kubelet"]
    assert kubelet["config"]["maxPods"] == 50  # the class's maxPods wins over ENI pods (29)
    assert kubelet["config"]["clusterDNS"] == ["10.100.0.10"]
    assert kubelet["config"]["systemReserved"] == {"cpu": "100m", "memory": "100Mi"}
    assert kubelet["config"]["evictionHard"] == {"memory.available": "5%"}
    assert kubelet["config"]["registerWithTaints"] == EXPECTED_TAINTS
    (flag,) = kubelet["flags"]
    assert flag.startswith("--node-labels=")
    labels = dict(pair.split("=", 1) for pair in flag.removeprefix("--node-labels=").split(","))
    assert labels["team"] == "payments"
    assert labels["karpenter.sh/nodepool"] == "default"
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    assert "echo custom-step" in parts[1][1]


def test_al2023_user_mime_parts_follow_karpenters_nodeconfig(
    world: World, provider: AWSProvider
) -> None:
    user = (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n\n'
        "--BOUNDARY\nContent-Type: application/node.eks.aws\n\n"
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n"
        "    config:\n      shutdownGracePeriod: 30s\n"
        "--BOUNDARY\nContent-Type: text/x-shellscript\n\necho second\n--BOUNDARY--\n"
    )
    parts = _parts(_launch_user_data(world, provider, userData=user))
    assert [ct for ct, _ in parts] == [
        "application/node.eks.aws",
        "application/node.eks.aws",
        "text/x-shellscript",
    ]
    assert yaml.safe_load(parts[0][1])["spec"]["kubelet"]["config"]["maxPods"] == 29
    assert "shutdownGracePeriod: 30s" in parts[1][1]
    assert "echo second" in parts[2][1]


def test_al2023_plain_nodeconfig_user_data_becomes_a_nodeconfig_part(
    world: World, provider: AWSProvider
) -> None:
    user = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n"
    parts = _parts(_launch_user_data(world, provider, userData=user))
    assert [ct for ct, _ in parts] == ["application/node.eks.aws", "application/node.eks.aws"]


def test_al2_bootstrap_script_has_kubelet_extra_args(world: World, provider: AWSProvider) -> None:
    text = _launch_user_data(
        world,
        provider,
        amiFamily="AL2",
        amiSelectorTerms=[{"id": world.x86_ami}],
        kubelet=KUBELET,
        userData="#!/bin/bash\necho before-bootstrap\n",
    )
    parts = _parts(text)
    assert [ct for ct, _ in parts] == ["text/x-shellscript", "text/x-shellscript"]
    assert "echo before-bootstrap" in parts[0][1]  # the user's part runs first on AL2
    script = parts[1][1]
    assert f"/etc/eks/bootstrap.sh '{CLUSTER}'" in script
    assert f"--apiserver-endpoint '{ENDPOINT}'" in script
    assert f"--b64-cluster-ca '{CA}'" in script
    assert "--dns-cluster-ip '10.100.0.10'" in script
    assert "--use-max-pods false" in script
    extra = script.split("--kubelet-extra-args '", 1)[1].split("'", 1)[0].split(" ")
    assert "--max-pods=50" in extra
    assert (
        "--register-with-taints=dedicated=payments:NoSchedule,"
        "example.com/agent-not-ready=:NoExecute,karpenter.sh/unregistered=:NoExecute"
    ) in extra
    labels = next(a for a in extra if a.startswith("--node-labels="))
    assert "team=payments" in labels
    assert "karpenter.sh/nodepool=default" in labels
    assert "--system-reserved=cpu=100m,memory=100Mi" in extra
    assert "--eviction-hard=memory.available<5%" in extra
    assert "--image-gc-high-threshold=85" in extra


def test_bottlerocket_toml_merges_user_settings(world: World, provider: AWSProvider) -> None:
    user = (
        "[settings.kubernetes]\n"
        'cluster-name = "overwritten"\n'
        "max-pods = 7\n"
        "[settings.kubernetes.node-labels]\n"
        '"user/label" = "kept"\n'
        "[settings.host-containers.admin]\n"
        "enabled = true\n"
    )
    text = _launch_user_data(
        world,
        provider,
        amiFamily="Bottlerocket",
        amiSelectorTerms=[{"id": world.x86_ami}],
        kubelet={"clusterDNS": ["10.100.0.10"], "kubeReserved": {"cpu": "200m"}},
        userData=user,
    )
    document = tomllib.loads(text)
    kubernetes = document["settings"]["kubernetes"]
    assert kubernetes["cluster-name"] == CLUSTER  # Karpenter's settings win
    assert kubernetes["api-server"] == ENDPOINT
    assert kubernetes["cluster-certificate"] == CA
    assert kubernetes["max-pods"] == 29  # ENI-limited pods of m5.large
    assert kubernetes["cluster-dns-ip"] == "10.100.0.10"
    assert kubernetes["kube-reserved"] == {"cpu": "200m"}
    assert kubernetes["node-labels"]["user/label"] == "kept"
    assert kubernetes["node-labels"]["team"] == "payments"
    assert kubernetes["node-taints"] == {
        "dedicated": ["payments:NoSchedule"],
        "example.com/agent-not-ready": [":NoExecute"],
        "karpenter.sh/unregistered": [":NoExecute"],
    }
    assert document["settings"]["host-containers"]["admin"]["enabled"] is True


def test_bad_bottlerocket_toml_is_a_launch_error_naming_the_field(
    world: World, provider: AWSProvider
) -> None:
    with pytest.raises(LaunchError, match=r"spec\.userData") as error:
        _launch_user_data(
            world,
            provider,
            amiFamily="Bottlerocket",
            amiSelectorTerms=[{"id": world.x86_ami}],
            userData="[settings\nbroken",
        )
    assert error.value.reason == "InvalidUserData"


def test_custom_family_passes_user_data_through(world: World, provider: AWSProvider) -> None:
    user = "#!/bin/bash\n/opt/my-bootstrap --cluster mine\n"
    text = _launch_user_data(
        world, provider, amiFamily="Custom", amiSelectorTerms=[{"id": world.x86_ami}], userData=user
    )
    assert text == user


def test_cluster_details_come_from_eks_when_not_given(world: World) -> None:
    eks = boto3.client("eks", region_name=REGION, endpoint_url=world.endpoint)
    iam = world.iam()
    role = iam.get_role(RoleName=world.role)["Role"]["Arn"]
    eks.create_cluster(
        name=CLUSTER,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": list(world.subnets.values())},
    )
    described = eks.describe_cluster(name=CLUSTER)["cluster"]
    provider = configured_provider(world)
    config = yaml.safe_load(_parts(_launch_user_data(world, provider))[0][1])
    assert config["spec"]["cluster"]["apiServerEndpoint"] == described["endpoint"]
    assert (
        config["spec"]["cluster"]["certificateAuthority"]
        == (described["certificateAuthority"]["data"])
    )
