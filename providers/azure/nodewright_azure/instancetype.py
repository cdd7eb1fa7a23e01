"""The region's VM SKUs from the Resource SKUs API, read every 12 hours, and the instance
types an AKSNodeClass gets from them (Karpenter Azure's instancetype provider; the pure
SKU-to-instance-type rules are :mod:`nodewright_azure.skus`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from nodewright.plugin import InstanceType
from nodewright_azure import skus
from nodewright_azure.clients import AzureClients, azure_errors
from nodewright_azure.nodeclass import AKSNodeClassSpec
from nodewright_azure.options import Settings

log = logging.getLogger(__name__)

#: How often the Resource SKUs API is read again.
SKU_REFRESH = timedelta(hours=12)


class InstanceTypeProvider:
    """The region's SKUs, cached; instance types per AKSNodeClass spec."""

    def __init__(
        self, settings: Settings, clients: AzureClients, now: Callable[[], datetime]
    ) -> None:
        self.settings = settings
        self.clients = clients
        self.now = now
        self.skus: list[skus.Sku] | None = None
        self.skus_at: datetime | None = None

    def region_skus(self) -> list[skus.Sku]:
        """Every VM SKU of the region (cached for 12 hours)."""
        now = self.now()
        if self.skus is None or self.skus_at is None or now - self.skus_at >= SKU_REFRESH:
            compute, _ = self.clients.clients()
            region = self.settings.location
            with azure_errors("listing resource SKUs"):
                found = [
                    skus.sku_from_model(model, region)
                    for model in compute.resource_skus.list(filter=f"location eq '{region}'")
                    if (model.resource_type or "") == "virtualMachines"
                ]
            self.skus, self.skus_at = found, now
            log.info("azure: %d VM SKUs in %s", len(found), region)
        return self.skus

    def sku(self, name: str) -> skus.Sku | None:
        return next((s for s in self.region_skus() if s.name == name), None)

    def by_name(self) -> dict[str, skus.Sku]:
        return {s.name: s for s in self.region_skus()}

    def list(self, spec: AKSNodeClassSpec) -> list[InstanceType]:
        return skus.instance_types(
            self.region_skus(),
            spec,
            self.settings.location,
            max_pods=spec.max_pods or self.settings.default_max_pods,
            vm_memory_overhead=self.settings.vm_memory_overhead,
        )
