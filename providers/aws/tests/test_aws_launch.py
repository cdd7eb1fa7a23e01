"""Launch through CreateFleet on moto: request shape, tags, providerID, launch templates,
insufficient capacity (injected with botocore event hooks), idempotency, get/list/delete."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import botocore.exceptions
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from nodewright.clock import SimulatedClock
from nodewright.plugin.errors import InstanceNotFoundError, InsufficientCapacityError, LaunchError
from nodewright.plugin.model import LaunchResult
from nodewright.testing import launched_instance
from nodewright_aws import labels as L
from nodewright_aws.cloudprovider import AWSProvider
from providers.aws.tests.aws_helpers import (
    CLUSTER,
    ZONES,
    World,
    configured_provider,
    describe,
    node_class,
    request_for,
    tags_of,
)


class FleetSpy:
    """Records CreateFleet inputs; drops ICE'd overrides and reports them as fleet errors
    (moto never returns ``Errors``), like Karpenter's fake ``InsufficientCapacityPools``."""

    def __init__(self, provider: AWSProvider) -> None:
        self.calls: list[dict[str, Any]] = []
        self.ice: set[tuple[str, str]] = set()
        self.dropped: list[dict[str, Any]] = []
        self.nothing_left = False
        events = provider.clients.ec2.meta.events
        events.register("provide-client-params.ec2.CreateFleet", self._params)
        events.register("before-call.ec2.CreateFleet", self._short_circuit)
        events.register("after-call.ec2.CreateFleet", self._errors)

    def _params(self, params: dict[str, Any], **_: Any) -> None:
        self.calls.append({**params})
        self.dropped = []
        for config in params["LaunchTemplateConfigs"]:
            kept = []
            for override in config["Overrides"]:
                if (override["InstanceType"], override["AvailabilityZone"]) in self.ice:
                    self.dropped.append(override)
                else:
                    kept.append(override)
            config["Overrides"] = kept
        params["LaunchTemplateConfigs"] = [
            c for c in params["LaunchTemplateConfigs"] if c["Overrides"]
        ]
        self.nothing_left = not params["LaunchTemplateConfigs"]

    def _error_list(self) -> list[dict[str, Any]]:
        return [
            {
                "ErrorCode": "InsufficientInstanceCapacity",
                "ErrorMessage": "We currently do not have sufficient capacity",
                "LaunchTemplateAndOverrides": {"Overrides": o},
            }
            for o in self.dropped
        ]

    def _short_circuit(self, **_: Any) -> Any:
        if not self.nothing_left:
            return None
        return AWSResponse("", 200, HTTPHeaders(), None), {
            "Instances": [],
            "Errors": self._error_list(),
        }

    def _errors(self, parsed: dict[str, Any], **_: Any) -> None:
        if self.dropped:
            parsed["Errors"] = self._error_list()


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock()


@pytest.fixture
def provider(world: World, clock: SimulatedClock) -> AWSProvider:
    return configured_provider(world, clock=clock)


@pytest.fixture
def spy(provider: AWSProvider) -> FleetSpy:
    return FleetSpy(provider)


def instance_id(provider_id: str) -> str:
    return provider_id.rsplit("/", 1)[-1]


def test_on_demand_launch_shape_tags_and_provider_id(
    world: World, provider: AWSProvider, spy: FleetSpy
) -> None:
    nc = node_class(tags={"team": "payments"})
    request = request_for(
        provider,
        nc,
        "claim-1",
        [
            (CAPACITY_TYPE_LABEL, "In", ["on-demand"]),
            (INSTANCE_TYPE_LABEL, "In", ["m5.large", "c5.large"]),
        ],
    )
    instance = launched_instance(provider.launch(request))
    (call,) = spy.calls
    assert call["Type"] == "instant"
    assert call["TargetCapacitySpecification"] == {
        "TotalTargetCapacity": 1,
        "DefaultTargetCapacityType": "on-demand",
    }
    assert call["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    overrides = [o for c in call["LaunchTemplateConfigs"] for o in c["Overrides"]]
    assert {(o["InstanceType"], o["AvailabilityZone"]) for o in overrides} == {
        (t, z) for t in ("m5.large", "c5.large") for z in ZONES
    }
    assert {o["SubnetId"] for o in overrides} == set(world.subnets.values())
    assert instance.provider_id == f"aws:///{instance.zone}/{instance_id(instance.provider_id)}"
    assert instance.capacity_type == "on-demand"
    assert instance.labels[ZONE_LABEL] == instance.zone
    assert instance.labels[L.ZONE_ID].startswith("usw2-az")
    assert instance.instance_type == "c5.large"  # the cheaper one (moto takes the first)
    tags = tags_of(describe(world, instance_id(instance.provider_id)))
    assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
    assert tags["eks:eks-cluster-name"] == CLUSTER
    assert tags["karpenter.sh/nodepool"] == "default"
    assert tags["karpenter.sh/nodeclaim"] == "claim-1"
    assert tags["karpenter.k8s.aws/ec2nodeclass"] == "default"
    assert tags["team"] == "payments"
    assert instance.allocatable["memory"] > 0
    # The kubelet registers under the private DNS name EC2 reports (moto writes the
    # us-east-1 form, ip-<a-b-c-d>.ec2.internal, for every region).
    description = describe(world, instance_id(instance.provider_id))
    assert instance.node_name == description["PrivateDnsName"]
    ip = description["PrivateIpAddress"].replace(".", "-")
    assert re.fullmatch(rf"ip-{ip}\.(ec2|us-west-2\.compute)\.internal", instance.node_name)


def test_spot_uses_price_capacity_optimized(provider: AWSProvider, spy: FleetSpy) -> None:
    request = request_for(
        provider, node_class(), "claim-spot", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])]
    )
    instance = launched_instance(provider.launch(request))
    assert spy.calls[0]["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert spy.calls[0]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    assert instance.capacity_type == "spot"
    assert provider.get(instance.provider_id).capacity_type == "spot"


def test_launch_template_is_deterministic_and_carries_the_node_class(
    world: World, provider: AWSProvider, spy: FleetSpy
) -> None:
    nc = node_class(
        metadataOptions={"httpTokens": "required", "httpPutResponseHopLimit": 2},
        associatePublicIPAddress=False,
    )
    requirements = [
        (INSTANCE_TYPE_LABEL, "In", ["m5.large"]),
        (CAPACITY_TYPE_LABEL, "In", ["on-demand"]),
    ]
    provider.launch(request_for(provider, nc, "a", requirements))
    provider.launch(request_for(provider, nc, "b", requirements))
    names = {
        c["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
        for c in spy.calls
    }
    assert len(names) == 1
    (name,) = names
    assert name.startswith("karpenter.k8s.aws/")
    ec2 = world.ec2()
    data = ec2.describe_launch_template_versions(LaunchTemplateName=name)["LaunchTemplateVersions"][
        0
    ]["LaunchTemplateData"]
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 2
    assert data["MetadataOptions"]["InstanceMetadataTags"] == "disabled"
    assert data["NetworkInterfaces"][0]["Groups"] == [world.security_group]
    assert data["NetworkInterfaces"][0]["AssociatePublicIpAddress"] is False
    assert data["IamInstanceProfile"]["Name"].startswith(f"{CLUSTER}_")
    assert data["ImageId"] == world.x86_ami
    assert "maxPods: 29" in base64.b64decode(data["UserData"]).decode()


def test_idle_launch_templates_are_deleted(
    world: World, provider: AWSProvider, clock: SimulatedClock, spy: FleetSpy
) -> None:
    provider.launch(
        request_for(provider, node_class(), "a", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])])
    )
    name = spy.calls[0]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"][
        "LaunchTemplateName"
    ]
    provider.reconcile(clock.now())
    ec2 = world.ec2()
    assert ec2.describe_launch_templates(LaunchTemplateNames=[name])["LaunchTemplates"]
    clock.advance(timedelta(minutes=2))
    provider.reconcile(clock.now())
    with pytest.raises(botocore.exceptions.ClientError, match="NotFound"):
        ec2.describe_launch_templates(LaunchTemplateNames=[name])


def test_partial_insufficient_capacity_launches_elsewhere_and_marks_the_offering(
    provider: AWSProvider, spy: FleetSpy
) -> None:
    nc = node_class()
    request = request_for(
        provider,
        nc,
        "claim-ice",
        [(INSTANCE_TYPE_LABEL, "In", ["c5.large", "m5.large"]), (ZONE_LABEL, "In", ["us-west-2a"])],
    )
    spy.ice = {("c5.large", "us-west-2a")}
    result = provider.launch(request)
    assert isinstance(result, LaunchResult), "the ICE'd offering is reported to the core"
    assert result.instance.instance_type == "m5.large"
    assert result.unavailable_offerings == (("c5.large", "us-west-2a", "spot"),)
    assert result.unavailable_ttl == timedelta(minutes=3)
    offerings = provider.offerings(nc, provider.instance_types(nc))
    marked = [
        o for o in offerings["c5.large"] if o.zone == "us-west-2a" and o.capacity_type == "spot"
    ]
    assert [o.available for o in marked] == [False]


def test_insufficient_capacity_everywhere_names_the_offerings(
    provider: AWSProvider, spy: FleetSpy
) -> None:
    request = request_for(
        provider,
        node_class(),
        "claim-none",
        [(INSTANCE_TYPE_LABEL, "In", ["m5.large"]), (CAPACITY_TYPE_LABEL, "In", ["spot"])],
    )
    spy.ice = {("m5.large", z) for z in ZONES}
    with pytest.raises(InsufficientCapacityError) as raised:
        provider.launch(request)
    assert set(raised.value.offerings) == {("m5.large", z, "spot") for z in ZONES}
    assert raised.value.ttl == timedelta(minutes=3)
    assert provider.list_instances() == []


def test_unauthorized_launch_is_a_launch_error(provider: AWSProvider) -> None:
    def deny(**_: Any) -> None:
        raise botocore.exceptions.ClientError(
            {"Error": {"Code": "UnauthorizedOperation", "Message": "not authorized"}}, "CreateFleet"
        )

    provider.clients.ec2.meta.events.register("before-call.ec2.CreateFleet", deny)
    request = request_for(
        provider, node_class(), "claim-denied", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])]
    )
    with pytest.raises(LaunchError) as raised:
        provider.launch(request)
    assert raised.value.reason == "Unauthorized"


def test_a_restarted_provider_adopts_the_instance_of_the_same_node_claim(
    world: World, provider: AWSProvider, clock: SimulatedClock
) -> None:
    nc = node_class()
    first = launched_instance(
        provider.launch(request_for(provider, nc, "claim-adopt", uid="uid-42"))
    )
    restarted = configured_provider(world, clock=clock)
    again = launched_instance(
        restarted.launch(request_for(restarted, nc, "claim-adopt", uid="uid-42"))
    )
    assert again.provider_id == first.provider_id
    assert [i.provider_id for i in restarted.list_instances() if i.node_claim == "claim-adopt"] == [
        first.provider_id
    ]


def test_list_only_shows_this_clusters_instances(world: World, provider: AWSProvider) -> None:
    ec2 = world.ec2()
    foreign = ec2.run_instances(
        ImageId=world.x86_ami,
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": "karpenter.sh/nodepool", "Value": "default"},
                    {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "default"},
                    {"Key": "eks:eks-cluster-name", "Value": "other-cluster"},
                ],
            }
        ],
    )["Instances"][0]["InstanceId"]
    mine = launched_instance(provider.launch(request_for(provider, node_class(), "claim-mine")))
    listed = {instance_id(i.provider_id) for i in provider.list_instances()}
    assert instance_id(mine.provider_id) in listed
    assert foreign not in listed


def test_delete_terminates_then_reports_not_found(world: World, provider: AWSProvider) -> None:
    instance = launched_instance(
        provider.launch(request_for(provider, node_class(), "claim-delete"))
    )
    provider.delete(instance.provider_id)
    assert describe(world, instance_id(instance.provider_id))["State"]["Name"] in (
        "shutting-down",
        "terminated",
    )
    with pytest.raises(InstanceNotFoundError):
        provider.delete(instance.provider_id)
    with pytest.raises(InstanceNotFoundError):
        provider.get(instance.provider_id)
    with pytest.raises(InstanceNotFoundError):
        provider.get("aws:///us-west-2a/i-0000000000000dead")


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def test_throttling_is_retried_with_backoff(provider: AWSProvider) -> None:
    throttled = {"left": 1, "sent": 0}
    body = (
        b"<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
        b"<Message>Request limit exceeded.</Message></Error></Errors>"
        b"<RequestID>r</RequestID></Response>"
    )

    def throttle(**_: Any) -> AWSResponse | None:
        throttled["sent"] += 1
        if throttled["left"]:
            throttled["left"] -= 1
            return AWSResponse("", 503, HTTPHeaders(), _Body(body))
        return None

    provider.clients.ec2.meta.events.register("before-send.ec2.DescribeInstances", throttle)
    assert provider.list_instances() == []
    assert throttled["sent"] == 2


def test_without_a_region_list_is_empty_and_makes_no_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    from nodewright.plugin.model import ProviderContext

    provider = AWSProvider()
    provider.configure(ProviderContext(cluster=None, clock=SimulatedClock(), options={}))
    assert provider.list_instances() == []
    assert provider.reconcile(SimulatedClock().now()) > timedelta(0)
