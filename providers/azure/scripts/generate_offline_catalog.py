"""Build ``nodewright_azure/offline/catalog.json.gz``, the catalog behind
``azure.offline=LOCATION``.

Everything comes from files in this repository; nothing is downloaded::

    uv run --frozen python providers/azure/scripts/generate_offline_catalog.py          # write
    uv run --frozen python providers/azure/scripts/generate_offline_catalog.py --check  # compare

No package on PyPI ships Azure's Resource SKU list or its prices (the Azure SDKs carry the
API's models, not its data), so the sources are:

* VM sizes: the Resource SKU payloads of the provider's test fixture
  (``providers/azure/tests/sku_data.py``: 34 sizes of the B, D, E, F series v2 to v5, one
  Arm64 size and GPU sizes, in the shape ARM returns them), without the subscription's
  restrictions the fixture adds, offered in zones 1 to 3 of every bundled location;
* on-demand prices: the provider's ``static_prices.json`` (Linux list prices of eastus and
  japaneast); sizes it does not list get a price fitted to it (per vCPU and per GiB);
* locations: the ones ``static_prices.json`` prices;
* spot prices are not stored: the offline transport derives them from on-demand.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nodewright.plugin import write_or_check_catalog

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "nodewright_azure"
TARGET = PACKAGE / "offline" / "catalog.json.gz"
STATIC_PRICES = PACKAGE / "static_prices.json"
FIXTURE = ROOT / "tests" / "sku_data.py"
FORMAT = 1
ZONES = ["1", "2", "3"]
#: The AKS node image version every community gallery image answers with offline.
IMAGE_VERSION = {"name": "202601.05.0", "publishedDate": "2026-01-06T08:00:00+00:00"}


def _fixture() -> Any:
    spec = importlib.util.spec_from_file_location("sku_data", FIXTURE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _capability(sku: Mapping[str, Any], name: str) -> float:
    for item in sku.get("capabilities", []):
        if item["name"] == name:
            return float(item["value"])
    return 0.0


def price_model(skus: list[dict[str, Any]], listed: Mapping[str, float]) -> dict[str, float]:
    """Least squares price = a*vCPU + b*GiB over the listed sizes without GPUs."""
    rows = [
        (_capability(s, "vCPUs"), _capability(s, "MemoryGB"), listed[s["name"]])
        for s in skus
        if s["name"] in listed and not _capability(s, "GPUs")
    ]
    sxx = sum(c * c for c, _, _ in rows)
    sxy = sum(c * m for c, m, _ in rows)
    syy = sum(m * m for _, m, _ in rows)
    sxp = sum(c * p for c, _, p in rows)
    syp = sum(m * p for _, m, p in rows)
    det = sxx * syy - sxy * sxy
    return {
        "per_vcpu": round((sxp * syy - syp * sxy) / det, 6),
        "per_gib": round((syp * sxx - sxp * sxy) / det, 6),
    }


def build(generated: str) -> dict[str, Any]:
    """The catalog document (``generated`` is the only field that is not reproducible)."""
    fixture = _fixture()
    skus = []
    for payload in fixture.sku_payloads("offline"):
        if payload["resourceType"] != "virtualMachines":
            continue
        kept = {
            k: v
            for k, v in payload.items()
            if k not in ("locations", "locationInfo", "restrictions")
        }
        skus.append(kept)
    skus.sort(key=lambda s: s["name"])
    static = json.loads(STATIC_PRICES.read_text())
    regions: dict[str, Any] = {}
    models: dict[str, Any] = {}
    for location in sorted(k for k in static if not k.startswith("_")):
        listed = {str(k): float(v) for k, v in static[location].items()}
        model = price_model(skus, listed)
        models[location] = model
        prices = {}
        for sku in skus:
            name = sku["name"]
            modelled = model["per_vcpu"] * _capability(sku, "vCPUs") + model[
                "per_gib"
            ] * _capability(sku, "MemoryGB")
            prices[name] = listed.get(name, round(max(modelled, 0.001), 5))
        regions[location] = {
            "zones": ZONES,
            "on_demand": prices,
            "listed": sorted(n for n in listed if n in prices),
        }
    return {
        "format": FORMAT,
        "generated": generated,
        "sources": {
            "skus": "providers/azure/tests/sku_data.py: Resource SKU payloads as ARM returns "
            f"them ({len(skus)} VM sizes: B, D, E, F series v2-v5, one Arm64, GPU sizes), "
            "without subscription restrictions",
            "zones": "zones 1-3 in every location (an assumption: real zone coverage varies)",
            "prices": "nodewright_azure/static_prices.json: approximate Linux on-demand list "
            "prices; sizes it does not list are modelled per vCPU and GiB (price_model); spot "
            "is derived, not quoted",
            "images": f"every AKS community gallery image answers version {IMAGE_VERSION['name']}",
        },
        "price_model": models,
        "skus": skus,
        "regions": regions,
        "image_version": IMAGE_VERSION,
    }


def summary(target: Path, document: Mapping[str, Any]) -> str:
    return (
        f"wrote {target} ({target.stat().st_size} bytes): {len(document['skus'])} VM sizes, "
        f"locations {', '.join(document['regions'])}"
    )


def main(argv: list[str]) -> int:
    return write_or_check_catalog(
        TARGET, build(datetime.now(UTC).date().isoformat()), argv, summary
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
