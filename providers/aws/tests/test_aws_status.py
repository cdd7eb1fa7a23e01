"""EC2NodeClass status: selectors resolved against moto's EC2, SSM and IAM."""

from __future__ import annotations

import botocore.exceptions
import pytest

from nodewright.clock import SimulatedClock
from nodewright.plugin.model import ProviderContext
from nodewright_aws.cloudprovider import AWSProvider
from providers.aws.tests.aws_helpers import (
    CLUSTER,
    ZONES,
    World,
    al2023_parameter,
    configured_provider,
    node_class,
    seed_ssm,
)


def test_ready_with_subnets_groups_amis_and_instance_profile(world: World) -> None:
    readiness = configured_provider(world).node_class_status(node_class())
    assert readiness.ready, readiness.message
    status = readiness.status
    assert [s["zone"] for s in status["subnets"]] == sorted(
        ZONES, key=lambda z: world.subnets[z]
    ) or {s["zone"] for s in status["subnets"]} == set(ZONES)
    assert {s["id"] for s in status["subnets"]} == set(world.subnets.values())
    assert all(s["zoneID"].startswith("usw2-az") for s in status["subnets"])
    assert status["security_groups"] == [{"id": world.security_group, "name": "nodes"}]
    ids = {a["id"] for a in status["amis"]}
    assert ids == {world.x86_ami, world.arm_ami, world.gpu_ami}
    gpu = next(a for a in status["amis"] if a["id"] == world.gpu_ami)
    assert {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"} in gpu[
        "requirements"
    ]
    assert status["instance_profile"].startswith(f"{CLUSTER}_")
    iam = world.iam()
    profile = iam.get_instance_profile(InstanceProfileName=status["instance_profile"])[
        "InstanceProfile"
    ]
    assert [r["RoleName"] for r in profile["Roles"]] == ["KarpenterNodeRole"]


def test_instance_profile_is_used_as_given(world: World) -> None:
    nc = node_class(role=None, instanceProfile="my-profile")
    readiness = configured_provider(world).node_class_status(nc)
    assert readiness.ready
    assert readiness.status["instance_profile"] == "my-profile"


@pytest.mark.parametrize(
    ("spec", "reason", "field"),
    [
        (
            {"subnetSelectorTerms": [{"tags": {"nope": "x"}}]},
            "SubnetsNotFound",
            "spec.subnetSelectorTerms",
        ),
        (
            {"securityGroupSelectorTerms": [{"name": "missing"}]},
            "SecurityGroupsNotFound",
            "spec.securityGroupSelectorTerms",
        ),
        (
            {"amiSelectorTerms": [{"alias": "bottlerocket@latest"}]},
            "AMINotFound",
            "spec.amiSelectorTerms",
        ),
    ],
)
def test_not_ready_names_the_field_that_did_not_resolve(
    world: World, spec: dict[str, object], reason: str, field: str
) -> None:
    readiness = configured_provider(world).node_class_status(node_class(**spec))
    assert not readiness.ready
    assert readiness.reason == reason
    assert field in readiness.message


def test_ami_selected_by_ssm_parameter_and_by_id(world: World) -> None:
    seed_ssm("/my/custom/ami", world.arm_ami)
    provider = configured_provider(world)
    by_ssm = provider.node_class_status(
        node_class(amiFamily="AL2023", amiSelectorTerms=[{"ssmParameter": "/my/custom/ami"}])
    )
    assert [a["id"] for a in by_ssm.status["amis"]] == [world.arm_ami]
    changed = node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": world.x86_ami}])
    changed.metadata.generation = 2  # a spec change bumps the generation: resolved afresh
    by_id = provider.node_class_status(changed)
    assert [a["id"] for a in by_id.status["amis"]] == [world.x86_ami]


def test_alias_for_another_kubernetes_version_finds_nothing(world: World) -> None:
    seed_ssm(al2023_parameter("x86_64", "standard", "1.34"), world.x86_ami)
    readiness = configured_provider(world, extra={"kubernetes-version": "1.34"}).node_class_status(
        node_class()
    )
    assert readiness.ready
    assert [a["id"] for a in readiness.status["amis"]] == [world.x86_ami]


def test_missing_region_is_a_clear_condition_not_a_crash(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    provider = AWSProvider()
    provider.configure(ProviderContext(cluster=None, clock=SimulatedClock(), options={}))
    readiness = provider.node_class_status(node_class())
    assert not readiness.ready
    assert "aws.region" in readiness.message


def test_unauthorized_surfaces_as_a_condition(world: World) -> None:
    provider = configured_provider(world)

    def deny(**kwargs: object) -> None:
        raise botocore.exceptions.ClientError(
            {"Error": {"Code": "UnauthorizedOperation", "Message": "You are not authorized"}},
            "DescribeSubnets",
        )

    provider.clients.ec2.meta.events.register("before-call.ec2.DescribeSubnets", deny)
    readiness = provider.node_class_status(node_class())
    assert not readiness.ready
    assert readiness.reason == "Unauthorized"
    assert "UnauthorizedOperation" in readiness.message
    assert "spec.subnetSelectorTerms" in readiness.message
    assert "testing" not in readiness.message  # no credentials in messages


def test_a_converted_v1alpha5_class_without_profile_needs_the_default_option(world: World) -> None:
    converted = node_class(role=None)  # v1alpha5's profile was a controller setting
    readiness = configured_provider(world).node_class_status(converted)
    assert not readiness.ready
    assert "aws.default-instance-profile" in readiness.message
    with_default = configured_provider(world, extra={"default-instance-profile": "legacy-profile"})
    readiness = with_default.node_class_status(converted)
    assert readiness.ready
    assert readiness.status["instance_profile"] == "legacy-profile"
