"""The bundled Azure catalog behind ``azure.offline=LOCATION``: VM sizes (Resource SKU
payloads), zones, prices and the node image version (``catalog.json.gz``, built by
``scripts/generate_offline_catalog.py``; its ``sources`` field says where each part comes
from)."""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from nodewright.plugin import decode_catalog

CATALOG_FILE = "catalog.json.gz"
#: Spot costs this share of on-demand, fixed per (size, location) within the band: an
#: assumption, not a quote (Azure's spot prices move with demand).
SPOT_SHARE_LOW = 0.15
SPOT_SHARE_HIGH = 0.30


@dataclass(frozen=True)
class OfflineCatalog:
    document: dict[str, Any]

    @property
    def locations(self) -> list[str]:
        return sorted(self.document["regions"])

    @property
    def sources(self) -> dict[str, str]:
        sources: dict[str, str] = self.document["sources"]
        return sources

    @property
    def image_version(self) -> dict[str, str]:
        version: dict[str, str] = self.document["image_version"]
        return version

    def zones(self, location: str) -> list[str]:
        return list(self.document["regions"][location]["zones"])

    def skus(self, location: str) -> list[dict[str, Any]]:
        """Resource SKU payloads as ARM lists them for ``location``."""
        zones = self.zones(location)
        return [
            {
                **copy.deepcopy(sku),
                "locations": [location],
                "locationInfo": [{"location": location, "zones": zones, "zoneDetails": []}],
                "restrictions": [],
            }
            for sku in self.document["skus"]
        ]

    def listed(self, location: str) -> frozenset[str]:
        """The sizes whose price is the bundled list price (the others are modelled)."""
        return frozenset(self.document["regions"][location]["listed"])

    def on_demand_price(self, location: str, size: str) -> float | None:
        price = self.document["regions"][location]["on_demand"].get(size)
        return float(price) if price is not None else None

    def spot_price(self, location: str, size: str) -> float | None:
        on_demand = self.on_demand_price(location, size)
        if on_demand is None:
            return None
        digest = hashlib.sha256(f"{size}/{location}".encode()).digest()
        fraction = int.from_bytes(digest[:4], "big") / 2**32
        share = SPOT_SHARE_LOW + (SPOT_SHARE_HIGH - SPOT_SHARE_LOW) * fraction
        return round(on_demand * share, 6)


@cache
def load_catalog() -> OfflineCatalog:
    data = resources.files("nodewright_azure.offline").joinpath(CATALOG_FILE).read_bytes()
    return OfflineCatalog(decode_catalog(data))
