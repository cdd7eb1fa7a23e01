"""Offerings: where and how each instance type can be bought, at what price (Karpenter's
offering provider). Zones are those of the class's subnets; an offering is unavailable with
no price, with no AMI for the type, while EC2 recently had no capacity for it, or while an ARC
zonal shift moves traffic away from its zone. Capacity
reservations add ``reserved`` offerings priced far below anything else (labelled with the
reservation's type and whether it is interruptible). In a partition placement group each
offering is split into one per partition."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from nodewright.plugin import (
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    InstanceType,
    Offering,
    Reservation,
)
from nodewright_aws import labels as L
from nodewright_aws.discovery import NodeClassDiscovery, ami_for
from nodewright_aws.instancetype import InstanceTypeProvider, capacity_types
from nodewright_aws.nodeclass import EC2NodeClass
from nodewright_aws.placementgroup import PlacementGroup, split_by_partition
from nodewright_aws.pricing import PricingProvider
from nodewright_aws.unavailable import UnavailableOfferings


class OfferingProvider:
    """Builds a class's offerings from discovery, prices and the unavailable cache."""

    def __init__(
        self,
        *,
        instance_types: InstanceTypeProvider,
        pricing: PricingProvider,
        discovery: NodeClassDiscovery,
        unavailable: UnavailableOfferings,
        reservations: Callable[[EC2NodeClass], list[dict[str, Any]]],
        now: Callable[[], datetime],
        placement_group: Callable[[EC2NodeClass], PlacementGroup | None] = lambda _: None,
        shifted_zones: Callable[[], frozenset[str]] = frozenset,
    ) -> None:
        self.instance_types = instance_types
        self.pricing = pricing
        self.discovery = discovery
        self.unavailable = unavailable
        #: The class's active capacity reservations, as its status lists them.
        self.reservations = reservations
        self.now = now
        #: The class's resolved placement group (None: none, or not known now).
        self.placement_group = placement_group
        #: The zone IDs an ARC zonal shift moves traffic away from now.
        self.shifted_zones = shifted_zones

    def offerings(
        self, node_class: EC2NodeClass, instance_types: Sequence[InstanceType]
    ) -> dict[str, list[Offering]]:
        data = self.instance_types.refresh()
        book = self.pricing.book()
        zone_ids = self.discovery.zone_ids(node_class)
        amis = self.discovery.amis(node_class)
        self.unavailable.expire(self.now())
        shifted = self.shifted_zones()
        result: dict[str, list[Offering]] = {}
        for instance_type in instance_types:
            info = data.infos.get(instance_type.name)
            if info is None:
                continue
            has_ami = ami_for(instance_type, amis) is not None
            offerings = []
            for zone in sorted(data.zones.get(instance_type.name, frozenset()) & zone_ids.keys()):
                for capacity_type in capacity_types(info):
                    price = (
                        book.spot_price(instance_type.name, zone)
                        if capacity_type == CAPACITY_TYPE_SPOT
                        else book.on_demand_price(instance_type.name)
                    )
                    available = (
                        price is not None
                        and has_ami
                        and (instance_type.name, zone, capacity_type) not in self.unavailable
                        and zone_ids[zone] not in shifted
                    )
                    offerings.append(
                        Offering(
                            zone,
                            capacity_type,
                            price if price is not None else 0.0,
                            available=available,
                            labels={L.ZONE_ID: zone_ids[zone]},
                        )
                    )
            result[instance_type.name] = offerings
        for reservation in self.reservations(node_class):
            name = reservation["instanceType"]
            zone = reservation["availabilityZone"]
            if name not in result or zone not in zone_ids:
                continue
            on_demand = book.on_demand_price(name) or 0.0
            count = int(reservation.get("availableInstanceCount", 0))
            result[name].append(
                Offering(
                    zone,
                    CAPACITY_TYPE_RESERVED,
                    # Already paid for: far cheaper than anything else (Karpenter's rule).
                    on_demand / 10_000_000,
                    available=count > 0 and zone_ids[zone] not in shifted,
                    labels={
                        L.ZONE_ID: zone_ids[zone],
                        L.CAPACITY_RESERVATION_TYPE: "default",
                        L.CAPACITY_RESERVATION_INTERRUPTIBLE: str(
                            bool(reservation.get("interruptible"))
                        ).lower(),
                    },
                    reservation=Reservation(reservation["id"], L.CAPACITY_RESERVATION_ID, count),
                )
            )
        group = self.placement_group(node_class)
        return {name: split_by_partition(found, group) for name, found in result.items()}
