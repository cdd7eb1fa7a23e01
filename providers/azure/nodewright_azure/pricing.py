"""Prices from the Azure Retail Prices API, with a bundled fallback table
(Karpenter's ``pkg/providers/pricing``).

The API is public and unauthenticated: pages of ``Items`` linked by ``NextPageLink``. Rows
for Windows and Low Priority meters are skipped; rows whose ``skuName`` ends in `` Spot`` are
spot prices. Until the first fetch succeeds, spot prices are the static on-demand prices.
A SKU with no price at all is priced :data:`MISSING_PRICE`, so it is tried last.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from typing import Any
from urllib.parse import quote

from azure.core import PipelineClient
from azure.core.exceptions import AzureError
from azure.core.pipeline.policies import HeadersPolicy, RetryPolicy
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest import HttpRequest

from nodewright.plugin import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT
from nodewright_azure.options import Settings

log = logging.getLogger(__name__)

PUBLIC_PRICES_ENDPOINT = "https://prices.azure.com"
API_VERSION = "2023-01-01-preview"
MISSING_PRICE = 999.0
REFRESH_PERIOD = timedelta(hours=12)
#: Static prices of regions missing from the table come from this one.
FALLBACK_REGION = "eastus"


def static_prices(region: str) -> dict[str, float]:
    """The bundled on-demand prices of ``region`` (``eastus``'s when it has none)."""
    text = resources.files("nodewright_azure").joinpath("static_prices.json").read_text()
    table: dict[str, Any] = json.loads(text)
    prices = table.get(region.lower()) or table[FALLBACK_REGION]
    return {str(k): float(v) for k, v in prices.items()}


def price_filter(region: str) -> str:
    return " and ".join(
        (
            "priceType eq 'Consumption'",
            "currencyCode eq 'USD'",
            "serviceFamily eq 'Compute'",
            "serviceName eq 'Virtual Machines'",
            f"armRegionName eq '{region.lower()}'",
        )
    )


def classify(items: Sequence[Mapping[str, Any]]) -> tuple[dict[str, float], dict[str, float]]:
    """Split price rows into on-demand and spot prices by ARM SKU name."""
    on_demand: dict[str, float] = {}
    spot: dict[str, float] = {}
    for item in items:
        if str(item.get("productName", "")).endswith(" Windows"):
            continue
        if str(item.get("meterName", "")).endswith(" Low Priority"):
            continue
        name = str(item.get("armSkuName", ""))
        try:
            price = float(item.get("retailPrice", ""))
        except (TypeError, ValueError):
            continue
        if not name:
            continue
        target = spot if str(item.get("skuName", "")).endswith(" Spot") else on_demand
        target[name] = price
    return on_demand, spot


class RetailPricesClient:
    """GETs every page of the Retail Prices API for one region."""

    def __init__(
        self,
        endpoint: str = PUBLIC_PRICES_ENDPOINT,
        transport: HttpTransport[Any, Any] | None = None,
        **pipeline_options: Any,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        verify = pipeline_options.pop("connection_verify", True)
        if transport is None:
            # requests is loaded only to talk to Azure, not with the plugin (every command
            # loads every installed plugin).
            from azure.core.pipeline.transport import RequestsTransport  # noqa: PLC0415

            transport = RequestsTransport(connection_verify=verify)
        self._client: PipelineClient[Any, Any] = PipelineClient(
            base_url=self.endpoint,
            policies=[HeadersPolicy(), RetryPolicy(**pipeline_options)],
            transport=transport,
        )

    def close(self) -> None:
        self._client.close()

    def fetch(self, region: str) -> list[dict[str, Any]]:
        url: str | None = (
            f"{self.endpoint}/api/retail/prices?api-version={API_VERSION}"
            f"&$filter={quote(price_filter(region))}"
        )
        items: list[dict[str, Any]] = []
        pages = 0
        while url:
            response = self._client.send_request(HttpRequest("GET", url))
            response.raise_for_status()
            page = response.json()
            items.extend(page.get("Items") or ())
            url = page.get("NextPageLink") or None
            pages += 1
            if pages > 10_000:
                raise RuntimeError("the Retail Prices API kept returning NextPageLink")
        return items


@dataclass
class Pricing:
    """Current prices of one region, refreshed every :data:`REFRESH_PERIOD`."""

    region: str
    client: RetailPricesClient | None
    on_demand: dict[str, float]
    spot: dict[str, float]
    source: str = "static"
    refreshed_at: datetime | None = None

    @classmethod
    def start(cls, region: str, client: RetailPricesClient | None) -> Pricing:
        static = static_prices(region)
        return cls(region, client, dict(static), dict(static))

    def due(self, now: datetime) -> bool:
        return self.client is not None and (
            self.refreshed_at is None or now - self.refreshed_at >= REFRESH_PERIOD
        )

    def refresh(self, now: datetime) -> bool:
        """Fetch prices; on failure or an empty answer keep the previous ones."""
        if self.client is None:
            return False
        self.refreshed_at = now
        try:
            on_demand, spot = classify(self.client.fetch(self.region))
        except (AzureError, ValueError, RuntimeError) as error:
            log.warning("azure: retail prices for %s not refreshed: %s", self.region, error)
            return False
        if not on_demand:
            log.warning("azure: the Retail Prices API returned no prices for %s", self.region)
            return False
        self.on_demand, self.spot, self.source = on_demand, spot, "api"
        return True

    def price(self, sku: str, capacity_type: str) -> float:
        table = self.spot if capacity_type == CAPACITY_TYPE_SPOT else self.on_demand
        return table.get(sku, MISSING_PRICE)

    def known(self, sku: str) -> bool:
        return sku in self.on_demand


class PricingProvider:
    """The region's price book, made on first use (with a Retail Prices API client when
    ``azure.pricing=api``) and refreshed when due."""

    def __init__(
        self,
        settings: Settings,
        transport: Callable[[], dict[str, Any]],
        now: Callable[[], datetime],
    ) -> None:
        self.settings = settings
        #: The SDK transport keyword arguments (the in-process cloud's, offline).
        self.transport = transport
        self.now = now
        self.current: Pricing | None = None

    def book(self) -> Pricing:
        if self.current is None:
            client = None
            if self.settings.pricing == "api":
                options: dict[str, Any] = {
                    "retry_total": 3,
                    "retry_backoff_factor": self.settings.retry_backoff,
                }
                if self.settings.ca_bundle:
                    options["connection_verify"] = self.settings.ca_bundle
                client = RetailPricesClient(
                    self.settings.prices_endpoint, **options, **self.transport()
                )
            self.current = Pricing.start(self.settings.location or "eastus", client)
        if self.current.due(self.now()):
            self.current.refresh(self.now())
        return self.current

    def refresh_if_due(self, now: datetime) -> None:
        """Refresh a book already made, when its time has come (no book: nothing to do)."""
        if self.current is not None and self.current.due(now):
            self.current.refresh(now)

    def close(self) -> None:
        if self.current is not None and self.current.client is not None:
            self.current.client.close()
        self.current = None


__all__ = [
    "CAPACITY_TYPE_ON_DEMAND",
    "MISSING_PRICE",
    "Pricing",
    "PricingProvider",
    "RetailPricesClient",
]
