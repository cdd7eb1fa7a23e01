"""networkInterfaces (EFA-only interfaces), EFA requests, cpuOptions.nestedVirtualization,
connectionTracking and interruptible capacity reservations: which instance types a class can
launch, their capacity, and what goes into the launch template and the CreateFleet request
(on moto, which keeps launch-template data as sent)."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.testing import launched_instance
from nodewright_aws import labels as L
from nodewright_aws.cloudprovider import AWSProvider
from nodewright_aws.instance import InstanceProvider
from nodewright_aws.launch import static_hash
from nodewright_aws.nodeclass import EC2NodeClass
from providers.aws.tests.aws_helpers import World, configured_provider, node_class, request_for

#: m5.large: ENA, no EFA; m7i.large: nested virtualization; c5n.18xlarge: one EFA on one card;
#: p4d.24xlarge: four EFAs on four cards; c4.large: xen, no ENA.
TYPES = "m5.large,m7i.large,c5n.18xlarge,p4d.24xlarge,c4.large"
PRIMARY = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
EFA_ONLY = {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}
CLAIMS = itertools.count(1)


@pytest.fixture
def provider(world: World) -> AWSProvider:
    provider = configured_provider(world, extra={"instance-types": TYPES})
    # Not in the bundled static table (and moto has no Pricing API): list prices.
    provider.pricing.book().update_on_demand({"c5n.18xlarge": 3.888, "p4d.24xlarge": 32.7726})
    return provider


def names(provider: AWSProvider, nc: EC2NodeClass) -> set[str]:
    return {t.name for t in provider.instance_types(nc)}


def capacity(provider: AWSProvider, nc: EC2NodeClass, name: str) -> dict[str, int]:
    (found,) = [t for t in provider.instance_types(nc) if t.name == name]
    return {k: v // 1000 for k, v in found.capacity.items()}


class Fleet:
    """The CreateFleet inputs and the launch templates' data, as sent."""

    def __init__(self, provider: AWSProvider) -> None:
        self.fleets: list[dict[str, Any]] = []
        self.templates: list[dict[str, Any]] = []
        events = provider.clients.ec2.meta.events
        events.register(
            "provide-client-params.ec2.CreateFleet",
            lambda params, **_: self.fleets.append(copy.deepcopy(params)),
        )
        events.register(
            "provide-client-params.ec2.CreateLaunchTemplate",
            lambda params, **_: self.templates.append(params["LaunchTemplateData"]),
        )


def launch(provider: AWSProvider, nc: EC2NodeClass, name: str, efa: int = 0) -> Fleet:
    """A fresh NodeClaim's launch of ``name`` on demand."""
    fleet = Fleet(provider)
    request = request_for(
        provider,
        nc,
        f"claim-{next(CLAIMS)}",
        [(INSTANCE_TYPE_LABEL, "In", [name]), (CAPACITY_TYPE_LABEL, "In", ["on-demand"])],
    )
    if efa:
        request.node_claim.spec.resources.requests[L.EFA_RESOURCE] = str(efa)
    launched_instance(provider.launch(request))
    return fleet


def test_network_interfaces_pick_types_set_efa_and_pods_and_shape_the_template(
    provider: AWSProvider,
) -> None:
    nc = node_class(networkInterfaces=[PRIMARY, EFA_ONLY])
    # An efa-only interface needs an EFA-capable type; an explicit layout needs ENA.
    assert names(provider, nc) == {"c5n.18xlarge", "p4d.24xlarge"}
    assert names(provider, node_class(networkInterfaces=[PRIMARY])) == {
        "m5.large",
        "m7i.large",
        "c5n.18xlarge",
        "p4d.24xlarge",
    }
    # The class's efa-only interfaces are the EFA capacity (the type has 4 on p4d), and the
    # one on card 0 takes an ENI away from pods: (15 - 1) x (50 - 1) + 2.
    assert capacity(provider, nc, "p4d.24xlarge")[L.EFA_RESOURCE] == 1
    assert capacity(provider, node_class(), "p4d.24xlarge")[L.EFA_RESOURCE] == 4
    assert capacity(provider, nc, "c5n.18xlarge")["pods"] == 14 * 49 + 2
    assert capacity(provider, node_class(), "c5n.18xlarge")["pods"] == 15 * 49 + 2
    # A layout with more efa-only interfaces than the type has EFAs, or a card it lacks.
    two_cards = [PRIMARY, EFA_ONLY, {**EFA_ONLY, "networkCardIndex": 1, "deviceIndex": 0}]
    assert names(provider, node_class(networkInterfaces=two_cards)) == {"p4d.24xlarge"}
    fleet = launch(provider, nc, "c5n.18xlarge")
    (data,) = fleet.templates
    groups = data["NetworkInterfaces"][0]["Groups"]
    assert data["NetworkInterfaces"] == [
        {"DeviceIndex": 0, "Groups": groups, "NetworkCardIndex": 0, "InterfaceType": "interface"},
        {"DeviceIndex": 1, "Groups": groups, "NetworkCardIndex": 0, "InterfaceType": "efa-only"},
    ]


def test_a_nodeclaim_asking_for_efa_gets_an_efa_interface_per_card(
    provider: AWSProvider,
) -> None:
    nc = node_class(associatePublicIPAddress=False)
    fleet = launch(provider, nc, "p4d.24xlarge", efa=1)
    (data,) = fleet.templates
    layout = [
        (i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"], i["AssociatePublicIpAddress"])
        for i in data["NetworkInterfaces"]
    ]
    assert layout == [
        (0, 0, "efa", False),
        (1, 1, "efa", False),
        (2, 1, "efa", False),
        (3, 1, "efa", False),
    ]
    # Without the request, the same type gets the primary interface alone (another template).
    fleet = launch(provider, nc, "p4d.24xlarge")
    (data,) = fleet.templates
    assert [sorted(i) for i in data["NetworkInterfaces"]] == [
        ["AssociatePublicIpAddress", "DeviceIndex", "Groups"]
    ]


def test_nested_virtualization_keeps_the_types_that_support_it_and_asks_for_it(
    provider: AWSProvider,
) -> None:
    enabled = node_class(cpuOptions={"nestedVirtualization": "enabled"})
    assert names(provider, enabled) == {"m7i.large"}
    assert launch(provider, enabled, "m7i.large").templates[0]["CpuOptions"] == {
        "NestedVirtualization": "enabled"
    }
    disabled = node_class(cpuOptions={"nestedVirtualization": "disabled"})
    assert names(provider, disabled) == set(TYPES.split(","))
    assert launch(provider, disabled, "m5.large").templates[0]["CpuOptions"] == {
        "NestedVirtualization": "disabled"
    }
    assert "CpuOptions" not in launch(provider, node_class(), "m5.large").templates[0]


def test_connection_tracking_needs_nitro_and_goes_on_every_ip_interface(
    provider: AWSProvider,
) -> None:
    tracking = {"tcpEstablishedTimeout": 3600, "udpTimeout": 45}
    nc = node_class(connectionTracking=tracking)
    assert "c4.large" not in names(provider, nc)
    assert "c4.large" in names(provider, node_class())
    (interface,) = launch(provider, nc, "m5.large").templates[0]["NetworkInterfaces"]
    assert interface["ConnectionTrackingSpecification"] == {
        "TcpEstablishedTimeout": 3600,
        "UdpTimeout": 45,
    }
    with_efa = node_class(connectionTracking=tracking, networkInterfaces=[PRIMARY, EFA_ONLY])
    primary, efa = launch(provider, with_efa, "c5n.18xlarge").templates[0]["NetworkInterfaces"]
    assert primary["ConnectionTrackingSpecification"]["UdpTimeout"] == 45
    assert "ConnectionTrackingSpecification" not in efa


@pytest.mark.parametrize(
    "field",
    [
        {"networkInterfaces": [PRIMARY]},
        {"cpuOptions": {"nestedVirtualization": "enabled"}},
        {"connectionTracking": {"udpTimeout": 30}},
        {"placementGroupSelector": {"name": "hpc"}},
    ],
)
def test_each_field_is_in_the_static_hash(field: dict[str, Any]) -> None:
    assert static_hash(node_class(**field)) != static_hash(node_class())


def with_interruptible_reservation(provider: AWSProvider) -> None:
    def answer(**_: Any) -> Any:
        return AWSResponse("", 200, HTTPHeaders(), None), {
            "CapacityReservations": [
                {
                    "CapacityReservationId": "cr-0123456789abcdef0",
                    "InstanceType": "m5.large",
                    "AvailabilityZone": "us-west-2b",
                    "InstanceMatchCriteria": "targeted",
                    "OwnerId": "123456789012",
                    "State": "active",
                    "AvailableInstanceCount": 2,
                    "Interruptible": True,
                }
            ]
        }

    provider.clients.ec2.meta.events.register(
        "before-call.ec2.DescribeCapacityReservations", answer
    )


def test_an_interruptible_reservation_is_listed_labelled_and_launched_as_such(
    provider: AWSProvider,
) -> None:
    with_interruptible_reservation(provider)
    nc = node_class(capacityReservationSelectorTerms=[{"id": "cr-0123456789abcdef0"}])
    (status,) = provider.node_class_status(nc).status["capacity_reservations"]
    assert status["interruptible"] is True
    offerings = provider.offerings(nc, provider.instance_types(nc))["m5.large"]
    (reserved,) = [o for o in offerings if o.capacity_type == "reserved"]
    assert reserved.labels[L.CAPACITY_RESERVATION_INTERRUPTIBLE] == "true"
    fleet = Fleet(provider)

    def as_moto_knows(params: dict[str, Any], **_: Any) -> None:
        # moto launches nothing for "reserved-capacity"; the request was recorded as sent.
        params["TargetCapacitySpecification"]["DefaultTargetCapacityType"] = "on-demand"
        params.pop("ReservedCapacityOptions")

    provider.clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateFleet", as_moto_knows
    )
    request = request_for(
        provider,
        nc,
        "claim-reserved",
        [(INSTANCE_TYPE_LABEL, "In", ["m5.large"]), (CAPACITY_TYPE_LABEL, "In", ["reserved"])],
    )
    instance = launched_instance(provider.launch(request))
    (data,) = fleet.templates
    assert data["InstanceMarketOptions"] == {"MarketType": "interruptible-capacity-reservation"}
    (sent,) = fleet.fleets
    assert sent["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "reserved-capacity"
    assert sent["ReservedCapacityOptions"] == {
        "ReservationTypes": ["interruptible-capacity-reservation"]
    }
    assert "OnDemandOptions" not in sent
    assert instance.labels[L.CAPACITY_RESERVATION_INTERRUPTIBLE] == "true"


def test_a_described_instance_in_an_interruptible_reservation_says_so(
    provider: AWSProvider,
) -> None:
    instances: InstanceProvider = provider.instances
    described = {
        "InstanceId": "i-0123456789abcdef0",
        "InstanceType": "m5.large",
        "Placement": {"AvailabilityZone": "us-west-2b", "GroupId": "pg-1", "PartitionNumber": 2},
        "CapacityReservationId": "cr-0123456789abcdef0",
        "InstanceLifecycle": "interruptible-capacity-reservation",
    }
    labels = instances.to_instance(described).labels
    assert labels[L.CAPACITY_RESERVATION_INTERRUPTIBLE] == "true"
    assert (labels[L.PLACEMENT_GROUP_ID], labels[L.PLACEMENT_GROUP_PARTITION]) == ("pg-1", "2")
    plain = {k: v for k, v in described.items() if k != "InstanceLifecycle"}
    assert instances.to_instance(plain).labels[L.CAPACITY_RESERVATION_INTERRUPTIBLE] == "false"


def test_a_described_instance_has_the_capacity_its_class_gave_it_at_launch(world: World) -> None:
    """Describing an instance after its launch (the simulated kubelet registering it, garbage
    collection, a restarted process) builds its type with its EC2NodeClass, as the launch did:
    an efa-only interface on card 0 takes an ENI from pods, a kubelet maxPods sets them."""
    clock = SimulatedClock()
    cluster = MemoryCluster(clock)
    nc = cluster.create(node_class(networkInterfaces=[PRIMARY, EFA_ONLY]))
    provider = configured_provider(world, clock, cluster, {"instance-types": TYPES})
    request = request_for(
        provider, nc, "claim-efa", [(INSTANCE_TYPE_LABEL, "In", ["c5n.18xlarge"])]
    )
    launched = launched_instance(provider.launch(request))
    assert launched.capacity["pods"] // 1000 == 14 * 49 + 2
    assert provider.get(launched.provider_id).capacity == launched.capacity
    restarted = configured_provider(world, clock, cluster, {"instance-types": TYPES})
    (listed,) = restarted.list_instances()
    assert restarted.get(launched.provider_id).capacity == listed.capacity == launched.capacity
    # The class's kubelet, likewise; with the class gone, the type's own figure.
    cluster.update(node_class(networkInterfaces=[PRIMARY, EFA_ONLY], kubelet={"maxPods": 60}))
    assert restarted.get(launched.provider_id).capacity["pods"] // 1000 == 60
    cluster.delete(EC2NodeClass, "default")
    assert restarted.get(launched.provider_id).capacity["pods"] // 1000 == 15 * 49 + 2
