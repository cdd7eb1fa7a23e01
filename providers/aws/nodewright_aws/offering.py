"""Offerings: where and how each instance type can be bought, at what price (Karpenter's
offering provider). Zones are those of the class's subnets; an offering is unavailable with
no price, with no AMI for the type, while EC2 recently had no capacity for it, or while an ARC
zonal shift moves traffic away from its zone. Capacity
reservations add ``reserved`` offerings priced far below anything else (labelled with the
reservation's type and whether it is interruptible). In a partition placement group each
offering is split into one per partition.

A class's spot and on-demand offerings are kept per instance type and made again only when
what they are made from changed: the discovered zones, the prices, the class's subnets, AMIs
and shaping fields, the zonal shifts, or (for that type alone) its unavailable offerings.
Reserved offerings are made on every call (their room changes with every launch)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
from nodewright_aws.instancetype import InstanceTypeProvider, capacity_types, shape_key
from nodewright_aws.nodeclass import EC2NodeClass
from nodewright_aws.placementgroup import PlacementGroup, split_by_partition
from nodewright_aws.pricing import PricingProvider
from nodewright_aws.unavailable import UnavailableOfferings


@dataclass
class _ClassOfferings:
    """A class's spot and on-demand offerings per instance type, while ``key`` holds."""

    key: tuple[object, ...]
    #: Type name -> (its unavailable (zone, capacity type) pairs then, its offerings).
    by_type: dict[str, tuple[frozenset[tuple[str, str]], tuple[Offering, ...]]] = field(
        default_factory=dict
    )


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
        price_modelled: Callable[[str, str], bool] = lambda _type, _capacity: False,
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
        #: Whether the price of (type, spot or on-demand) is an estimate, not a quote.
        self.price_modelled = price_modelled
        #: EC2NodeClass name -> its offerings made so far.
        self._made: dict[str, _ClassOfferings] = {}
        #: How many instance types' offerings were made (not reused).
        self.builds = 0

    def offerings(
        self, node_class: EC2NodeClass, instance_types: Sequence[InstanceType]
    ) -> dict[str, list[Offering]]:
        data = self.instance_types.refresh()
        book = self.pricing.book()
        zone_ids = self.discovery.zone_ids(node_class)
        amis = self.discovery.amis(node_class)
        self.unavailable.expire(self.now())
        shifted = self.shifted_zones()
        key = (
            data.version,
            book.version,
            tuple(sorted(zone_ids.items())),
            tuple((ami.id, ami.requirements) for ami in amis),
            shifted,
            shape_key(node_class.spec),
        )
        made = self._made.get(node_class.name)
        if made is None or made.key != key:
            made = self._made[node_class.name] = _ClassOfferings(key)
        result: dict[str, list[Offering]] = {}
        for instance_type in instance_types:
            name = instance_type.name
            info = data.infos.get(name)
            if info is None:
                continue
            marked = self.unavailable.of_type(name)
            found = made.by_type.get(name)
            if found is None or found[0] != marked:
                self.builds += 1
                has_ami = ami_for(instance_type, amis) is not None
                offerings = []
                for zone in sorted(data.zones.get(name, frozenset()) & zone_ids.keys()):
                    for capacity_type in capacity_types(info):
                        price = (
                            book.spot_price(name, zone)
                            if capacity_type == CAPACITY_TYPE_SPOT
                            else book.on_demand_price(name)
                        )
                        available = (
                            price is not None
                            and has_ami
                            and (zone, capacity_type) not in marked
                            and zone_ids[zone] not in shifted
                        )
                        offerings.append(
                            Offering(
                                zone,
                                capacity_type,
                                price if price is not None else 0.0,
                                available=available,
                                labels={L.ZONE_ID: zone_ids[zone]},
                                price_modelled=self.price_modelled(name, capacity_type),
                            )
                        )
                found = made.by_type[name] = (marked, tuple(offerings))
            result[name] = list(found[1])
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
