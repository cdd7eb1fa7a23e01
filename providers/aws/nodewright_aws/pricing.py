"""Prices: a bundled static table, on-demand from the Pricing API, spot from EC2.

Karpenter's rules: the static table seeds on-demand prices (the region's own, else
us-east-1); until the first spot refresh, spot costs the on-demand price; after it, a
(type, zone) with no spot record has no spot price, so that offering is unavailable.
Refreshes merge over old data, so a failed refresh keeps what was known. With
``aws.isolated-vpc`` the Pricing API is never called (spot prices still come from EC2).

The static table is ``static_prices.json``; ``scripts/generate_static_prices.py`` rebuilds
it from the Pricing API with :func:`parse_price_list` (see the package README).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

import botocore.exceptions

from nodewright_aws.clients import AWSClients, error_text

log = logging.getLogger(__name__)

STATIC_TABLE = "static_prices.json"
FALLBACK_REGION = "us-east-1"
#: How often both price sources are asked again.
PRICING_REFRESH = timedelta(hours=12)
#: Serials of what price books know: each book, and each change to one, takes the next.
_VERSIONS = itertools.count(1)


def load_static_prices() -> dict[str, dict[str, float]]:
    text = resources.files("nodewright_aws").joinpath(STATIC_TABLE).read_text()
    data: dict[str, dict[str, float]] = json.loads(text)["regions"]
    return data


def on_demand_filters(region: str, tenancy: str, product_family: str) -> list[dict[str, str]]:
    terms = {
        "regionCode": region,
        "serviceCode": "AmazonEC2",
        "preInstalledSw": "NA",
        "operatingSystem": "Linux",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
        "tenancy": tenancy,
        "productFamily": product_family,
    }
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in terms.items()]


def parse_price_list(entries: Iterable[str], currency: str = "USD") -> dict[str, float]:
    """Instance type -> hourly price from GetProducts' JSON strings; zero prices skipped."""
    prices: dict[str, float] = {}
    for entry in entries:
        try:
            product = json.loads(entry)
            instance_type = product["product"]["attributes"]["instanceType"]
            for term in product["terms"]["OnDemand"].values():
                for dimension in term["priceDimensions"].values():
                    price = float(dimension["pricePerUnit"][currency])
                    if price > 0:
                        prices[instance_type] = price
        except (KeyError, ValueError, TypeError, AttributeError):
            log.debug("skipping a price-list entry that does not parse")
    return prices


def fetch_on_demand(client: Any, region: str) -> dict[str, float]:
    """Both queries (shared and bare-metal); empty if either returns nothing."""
    currency = "CNY" if region.startswith("cn-") else "USD"
    found: dict[str, float] = {}
    for tenancy, family in (
        ("Shared", "Compute Instance"),
        ("Dedicated", "Compute Instance (bare metal)"),
    ):
        paginator = client.get_paginator("get_products")
        pages = paginator.paginate(
            ServiceCode="AmazonEC2",
            Filters=on_demand_filters(region, tenancy, family),
            PaginationConfig={"PageSize": 100},
        )
        part: dict[str, float] = {}
        for page in pages:
            part.update(parse_price_list(page.get("PriceList", []), currency))
        if not part:
            return {}
        found.update(part)
    return found


def fetch_spot(
    client: Any, now: datetime, instance_types: Iterable[str] = ()
) -> dict[tuple[str, str], float]:
    """(type, zone) -> current spot price."""
    names = sorted(instance_types)
    kwargs: dict[str, Any] = {
        "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
        "StartTime": now,
    }
    if names:
        kwargs["InstanceTypes"] = names
    prices: dict[tuple[str, str], tuple[datetime | None, float]] = {}
    paginator = client.get_paginator("describe_spot_price_history")
    for page in paginator.paginate(**kwargs, PaginationConfig={"PageSize": 1000}):
        for record in page.get("SpotPriceHistory", []):
            key = (record.get("InstanceType", ""), record.get("AvailabilityZone", ""))
            stamp = record.get("Timestamp")
            try:
                price = float(record.get("SpotPrice", ""))
            except ValueError:
                continue
            old = prices.get(key)
            if old is None or (stamp is not None and (old[0] is None or stamp > old[0])):
                prices[key] = (stamp, price)
    return {key: price for key, (_, price) in prices.items()}


class PriceBook:
    """What is known about prices in one region."""

    def __init__(
        self, region: str, static: Mapping[str, Mapping[str, float]] | None = None
    ) -> None:
        table = static if static is not None else load_static_prices()
        self.region = region
        self.on_demand: dict[str, float] = dict(table.get(region) or table.get(FALLBACK_REGION, {}))
        self.spot: dict[tuple[str, str], float] = {}
        self.spot_refreshed = False
        #: Which prices these are: equal versions, equal prices (a new one with every change
        #: made through the update methods).
        self.version = next(_VERSIONS)

    def update_on_demand(self, prices: Mapping[str, float]) -> None:
        if any(self.on_demand.get(name) != price for name, price in prices.items()):
            self.on_demand.update(prices)
            self.version = next(_VERSIONS)

    def update_spot(self, prices: Mapping[tuple[str, str], float]) -> None:
        if not prices:
            return
        if not self.spot_refreshed or any(self.spot.get(k) != v for k, v in prices.items()):
            self.spot.update(prices)
            self.spot_refreshed = True
            self.version = next(_VERSIONS)

    def on_demand_price(self, instance_type: str) -> float | None:
        return self.on_demand.get(instance_type)

    def spot_price(self, instance_type: str, zone: str) -> float | None:
        if not self.spot_refreshed:
            return self.on_demand.get(instance_type)
        return self.spot.get((instance_type, zone))


class PricingProvider:
    """The region's price book, refreshed from the Pricing API and spot history every
    12 hours (first on first use); a failed refresh keeps what was known."""

    def __init__(
        self,
        clients: AWSClients,
        now: Callable[[], datetime],
        spot_types: Callable[[], Iterable[str]],
    ) -> None:
        self.clients = clients
        self.now = now
        #: The instance types to ask spot prices for (none: every type).
        self.spot_types = spot_types
        self.prices: PriceBook | None = None
        self.next_refresh: datetime | None = None

    def book(self) -> PriceBook:
        region = self.clients.region
        if self.prices is None or self.prices.region != region:
            self.prices = PriceBook(region)
        if self.next_refresh is None or self.now() >= self.next_refresh:
            self.refresh()
        return self.prices

    def due(self, now: datetime) -> bool:
        """A book exists and its refresh time has come."""
        due = self.next_refresh
        return self.prices is not None and due is not None and now >= due

    def refresh(self) -> None:
        """Refresh both price sources; failures keep the previous (or static) data."""
        region = self.clients.region
        book = self.prices or PriceBook(region)
        self.prices = book
        now = self.now()
        self.next_refresh = now + PRICING_REFRESH
        try:
            # An isolated VPC cannot reach the Pricing API (it has no VPC endpoint).
            if not self.clients.settings.isolated_vpc:
                book.update_on_demand(fetch_on_demand(self.clients.pricing, region))
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
            log.warning(
                "on-demand prices not refreshed, keeping the known ones: %s", error_text(error)
            )
        try:
            book.update_spot(fetch_spot(self.clients.ec2, now, self.spot_types()))
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
            log.warning("spot prices not refreshed, keeping the known ones: %s", error_text(error))
