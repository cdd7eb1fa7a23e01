"""Offerings (Karpenter Azure's offerings): every SKU in each of its zones and regionally
(zone ``0``), on-demand and, when the SKU is LowPriorityCapable, spot; priced from the retail
price book and unavailable while a recent launch found no capacity."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from nodewright.plugin import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, InstanceType, Offering
from nodewright_azure import labels as L
from nodewright_azure import skus
from nodewright_azure.instancetype import InstanceTypeProvider
from nodewright_azure.pricing import PricingProvider
from nodewright_azure.unavailable import UnavailableOfferings


class OfferingProvider:
    def __init__(
        self,
        *,
        location: str,
        instance_types: InstanceTypeProvider,
        pricing: PricingProvider,
        unavailable: UnavailableOfferings,
        now: Callable[[], datetime],
        price_modelled: Callable[[str, str], bool] = lambda _size, _capacity: False,
    ) -> None:
        self.location = location
        self.instance_types = instance_types
        self.pricing = pricing
        self.unavailable = unavailable
        self.now = now
        #: Whether the price of (size, spot or on-demand) is an estimate, not a quote.
        self.price_modelled = price_modelled

    def offerings(self, instance_types: Sequence[InstanceType]) -> Mapping[str, list[Offering]]:
        pricing = self.pricing.book()
        now = self.now()
        by_name = self.instance_types.by_name()
        result: dict[str, list[Offering]] = {}
        for it in instance_types:
            sku = by_name.get(it.name)
            if sku is None:
                continue
            capacity_types = [CAPACITY_TYPE_ON_DEMAND]
            if sku.flag("LowPriorityCapable"):
                capacity_types.append(CAPACITY_TYPE_SPOT)
            offers: list[Offering] = []
            for zone in skus.zone_values(sku, self.location):
                scope = "regional" if zone == L.REGIONAL_ZONE else "zonal"
                for capacity_type in capacity_types:
                    until = self.unavailable.unavailable_until((it.name, zone, capacity_type), now)
                    offers.append(
                        Offering(
                            zone=zone,
                            capacity_type=capacity_type,
                            price=pricing.price(it.name, capacity_type),
                            price_modelled=self.price_modelled(it.name, capacity_type),
                            available=until is None,
                            labels={L.PLACEMENT_SCOPE: scope},
                            # Regional VMs come after zonal ones of the same price.
                            fallback=zone == L.REGIONAL_ZONE,
                        )
                    )
            result[it.name] = offers
        return result
