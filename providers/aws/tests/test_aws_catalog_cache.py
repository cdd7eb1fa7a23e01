"""The AWS catalog between refreshes: a class's instance types and offerings are built once
and reused while their inputs hold; a changed input (a price, an offering without capacity,
the class's kubelet, a new subnet's zone) shows in the next launch, and only what it touches
is built again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from nodewright.clock import SimulatedClock
from nodewright.testing import launched_instance
from nodewright_aws import labels as L
from nodewright_aws import pricing
from nodewright_aws.cloudprovider import AWSProvider
from nodewright_aws.nodeclass import EC2NodeClass
from providers.aws.tests.aws_helpers import (
    DISCOVERY,
    World,
    configured_provider,
    node_class_manifest,
    request_for,
)
from providers.aws.tests.test_aws_launch import FleetSpy

#: Well past the catalog's five minutes and every resolution's minute.
REFRESH = timedelta(minutes=5)
TWO_TYPES = (INSTANCE_TYPE_LABEL, "In", ["c5.large", "m5.large"])
ON_DEMAND = (CAPACITY_TYPE_LABEL, "In", ["on-demand"])


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock()


@pytest.fixture
def provider(world: World, clock: SimulatedClock) -> AWSProvider:
    return configured_provider(world, clock=clock)


def a_class(generation: int = 1, **spec: Any) -> EC2NodeClass:
    manifest = node_class_manifest(**spec)
    manifest["metadata"]["generation"] = generation
    return EC2NodeClass.model_validate(manifest)


def builds(provider: AWSProvider) -> tuple[int, int]:
    """(instance types built, instance types whose offerings were made) so far."""
    return provider.instance_type_provider.builds, provider.offering_provider.builds


def refresh(provider: AWSProvider, nc: EC2NodeClass) -> dict[str, Any]:
    """What the core's catalog refresh asks: the types, then their offerings."""
    types = provider.instance_types(nc)
    return {"types": types, "offerings": provider.offerings(nc, types)}


def launched_type(provider: AWSProvider, nc: EC2NodeClass, name: str, *wanted: Any) -> str:
    instance = launched_instance(provider.launch(request_for(provider, nc, name, wanted)))
    return instance.instance_type


def test_an_unchanged_refresh_builds_nothing_and_answers_the_same(
    provider: AWSProvider, clock: SimulatedClock
) -> None:
    nc = a_class()
    first = refresh(provider, nc)
    built = builds(provider)
    assert built[0] > 0
    assert built[1] > 0
    clock.advance(REFRESH)  # subnets, AMIs and the placement group are read again: unchanged
    again = refresh(provider, a_class())
    assert builds(provider) == built
    assert again == first


def test_a_spec_change_that_shapes_no_type_builds_nothing(
    provider: AWSProvider, clock: SimulatedClock
) -> None:
    refresh(provider, a_class())
    built = builds(provider)
    clock.advance(REFRESH)
    refresh(provider, a_class(generation=2, tags={"team": "web"}))
    assert builds(provider) == built


def test_a_price_change_shows_in_the_next_launch(
    provider: AWSProvider, clock: SimulatedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    nc = a_class()
    assert launched_type(provider, nc, "cheapest-first", TWO_TYPES, ON_DEMAND) == "c5.large"
    built = builds(provider)
    # The next Pricing API read (every 12 hours) finds c5.large dearer than m5.large.
    monkeypatch.setattr(pricing, "fetch_on_demand", lambda *_: {"c5.large": 0.5})
    clock.advance(pricing.PRICING_REFRESH)
    provider.reconcile(clock.now())
    assert launched_type(provider, nc, "after-the-change", TWO_TYPES, ON_DEMAND) == "m5.large"
    types_built, offerings_made = builds(provider)
    assert types_built == built[0], "a price builds no instance type again"
    assert offerings_made > built[1]


def test_an_offering_without_capacity_is_left_out_of_the_next_launch(
    provider: AWSProvider,
) -> None:
    nc = a_class()
    spy = FleetSpy(provider)
    zone = (ZONE_LABEL, "In", ["us-west-2a"])
    refresh(provider, nc)  # the catalog is built before the launch that finds no capacity
    spy.ice = {("c5.large", "us-west-2a")}
    provider.launch(request_for(provider, nc, "finds-no-c5", [TWO_TYPES, ON_DEMAND, zone]))
    built = builds(provider)
    request = request_for(provider, nc, "next-one", [TWO_TYPES, ON_DEMAND, zone])
    assert [t.name for t in request.instance_types] == ["m5.large"]
    assert launched_instance(provider.launch(request)).instance_type == "m5.large"
    assert builds(provider) == (built[0], built[1] + 1), "only c5.large's offerings again"


def test_a_kubelet_max_pods_change_shows_in_the_next_launch(
    provider: AWSProvider, clock: SimulatedClock
) -> None:
    m5 = (INSTANCE_TYPE_LABEL, "In", ["m5.large"])
    first = launched_instance(provider.launch(request_for(provider, a_class(), "before", [m5])))
    assert first.capacity["pods"] == 29_000  # ENI-limited
    built = builds(provider)
    clock.advance(REFRESH)
    nc = a_class(generation=2, kubelet={"maxPods": 12})
    listed = {t.name: t for t in provider.instance_types(nc)}
    assert listed["m5.large"].capacity["pods"] == 12_000
    later = launched_instance(provider.launch(request_for(provider, nc, "after", [m5])))
    assert later.capacity["pods"] == 12_000
    assert builds(provider)[0] > built[0]


def test_a_new_subnet_zone_shows_in_the_next_launch(
    world: World, provider: AWSProvider, clock: SimulatedClock
) -> None:
    nc = a_class()
    ec2 = world.ec2()
    zones = ec2.describe_availability_zones(ZoneNames=["us-west-2d"])["AvailabilityZones"]
    # Pods may ask for the zone by its ID, which the instance types carry.
    new_zone = (L.ZONE_ID, "In", [zones[0]["ZoneId"]])
    assert request_for(provider, nc, "nowhere-yet", [new_zone]).instance_types == ()
    built = builds(provider)
    vpc = ec2.describe_subnets(SubnetIds=[world.subnets["us-west-2a"]])["Subnets"][0]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.9.0/24", AvailabilityZone="us-west-2d")
    subnet_id = subnet["Subnet"]["SubnetId"]
    ec2.create_tags(
        Resources=[subnet_id], Tags=[{"Key": k, "Value": v} for k, v in DISCOVERY.items()]
    )
    clock.advance(REFRESH)
    instance = launched_instance(
        provider.launch(request_for(provider, nc, "in-the-new-zone", [new_zone]))
    )
    assert instance.zone == "us-west-2d"
    assert builds(provider)[0] == built[0], "a zone puts new zone IDs on the built types"
