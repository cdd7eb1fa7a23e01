"""Capacity reservations (moto has no DescribeCapacityReservations: answered by a hook)
become reserved offerings with a Reservation, and launches target them."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL
from nodewright.plugin.errors import InsufficientCapacityError
from nodewright.testing import launched_instance
from nodewright_aws import labels as L
from nodewright_aws.cloudprovider import AWSProvider
from providers.aws.tests.aws_helpers import (
    World,
    configured_provider,
    describe,
    node_class,
    request_for,
)

RESERVATION = "cr-0123456789abcdef0"


def with_reservation(provider: AWSProvider, available: int) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def answer(params: dict[str, Any], **_: Any) -> Any:
        seen.append(params)
        return AWSResponse("", 200, HTTPHeaders(), None), {
            "CapacityReservations": [
                {
                    "CapacityReservationId": RESERVATION,
                    "InstanceType": "m5.large",
                    "AvailabilityZone": "us-west-2b",
                    "InstanceMatchCriteria": "targeted",
                    "OwnerId": "123456789012",
                    "State": "active",
                    "AvailableInstanceCount": available,
                },
                {
                    "CapacityReservationId": "cr-expired",
                    "InstanceType": "m5.large",
                    "AvailabilityZone": "us-west-2a",
                    "State": "expired",
                    "AvailableInstanceCount": 5,
                },
            ]
        }

    provider.clients.ec2.meta.events.register(
        "before-call.ec2.DescribeCapacityReservations", answer
    )
    return seen


def test_reservations_become_reserved_offerings(world: World) -> None:
    provider = configured_provider(world)
    with_reservation(provider, available=2)
    nc = node_class(capacityReservationSelectorTerms=[{"id": RESERVATION}])
    readiness = provider.node_class_status(nc)
    assert [r["id"] for r in readiness.status["capacity_reservations"]] == [RESERVATION]
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    (reserved,) = [o for o in offerings if o.capacity_type == "reserved"]
    assert reserved.zone == "us-west-2b"
    assert reserved.reservation is not None
    assert (reserved.reservation.id, reserved.reservation.label, reserved.reservation.capacity) == (
        RESERVATION,
        L.CAPACITY_RESERVATION_ID,
        2,
    )
    assert reserved.labels[L.CAPACITY_RESERVATION_ID] == RESERVATION
    cheapest_other = min(o.price for o in offerings if o.capacity_type != "reserved")
    assert reserved.price < cheapest_other


def test_a_full_reservation_is_unavailable(world: World) -> None:
    provider = configured_provider(world)
    with_reservation(provider, available=0)
    nc = node_class(capacityReservationSelectorTerms=[{"tags": {"team": "a"}}])
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    assert [o.available for o in offerings if o.capacity_type == "reserved"] == [False]


def test_launch_prefers_the_reservation_and_targets_it(world: World) -> None:
    provider = configured_provider(world)
    with_reservation(provider, available=1)
    nc = node_class(capacityReservationSelectorTerms=[{"id": RESERVATION}])
    fleets: list[dict[str, Any]] = []
    provider.clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **_: fleets.append(dict(params))
    )
    request = request_for(
        provider, nc, "claim-reserved", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])]
    )
    instance = launched_instance(provider.launch(request))
    assert instance.capacity_type == "reserved"
    assert instance.zone == "us-west-2b"
    assert instance.labels[L.CAPACITY_RESERVATION_ID] == RESERVATION
    assert fleets[0]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    template = fleets[0]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"][
        "LaunchTemplateName"
    ]
    data = world.ec2().describe_launch_template_versions(LaunchTemplateName=template)[
        "LaunchTemplateVersions"
    ][0]["LaunchTemplateData"]
    assert (
        data["CapacityReservationSpecification"]["CapacityReservationTarget"][
            "CapacityReservationId"
        ]
        == RESERVATION
    )
    tags = {
        t["Key"]: t["Value"]
        for t in describe(world, instance.provider_id.rsplit("/", 1)[-1])["Tags"]
    }
    assert tags[L.CAPACITY_RESERVATION_ID] == RESERVATION
    assert provider.get(instance.provider_id).capacity_type == "reserved"


def test_a_reservation_out_of_room_at_launch_is_insufficient_capacity(world: World) -> None:
    provider = configured_provider(world)
    with_reservation(provider, available=1)
    nc = node_class(capacityReservationSelectorTerms=[{"id": RESERVATION}])
    request = request_for(
        provider,
        nc,
        "claim-full",
        [(INSTANCE_TYPE_LABEL, "In", ["m5.large"]), (CAPACITY_TYPE_LABEL, "In", ["reserved"])],
    )

    def exceeded(**_: Any) -> Any:
        return AWSResponse("", 200, HTTPHeaders(), None), {
            "Instances": [],
            "Errors": [
                {
                    "ErrorCode": "ReservationCapacityExceeded",
                    "ErrorMessage": "full",
                    "LaunchTemplateAndOverrides": {
                        "Overrides": {"InstanceType": "m5.large", "AvailabilityZone": "us-west-2b"}
                    },
                }
            ],
        }

    provider.clients.ec2.meta.events.register("before-call.ec2.CreateFleet", exceeded)
    with pytest.raises(InsufficientCapacityError) as raised:
        provider.launch(request)
    assert raised.value.offerings == (("m5.large", "us-west-2b", "reserved"),)
