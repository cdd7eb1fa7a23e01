"""The AWS provider's Karpenter settings: isolated-vpc, eks-control-plane, disable-dry-run
(and the dry-run validation it turns off), enable-zonal-shift, ami-refresh-interval and
subnet-refresh-interval; against moto, with botocore hooks for what moto lacks (ARC zonal
shift, refused dry runs)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import botocore.exceptions
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL
from nodewright.clock import SimulatedClock
from nodewright.plugin.model import ProviderContext
from nodewright.testing import launched_instance
from nodewright_aws.cloudprovider import AWSProvider
from nodewright_aws.options import parse_settings
from providers.aws.tests.aws_helpers import (
    CLUSTER,
    K8S,
    World,
    configured_provider,
    moto_session,
    node_class,
    options,
    request_for,
)


def count_calls(client: Any, operation: str) -> list[dict[str, Any]]:
    """The parameters of every ``operation`` call the client makes from now on."""
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        f"provide-client-params.{client.meta.service_model.endpoint_prefix}.{operation}",
        lambda params, **_: calls.append(dict(params)),
    )
    return calls


def refuse_dry_runs(client: Any, operation: str, when: Callable[[dict[str, Any]], bool]) -> None:
    def refuse(params: dict[str, Any], **_: Any) -> None:
        if params.get("DryRun") and when(params):
            raise botocore.exceptions.ClientError(
                {"Error": {"Code": "UnauthorizedOperation", "Message": "You are not authorized"}},
                operation,
            )

    client.meta.events.register(f"provide-client-params.ec2.{operation}", refuse)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"isolated-vpc": "yes"}, "isolated-vpc: 'yes' is not true or false"),
        ({"ami-refresh-interval": "30s"}, "ami-refresh-interval must be at least 1m"),
        ({"subnet-refresh-interval": "ten"}, "not a duration"),
        ({"subnet-refresh-interval": "5m junk"}, "not a duration"),
    ],
)
def test_bad_values_are_refused_naming_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_settings(options)


def test_values_parse_as_karpenter_flags_do() -> None:
    settings = parse_settings(
        {
            "isolated-vpc": "True",
            "eks-control-plane": "f",
            "disable-dry-run": "1",
            "enable-zonal-shift": "true",
            "ami-refresh-interval": "1h30m",
            "subnet-refresh-interval": "90s",
        }
    )
    assert settings.isolated_vpc
    assert settings.disable_dry_run
    assert settings.enable_zonal_shift
    assert settings.eks_control_plane is False
    assert settings.ami_refresh_interval == timedelta(minutes=90)
    assert settings.subnet_refresh_interval == timedelta(seconds=90)
    defaults = parse_settings({})
    assert (defaults.isolated_vpc, defaults.eks_control_plane, defaults.disable_dry_run) == (
        False,
        None,
        False,
    )
    assert defaults.ami_refresh_interval == defaults.subnet_refresh_interval == timedelta(minutes=1)


@pytest.mark.parametrize("isolated", [False, True])
def test_an_isolated_vpc_never_asks_the_pricing_api(world: World, isolated: bool) -> None:
    extra = {"isolated-vpc": "true"} if isolated else {}
    provider = configured_provider(world, extra=extra)
    asked = count_calls(provider.clients.pricing, "GetProducts")
    spot = count_calls(provider.clients.ec2, "DescribeSpotPriceHistory")
    nc = node_class()
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    on_demand = next(o for o in offerings if o.capacity_type == "on-demand")
    assert on_demand.price == pytest.approx(0.096)
    assert (len(asked) > 0) is not isolated
    assert spot  # spot prices come from EC2, which has a VPC endpoint


def test_without_an_eks_control_plane_describe_cluster_is_never_called(world: World) -> None:
    provider = configured_provider(
        world,
        extra={
            "eks-control-plane": "false",
            "cluster-endpoint": "https://api.example",
            "cluster-ca-bundle": "Q0E=",
            "cluster-cidr": "10.100.0.0/16",
        },
    )
    described = count_calls(provider.clients.eks, "DescribeCluster")
    nc = node_class()
    assert provider.node_class_status(nc).ready
    launched_instance(
        provider.launch(request_for(provider, nc, "a", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])]))
    )
    assert described == []


def test_without_an_eks_control_plane_an_alias_needs_the_version_option(world: World) -> None:
    """The cluster is in EKS (version 1.33 there): unset, the alias resolves through EKS's
    version; ``eks-control-plane=false`` does not ask, so the version must be an option."""
    import boto3

    boto3.client("eks", region_name="us-west-2", endpoint_url=world.endpoint).create_cluster(
        name=CLUSTER,
        version=K8S,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={},
    )
    versionless = {k: v for k, v in options(world).items() if k != "kubernetes-version"}
    for eks, ready in (({}, True), ({"eks-control-plane": "false"}, False)):
        provider = AWSProvider(session_factory=moto_session)
        provider.configure(
            ProviderContext(cluster=None, clock=SimulatedClock(), options=versionless | eks)
        )
        readiness = provider.node_class_status(node_class())
        assert readiness.ready is ready, readiness
        if not ready:
            assert readiness.reason == "KubernetesVersionUnknown"
            assert "kubernetes-version" in readiness.message


def test_an_eks_control_plane_that_eks_does_not_know_is_asked_again(world: World) -> None:
    unset = configured_provider(world)
    asked = count_calls(unset.clients.eks, "DescribeCluster")
    unset.cluster.description()
    unset.cluster.description()
    assert len(asked) == 1  # not EKS: remembered
    eks = configured_provider(world, extra={"eks-control-plane": "true"})
    asked = count_calls(eks.clients.eks, "DescribeCluster")
    eks.cluster.description()
    eks.cluster.description()
    assert len(asked) == 2  # EKS, by the settings: a failure is not "not EKS"


def test_dry_runs_validate_the_class_and_refusals_make_it_not_ready(world: World) -> None:
    clock = SimulatedClock()
    provider = configured_provider(world, clock=clock)
    ec2 = provider.clients.ec2
    dry = {
        op: count_calls(ec2, op) for op in ("CreateLaunchTemplate", "CreateFleet", "RunInstances")
    }
    nc = node_class()
    assert provider.node_class_status(nc).ready
    assert all(calls and calls[0]["DryRun"] for calls in dry.values())
    assert provider.launch_templates.templates == {}  # a dry run creates nothing
    refuse_dry_runs(ec2, "CreateFleet", lambda _: True)
    # The verdict stands for 30 minutes (per spec and resolution).
    assert provider.node_class_status(nc).ready
    clock.advance(timedelta(minutes=30))
    readiness = provider.node_class_status(nc)
    assert (readiness.ready, readiness.reason) == (False, "CreateFleetAuthCheckFailed")
    assert readiness.message.startswith("Controller isn't authorized to call ec2:CreateFleet")
    assert "UnauthorizedOperation" in readiness.message


def test_run_instances_must_be_allowed_in_one_subnet(world: World) -> None:
    provider = configured_provider(world)
    first, *_ = sorted(world.subnets.values())
    refuse_dry_runs(provider.clients.ec2, "RunInstances", lambda p: p["SubnetId"] == first)
    assert provider.node_class_status(node_class()).ready
    other = configured_provider(world)
    refuse_dry_runs(other.clients.ec2, "RunInstances", lambda _: True)
    assert other.node_class_status(node_class()).reason == "RunInstancesAuthCheckFailed"


def test_disable_dry_run_skips_the_check(world: World) -> None:
    provider = configured_provider(world, extra={"disable-dry-run": "true"})
    ec2 = provider.clients.ec2
    refuse_dry_runs(ec2, "CreateLaunchTemplate", lambda _: True)
    fleets = count_calls(ec2, "CreateFleet")
    assert provider.node_class_status(node_class()).ready
    assert fleets == []
    checked = configured_provider(world)
    refuse_dry_runs(checked.clients.ec2, "CreateLaunchTemplate", lambda _: True)
    readiness = checked.node_class_status(node_class())
    assert readiness.reason == "CreateLaunchTemplateAuthCheckFailed"


def shift_zone(provider: AWSProvider, zone_id: str, expires_in: timedelta) -> list[str]:
    """An EKS cluster in moto and an ARC answer shifting traffic away from ``zone_id``."""
    arns: list[str] = []
    arc = provider.clients.client("arc-zonal-shift")
    expiry = provider.now() + expires_in

    def answer(**_: Any) -> Any:
        arns.append("asked")
        return AWSResponse("", 200, HTTPHeaders(), None), {
            "zonalShifts": [
                {
                    "awayFrom": zone_id,
                    "expiryTime": expiry,
                    "appliedStatus": "APPLIED",
                    "zonalShiftId": "shift-1",
                    "resourceIdentifier": "arn",
                }
            ]
        }

    arc.meta.events.register("before-call.arc-zonal-shift.GetManagedResource", answer)
    return arns


@pytest.fixture
def eks_cluster(world: World) -> None:
    import boto3

    eks = boto3.client("eks", region_name="us-west-2", endpoint_url=world.endpoint)
    eks.create_cluster(
        name=CLUSTER, roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={}
    )


@pytest.mark.usefixtures("eks_cluster")
def test_a_zonal_shift_makes_the_zone_unavailable_until_it_expires(world: World) -> None:
    clock = SimulatedClock()
    provider = configured_provider(world, clock=clock, extra={"enable-zonal-shift": "true"})
    nc = node_class()
    zone_ids = provider.discovery.zone_ids(nc)
    shifted_zone = "us-west-2a"
    asked = shift_zone(provider, zone_ids[shifted_zone], timedelta(minutes=5))
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    available = {o.zone for o in offerings if o.available}
    assert shifted_zone not in available
    assert available == set(zone_ids) - {shifted_zone}
    assert asked
    request = request_for(
        provider,
        nc,
        "a",
        [(INSTANCE_TYPE_LABEL, "In", ["m5.large"]), (CAPACITY_TYPE_LABEL, "In", ["on-demand"])],
    )
    assert all(o.zone != shifted_zone for t in request.instance_types for o in t.offerings)
    clock.advance(timedelta(minutes=6))
    provider.reconcile(clock.now())
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    assert shifted_zone in {o.zone for o in offerings if o.available}


@pytest.mark.usefixtures("eks_cluster")
def test_zonal_shifts_are_ignored_unless_enabled(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class()
    asked = shift_zone(provider, provider.discovery.zone_ids(nc)["us-west-2a"], timedelta(hours=1))
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    assert "us-west-2a" in {o.zone for o in offerings if o.available}
    assert asked == []


@pytest.mark.parametrize(
    ("option", "operation"),
    [("subnet-refresh-interval", "DescribeSubnets"), ("ami-refresh-interval", "DescribeImages")],
)
def test_refresh_intervals_set_how_often_ec2_is_asked(
    world: World, option: str, operation: str
) -> None:
    clock = SimulatedClock()
    provider = configured_provider(
        world, clock=clock, extra={option: "10m", "disable-dry-run": "1"}
    )
    calls = count_calls(provider.clients.ec2, operation)
    default = configured_provider(world, clock=clock, extra={"disable-dry-run": "1"})
    default_calls = count_calls(default.clients.ec2, operation)
    nc = node_class()
    for _ in range(5):  # 0, 2, 4, 6, 8 minutes
        assert provider.node_class_status(nc).ready
        assert default.node_class_status(nc).ready
        clock.advance(timedelta(minutes=2))
    assert len(calls) == 1
    assert len(default_calls) == 5  # the one-minute default
    provider.node_class_status(nc)  # 10 minutes after the first
    assert len(calls) == 2
