"""placementGroupSelector: resolution (moto has no DescribePlacementGroups: a botocore hook
answers it), readiness, the instance types a group's strategy admits, partition offerings,
the launch template's placement, the NodeClaim's labels, the partition EC2 chose filled in
at registration, and PlacementGroupDrift."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import botocore.exceptions
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL
from nodewright.api.meta import ObjectMeta
from nodewright.clock import SimulatedClock
from nodewright.plugin import TemporaryProviderError
from nodewright.testing import launched_instance
from nodewright_aws import labels as L
from nodewright_aws.cloudprovider import AWSProvider
from nodewright_aws.launch import static_hash
from providers.aws.tests.aws_helpers import World, configured_provider, node_class, request_for

GROUPS: dict[str, dict[str, Any]] = {
    "hpc": {"GroupId": "pg-0a1b2c3d", "Strategy": "cluster"},
    "racks": {"GroupId": "pg-0f0e0d0c", "Strategy": "partition", "PartitionCount": 3},
}
TYPES = "m5.large,t3.large,c5.large"


class PlacementGroups:
    """Answers DescribePlacementGroups from ``GROUPS`` (by name or ID), records the calls."""

    def __init__(self, provider: AWSProvider, groups: Mapping[str, Mapping[str, Any]]) -> None:
        self.groups = groups
        self.calls: list[dict[str, Any]] = []
        self.failing = False
        events = provider.clients.ec2.meta.events
        events.register("provide-client-params.ec2.DescribePlacementGroups", self._record)
        events.register("before-call.ec2.DescribePlacementGroups", self._answer)

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.calls.append(dict(params))

    def _answer(self, **_: Any) -> Any:
        params = self.calls[-1]
        if self.failing:
            raise botocore.exceptions.ClientError(
                {"Error": {"Code": "UnauthorizedOperation", "Message": "not allowed"}},
                "DescribePlacementGroups",
            )
        found = [
            {"GroupName": name, "State": "available", **group}
            for name, group in self.groups.items()
            if name in params.get("GroupNames", [])
            or group["GroupId"] in params.get("GroupIds", [])
        ]
        if not found:
            raise botocore.exceptions.ClientError(
                {"Error": {"Code": "InvalidPlacementGroup.Unknown", "Message": "unknown"}},
                "DescribePlacementGroups",
            )
        return AWSResponse("", 200, HTTPHeaders(), None), {"PlacementGroups": found}


def provider_with_groups(
    world: World, clock: SimulatedClock | None = None
) -> tuple[AWSProvider, PlacementGroups]:
    provider = configured_provider(world, clock=clock, extra={"instance-types": TYPES})
    return provider, PlacementGroups(provider, GROUPS)


def template_data(world: World, provider: AWSProvider) -> dict[str, Any]:
    (name,) = provider.launch_templates.templates
    versions = world.ec2().describe_launch_template_versions(LaunchTemplateName=name)
    return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])


def test_a_cluster_group_admits_only_types_that_support_it_and_launches_into_it(
    world: World,
) -> None:
    provider, groups = provider_with_groups(world)
    nc = node_class(placementGroupSelector={"name": "hpc"})
    assert provider.node_class_status(nc).ready
    assert groups.calls[0]["GroupNames"] == ["hpc"]
    assert groups.calls[0]["Filters"] == [{"Name": "state", "Values": ["available"]}]
    # t3 instances cannot join a cluster placement group (EC2's PlacementGroupInfo).
    assert {t.name for t in provider.instance_types(nc)} == {"m5.large", "c5.large"}
    assert {t.name for t in provider.instance_types(node_class())} == set(TYPES.split(","))
    instance = launched_instance(
        provider.launch(request_for(provider, nc, "a", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])]))
    )
    assert template_data(world, provider)["Placement"] == {"GroupId": "pg-0a1b2c3d"}
    assert instance.labels[L.PLACEMENT_GROUP_ID] == "pg-0a1b2c3d"
    assert L.PLACEMENT_GROUP_PARTITION not in instance.labels


def test_a_group_is_asked_again_only_after_a_minute(world: World) -> None:
    clock = SimulatedClock()
    provider, groups = provider_with_groups(world, clock)
    nc = node_class(placementGroupSelector={"id": "pg-0a1b2c3d"})
    provider.node_class_status(nc)
    provider.instance_types(nc)
    assert [c["GroupIds"] for c in groups.calls] == [["pg-0a1b2c3d"]]
    clock.advance(timedelta(seconds=60))
    provider.instance_types(nc)
    assert len(groups.calls) == 2


def test_an_unknown_or_unreadable_group_makes_the_class_not_ready(world: World) -> None:
    provider, groups = provider_with_groups(world)
    readiness = provider.node_class_status(node_class(placementGroupSelector={"name": "nope"}))
    assert (readiness.ready, readiness.reason) == (False, "PlacementGroupNotFound")
    assert "'nope'" in readiness.message
    assert "spec.placementGroupSelector" in readiness.message
    groups.failing = True
    readiness = provider.node_class_status(node_class(placementGroupSelector={"name": "other"}))
    assert (readiness.ready, readiness.reason) == (False, "PlacementGroupResolutionFailed")
    assert "UnauthorizedOperation" in readiness.message


def test_a_group_found_once_stands_in_while_ec2_cannot_answer(world: World) -> None:
    clock = SimulatedClock()
    provider, groups = provider_with_groups(world, clock)
    nc = node_class(placementGroupSelector={"name": "hpc"})
    assert provider.node_class_status(nc).ready
    groups.failing = True
    clock.advance(timedelta(seconds=120))
    assert provider.node_class_status(nc).ready
    clock.advance(timedelta(hours=24))
    assert provider.node_class_status(nc).reason == "PlacementGroupResolutionFailed"


def test_a_partition_group_offers_each_partition_and_launches_into_the_lowest_asked(
    world: World,
) -> None:
    provider, _ = provider_with_groups(world)
    nc = node_class(placementGroupSelector={"name": "racks"})
    (m5,) = [t for t in provider.instance_types(nc) if t.name == "m5.large"]
    assert m5.requirements[L.PLACEMENT_GROUP_PARTITION].values == {"1", "2", "3"}
    offerings = provider.offerings(nc, [m5])["m5.large"]
    plain = provider.offerings(node_class(), [m5])["m5.large"]
    assert len(offerings) == 3 * len(plain)
    assert {o.labels[L.PLACEMENT_GROUP_PARTITION] for o in offerings} == {"1", "2", "3"}
    spy: list[dict[str, Any]] = []
    provider.clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **_: spy.append(params)
    )
    request = request_for(
        provider,
        nc,
        "a",
        [
            (INSTANCE_TYPE_LABEL, "In", ["m5.large"]),
            (CAPACITY_TYPE_LABEL, "In", ["on-demand"]),
            (L.PLACEMENT_GROUP_PARTITION, "In", ["3", "2"]),
        ],
    )
    instance = launched_instance(provider.launch(request))
    assert template_data(world, provider)["Placement"] == {
        "GroupId": "pg-0f0e0d0c",
        "PartitionNumber": 2,
    }
    overrides = spy[0]["LaunchTemplateConfigs"][0]["Overrides"]
    zones = [o["AvailabilityZone"] for o in overrides]
    assert len(zones) == len(set(zones))  # one override per zone, not one per partition
    assert instance.labels[L.PLACEMENT_GROUP_ID] == "pg-0f0e0d0c"
    assert instance.labels[L.PLACEMENT_GROUP_PARTITION] == "2"


def claim_for(provider: AWSProvider, world: World, nc: Any) -> NodeClaim:
    instance = launched_instance(
        provider.launch(request_for(provider, nc, "a", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])]))
    )
    instance_id = instance.provider_id.rsplit("/", 1)[-1]
    world.ec2().modify_instance_attribute(InstanceId=instance_id, Groups=[world.security_group])
    claim = NodeClaim(
        metadata=ObjectMeta(
            name="a", labels=dict(instance.labels), annotations=dict(instance.annotations)
        )
    )
    claim.status.provider_id = instance.provider_id
    claim.status.image_id = instance.image_id
    return claim


def test_a_nodeclaim_outside_the_class_group_has_drifted(world: World) -> None:
    provider, groups = provider_with_groups(world)
    in_group = node_class(placementGroupSelector={"name": "hpc"})
    claim = claim_for(provider, world, in_group)
    assert provider.is_drifted(claim, in_group) is None
    # The selector is hashed (as in Karpenter): pointing it elsewhere is also NodeClassDrift.
    other = node_class(placementGroupSelector={"name": "racks"})
    assert static_hash(other) != static_hash(in_group)
    claim.metadata.annotations.clear()  # leave the static hash out: the group decides
    assert provider.is_drifted(claim, other) == "PlacementGroupDrift"
    assert provider.is_drifted(claim, node_class()) == "PlacementGroupDrift"
    # A class whose group EC2 cannot read now gives no verdict.
    groups.failing = True
    unreadable = node_class(placementGroupSelector={"name": "elsewhere"})
    assert provider.is_drifted(claim, unreadable) is None


def test_a_nodeclaim_without_a_group_is_not_drifted_by_a_class_without_one(world: World) -> None:
    provider, _ = provider_with_groups(world)
    nc = node_class()
    claim = claim_for(provider, world, nc)
    assert L.PLACEMENT_GROUP_ID not in claim.metadata.labels
    assert provider.is_drifted(claim, nc) is None


def test_a_node_in_a_partition_ec2_chose_registers_once_ec2_reports_it(world: World) -> None:
    # Karpenter's PlacementGroupRegistrationHook: launched into a partition group without
    # naming a partition, the NodeClaim carries the partition label empty; its Node registers
    # with the partition a fresh DescribeInstances gives, and waits while it gives none.
    provider, _ = provider_with_groups(world)
    nc = node_class(placementGroupSelector={"name": "racks"})
    claim = claim_for(provider, world, nc)
    assert claim.metadata.labels[L.PLACEMENT_GROUP_ID] == "pg-0f0e0d0c"
    assert claim.metadata.labels[L.PLACEMENT_GROUP_PARTITION] == ""
    instance_id = (claim.status.provider_id or "").rsplit("/", 1)[-1]
    with pytest.raises(TemporaryProviderError) as waiting:
        provider.node_labels(claim, provider.get(claim.status.provider_id or ""))
    assert str(waiting.value) == (
        f"instance {instance_id} in placement group pg-0f0e0d0c has no partition number yet"
    )

    def report_partition(parsed: dict[str, Any], **_: Any) -> None:
        for reservation in parsed.get("Reservations", []):
            for described in reservation.get("Instances", []):
                described.setdefault("Placement", {}).update(
                    {"GroupId": "pg-0f0e0d0c", "PartitionNumber": 2}
                )

    provider.clients.ec2.meta.events.register("after-call.ec2.DescribeInstances", report_partition)
    assert provider.node_labels(claim, provider.get(claim.status.provider_id or "")) == {
        L.PLACEMENT_GROUP_PARTITION: "2"
    }


def test_only_a_partition_left_to_ec2_is_asked_for_at_registration(world: World) -> None:
    provider, _ = provider_with_groups(world)
    in_cluster_group = claim_for(
        provider, world, node_class(placementGroupSelector={"name": "hpc"})
    )
    assert L.PLACEMENT_GROUP_PARTITION not in in_cluster_group.metadata.labels
    plain = claim_for(provider, world, node_class())
    for claim in (in_cluster_group, plain):
        assert provider.node_labels(claim, provider.get(claim.status.provider_id or "")) is None
