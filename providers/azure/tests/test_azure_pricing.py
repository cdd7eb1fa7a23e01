"""Prices from the fake Retail Prices API (NextPageLink paging, retries), the bundled static
table, periodic refresh on the injected clock, and unknown SKUs priced last."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from nodewright.clock import SimulatedClock
from nodewright_azure.cloudprovider import AzureProvider
from nodewright_azure.pricing import MISSING_PRICE, classify, price_filter, static_prices
from providers.azure.tests.azure_helpers import node_class
from providers.azure.tests.fake_azure import FakeAzure

STATIC_D2_V4 = 0.124  # bundled japaneast on-demand price
API_D2_V4 = 0.186  # the fake serves 1.5x the bundled prices


def prices(provider: AzureProvider, name: str) -> dict[str, float]:
    nc = node_class()
    types = provider.instance_types(nc)
    return {
        o.capacity_type: o.price
        for o in provider.offerings(nc, types)[name]
        if o.zone == "japaneast-1"
    }


def price_requests(fake: FakeAzure) -> list[str]:
    return [path for _, path in fake.requests if path.startswith("/api/retail/prices")]


def test_prices_come_from_the_api_through_every_page(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    assert prices(provider, "Standard_D2_v4") == {
        "on-demand": pytest.approx(API_D2_V4),
        "spot": pytest.approx(API_D2_V4 * 0.2),
    }
    requests = price_requests(fake)
    assert len(requests) == 3  # 112 rows, 40 per page
    assert "api-version=2023-01-01-preview" in requests[0]
    assert provider.pricing.book().source == "api"


def test_windows_and_low_priority_rows_are_skipped() -> None:
    rows = [
        {"armSkuName": "Standard_X", "retailPrice": 1, "skuName": "X", "meterName": "X",
         "productName": "Virtual Machines X Series"},
        {"armSkuName": "Standard_X", "retailPrice": 9, "skuName": "X", "meterName": "X",
         "productName": "Virtual Machines X Series Windows"},
        {"armSkuName": "Standard_X", "retailPrice": 0.1, "skuName": "X Low Priority",
         "meterName": "X Low Priority", "productName": "Virtual Machines X Series"},
        {"armSkuName": "Standard_X", "retailPrice": 0.3, "skuName": "X Spot",
         "meterName": "X Spot", "productName": "Virtual Machines X Series"},
    ]  # fmt: skip
    assert classify(rows) == ({"Standard_X": 1.0}, {"Standard_X": 0.3})
    assert price_filter("JapanEast") == (
        "priceType eq 'Consumption' and currencyCode eq 'USD' and serviceFamily eq 'Compute' "
        "and serviceName eq 'Virtual Machines' and armRegionName eq 'japaneast'"
    )


def test_static_table_when_the_api_fails_and_spot_starts_as_on_demand(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    fake.fail("GET", "^/api/retail/prices", 503, "ServiceUnavailable", "down", times=100)
    assert prices(provider, "Standard_D2_v4") == {
        "on-demand": STATIC_D2_V4,
        "spot": STATIC_D2_V4,
    }
    assert provider.pricing.book().source == "static"
    assert static_prices("nowhere")["Standard_D2_v4"] == static_prices("eastus")["Standard_D2_v4"]


def test_throttled_api_is_retried_honouring_retry_after(
    provider: AzureProvider, fake: FakeAzure
) -> None:
    fake.fail("GET", "^/api/retail/prices", 429, headers={"Retry-After": "0"}, times=2)
    assert prices(provider, "Standard_D2_v4")["on-demand"] == pytest.approx(API_D2_V4)
    assert len(price_requests(fake)) == 5  # two throttled, then three pages


def test_prices_refresh_every_12_hours_and_keep_the_last_good_answer(
    provider: AzureProvider, fake: FakeAzure, clock: SimulatedClock
) -> None:
    assert prices(provider, "Standard_D2_v4")["on-demand"] == pytest.approx(API_D2_V4)
    for item in fake.price_items:
        item["retailPrice"] = round(item["retailPrice"] * 2, 6)
    clock.advance(timedelta(hours=11))
    provider.reconcile(clock.now())
    assert prices(provider, "Standard_D2_v4")["on-demand"] == pytest.approx(API_D2_V4)
    clock.advance(timedelta(hours=1))
    provider.reconcile(clock.now())
    assert prices(provider, "Standard_D2_v4")["on-demand"] == pytest.approx(API_D2_V4 * 2)
    fake.fail("GET", "^/api/retail/prices", 500, "InternalError", "boom", times=100)
    clock.advance(timedelta(hours=12))
    provider.reconcile(clock.now())
    assert prices(provider, "Standard_D2_v4")["on-demand"] == pytest.approx(API_D2_V4 * 2)


def test_static_pricing_option_never_calls_the_api(
    make_provider: Callable[..., AzureProvider], fake: FakeAzure
) -> None:
    provider = make_provider(pricing="static")
    assert prices(provider, "Standard_D2_v4")["on-demand"] == STATIC_D2_V4
    assert price_requests(fake) == []


def test_unknown_skus_are_priced_last(provider: AzureProvider, fake: FakeAzure) -> None:
    new = dict(next(s for s in fake.skus if s["name"] == "Standard_D2s_v5"))
    new["name"], new["size"] = "Standard_D2ls_v5", "D2ls_v5"
    fake.skus.append(new)
    offered = prices(provider, "Standard_D2ls_v5")
    assert offered == {"on-demand": MISSING_PRICE, "spot": MISSING_PRICE}
