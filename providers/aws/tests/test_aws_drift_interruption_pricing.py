"""Drift (static hash, AMI, security groups, subnets), SQS interruption events, and
prices from the Pricing API (botocore Stubber) and DescribeSpotPriceHistory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.stub import ANY, Stubber

from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import INSTANCE_TYPE_LABEL
from nodewright.api.meta import ObjectMeta
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.testing import launched_instance, make_node_claim
from nodewright_aws.cloudprovider import AWSProvider
from nodewright_aws.interruption import (
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    parse_message,
)
from nodewright_aws.launch import static_hash
from nodewright_aws.nodeclass import EC2NodeClass
from providers.aws.tests.aws_helpers import (
    World,
    al2023_parameter,
    configured_provider,
    describe,
    node_class,
    request_for,
    seed_ssm,
)


def launched_claim(provider: AWSProvider, nc: EC2NodeClass, world: World) -> NodeClaim:
    instance = launched_instance(
        provider.launch(
            request_for(provider, nc, "claim-drift", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])])
        )
    )
    # moto applies the VPC's default group, not the launch template's: align it.
    instance_id = instance.provider_id.rsplit("/", 1)[-1]
    world.ec2().modify_instance_attribute(InstanceId=instance_id, Groups=[world.security_group])
    # The core writes Instance.annotations onto the NodeClaim when the launch returns.
    claim = NodeClaim(
        metadata=ObjectMeta(name="claim-drift", annotations=dict(instance.annotations))
    )
    claim.status.provider_id = instance.provider_id
    claim.status.image_id = instance.image_id
    return claim


def bumped(nc: EC2NodeClass, **changes: Any) -> EC2NodeClass:
    manifest = nc.to_dict()
    manifest["spec"].update(changes)
    manifest["metadata"]["generation"] = (nc.metadata.generation or 1) + 1
    return EC2NodeClass.model_validate(manifest)


def test_a_fresh_instance_is_not_drifted(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class()
    assert provider.is_drifted(launched_claim(provider, nc, world), nc) is None


def test_static_field_change_is_node_class_drift(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class()
    claim = launched_claim(provider, nc, world)
    assert provider.is_drifted(claim, bumped(nc, userData="echo changed")) == "NodeClassDrift"
    # Selector terms are not hashed: changing them alone is not NodeClassDrift.
    same = bumped(nc, subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "test-cluster"}}])
    assert provider.is_drifted(claim, same) is None


def test_the_hash_annotations_decide_static_drift(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class()
    claim = launched_claim(provider, nc, world)
    assert claim.metadata.annotations == {
        "karpenter.k8s.aws/ec2nodeclass-hash": static_hash(nc),
        "karpenter.k8s.aws/ec2nodeclass-hash-version": "nodewright-v1",
    }
    changed = bumped(nc, tags={"team": "payments"})
    assert provider.is_drifted(claim, changed) == "NodeClassDrift"
    # Another hash version means the hashing changed, not the class: not drift (Karpenter's
    # rule). A NodeClaim Karpenter launched (v6, its own hash) is therefore not replaced.
    claim.metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"] = "v6"
    assert provider.is_drifted(claim, changed) is None
    # No annotation (a NodeClaim from before hashing): not static drift either.
    claim.metadata.annotations.clear()
    assert provider.is_drifted(claim, changed) is None


def test_new_ami_release_is_ami_drift(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class()
    claim = launched_claim(provider, nc, world)
    images = world.ec2().describe_images(Owners=["amazon"])["Images"]
    newer = next(
        i["ImageId"]
        for i in images
        if i.get("Architecture") == "x86_64" and i["ImageId"] not in (world.x86_ami, world.gpu_ami)
    )
    seed_ssm(al2023_parameter("x86_64", "standard"), newer)
    assert provider.is_drifted(claim, bumped(nc)) == "AMIDrift"


def test_security_group_and_subnet_drift(world: World) -> None:
    provider = configured_provider(world)
    nc = node_class()
    claim = launched_claim(provider, nc, world)
    ec2 = world.ec2()
    vpc = describe(world, claim.status.provider_id.rsplit("/", 1)[-1])["VpcId"]  # type: ignore[union-attr]
    other = ec2.create_security_group(GroupName="other", Description="o", VpcId=vpc)["GroupId"]
    assert (
        provider.is_drifted(claim, bumped(nc, securityGroupSelectorTerms=[{"id": other}]))
        == "SecurityGroupDrift"
    )
    subnet = describe(world, claim.status.provider_id.rsplit("/", 1)[-1])["SubnetId"]  # type: ignore[union-attr]
    others = [s for s in world.subnets.values() if s != subnet]
    moved = bumped(nc, subnetSelectorTerms=[{"id": s} for s in others])
    moved.metadata.generation = 5
    assert provider.is_drifted(claim, moved) == "SubnetDrift"


def event(source: str, detail_type: str, detail: dict[str, Any]) -> str:
    return json.dumps(
        {
            "version": "0",
            "source": source,
            "detail-type": detail_type,
            "region": "us-west-2",
            "resources": [],
            "detail": detail,
        }
    )


def test_eventbridge_messages_are_parsed() -> None:
    spot = parse_message(
        event(
            "aws.ec2",
            "EC2 Spot Instance Interruption Warning",
            {"instance-id": "i-1", "instance-action": "terminate"},
        )
    )
    assert [(i.kind, i.instance_id) for i in spot] == [(SPOT_INTERRUPTION, "i-1")]
    rebalance = parse_message(
        event("aws.ec2", "EC2 Instance Rebalance Recommendation", {"instance-id": "i-2"})
    )
    assert [i.kind for i in rebalance] == [REBALANCE]
    stopping = parse_message(
        event(
            "aws.ec2",
            "EC2 Instance State-change Notification",
            {"instance-id": "i-3", "state": "stopping"},
        )
    )
    assert [i.kind for i in stopping] == [STATE_CHANGE]
    running = parse_message(
        event(
            "aws.ec2",
            "EC2 Instance State-change Notification",
            {"instance-id": "i-3", "state": "running"},
        )
    )
    assert running == []
    health = parse_message(
        event(
            "aws.health",
            "AWS Health Event",
            {
                "service": "EC2",
                "eventTypeCategory": "scheduledChange",
                "affectedEntities": [{"entityValue": "i-4"}, {"entityValue": "i-5"}],
            },
        )
    )
    assert [(i.kind, i.instance_id) for i in health] == [
        (SCHEDULED_CHANGE, "i-4"),
        (SCHEDULED_CHANGE, "i-5"),
    ]
    assert parse_message("not json") == []
    assert parse_message(event("aws.s3", "Object Created", {})) == []


def test_spot_interruption_from_sqs_deletes_the_node_claim_and_marks_the_offering(
    world: World,
) -> None:
    clock = SimulatedClock()
    cluster = MemoryCluster(clock)
    sqs = world.sqs()
    url = sqs.create_queue(QueueName="test-cluster")["QueueUrl"]
    provider = configured_provider(
        world, clock=clock, cluster=cluster, extra={"interruption-queue": "test-cluster"}
    )
    nc = node_class()
    instance = launched_instance(
        provider.launch(
            request_for(provider, nc, "claim-spot", [(INSTANCE_TYPE_LABEL, "In", ["m5.large"])])
        )
    )
    claim = NodeClaim(
        metadata=ObjectMeta(name="claim-spot", labels={INSTANCE_TYPE_LABEL: "m5.large"})
    )
    claim.status.provider_id = instance.provider_id
    cluster.create(claim)
    instance_id = instance.provider_id.rsplit("/", 1)[-1]
    sqs.send_message(
        QueueUrl=url,
        MessageBody=event(
            "aws.ec2", "EC2 Spot Instance Interruption Warning", {"instance-id": instance_id}
        ),
    )
    sqs.send_message(
        QueueUrl=url,
        MessageBody=event(
            "aws.ec2", "EC2 Instance Rebalance Recommendation", {"instance-id": "i-other"}
        ),
    )
    provider.reconcile(clock.now())
    assert cluster.get(NodeClaim, "claim-spot") is None
    assert {i.kind for i in provider.interruption.seen} == {SPOT_INTERRUPTION, REBALANCE}
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    spot_there = [o for o in offerings if o.zone == instance.zone and o.capacity_type == "spot"]
    assert [o.available for o in spot_there] == [False]


def price_entry(instance_type: str, price: str) -> str:
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": instance_type}},
            "terms": {
                "OnDemand": {"t": {"priceDimensions": {"d": {"pricePerUnit": {"USD": price}}}}}
            },
        }
    )


def test_on_demand_prices_come_from_the_pricing_api(world: World) -> None:
    provider = AWSProvider()  # no fast-failing Pricing hook: the Stubber answers
    from nodewright.plugin.model import ProviderContext
    from providers.aws.tests.aws_helpers import options

    provider.configure(
        ProviderContext(cluster=None, clock=SimulatedClock(), options=options(world))
    )
    with Stubber(provider.clients.pricing) as stub:
        params = {"ServiceCode": "AmazonEC2", "Filters": ANY, "MaxResults": 100}
        stub.add_response(
            "get_products",
            {"PriceList": [price_entry("m5.large", "0.5"), price_entry("bad", "0")]},
            params,
        )
        stub.add_response("get_products", {"PriceList": [price_entry("m5.metal", "4.6")]}, params)
        nc = node_class()
        offerings = provider.offerings(nc, provider.instance_types(nc))
        stub.assert_no_pending_responses()
    on_demand = {o.price for o in offerings["m5.large"] if o.capacity_type == "on-demand"}
    assert on_demand == {0.5}
    assert provider.pricing.prices is not None
    assert provider.pricing.prices.on_demand["m5.metal"] == pytest.approx(4.6)
    assert "bad" not in provider.pricing.prices.on_demand


def test_a_zone_without_a_spot_record_has_an_unavailable_spot_offering(world: World) -> None:
    provider = configured_provider(world)

    def drop_zone(parsed: dict[str, Any], **_: Any) -> None:
        parsed["SpotPriceHistory"] = [
            r for r in parsed.get("SpotPriceHistory", []) if r["AvailabilityZone"] != "us-west-2b"
        ]

    provider.clients.ec2.meta.events.register("after-call.ec2.DescribeSpotPriceHistory", drop_zone)
    nc = node_class()
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    spot = {o.zone: o for o in offerings if o.capacity_type == "spot"}
    assert not spot["us-west-2b"].available
    assert spot["us-west-2a"].available
    assert spot["us-west-2a"].price == pytest.approx(0.00001)  # moto's spot price


def test_nodeclaims_stamped_under_another_hash_version_are_restamped_then_drift(
    world: World,
) -> None:
    clock = SimulatedClock()
    cluster = MemoryCluster(clock)
    provider = configured_provider(world, clock=clock, cluster=cluster)
    nc = cluster.create(node_class())
    launched = launched_claim(provider, nc, world)
    # Taken over from Karpenter: its own hash under its own version.
    claim = make_node_claim("claim-drift", nc)
    claim.metadata.annotations = {
        "karpenter.k8s.aws/ec2nodeclass-hash": "1234567890",
        "karpenter.k8s.aws/ec2nodeclass-hash-version": "v6",
    }
    claim = mutable(cluster.create(claim))
    claim.status.provider_id = launched.status.provider_id
    claim = cluster.update_status(claim)
    unlaunched = cluster.create(make_node_claim("claim-pending", nc))

    assert provider.restamp_hashes() == ["claim-drift"]
    current = cluster.get(NodeClaim, "claim-drift")
    assert current is not None
    assert current.metadata.annotations == {
        "karpenter.k8s.aws/ec2nodeclass-hash": static_hash(nc),
        "karpenter.k8s.aws/ec2nodeclass-hash-version": "nodewright-v1",
    }
    assert provider.is_drifted(current, nc) is None
    assert provider.is_drifted(current, bumped(nc, tags={"team": "payments"})) == "NodeClassDrift"
    # A claim not launched yet is left to its launch; a second pass changes nothing.
    pending = cluster.get(NodeClaim, unlaunched.name)
    assert pending is not None
    assert "karpenter.k8s.aws/ec2nodeclass-hash" not in pending.metadata.annotations
    assert provider.restamp_hashes() == []
