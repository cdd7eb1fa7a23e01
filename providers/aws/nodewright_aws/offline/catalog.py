"""The bundled EC2 catalog behind ``aws.offline=REGION``: instance types, per-zone offerings,
zone IDs and prices (``catalog.json.gz``, built by ``scripts/generate_offline_catalog.py``;
its ``sources`` field says where each part comes from)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from nodewright.plugin import decode_catalog

CATALOG_FILE = "catalog.json.gz"
#: Spot costs this share of on-demand, varied per (type, zone) within the band below, so
#: zones differ as they do on EC2. An assumption, not a quote (EC2's spot prices move).
SPOT_SHARE_LOW = 0.30
SPOT_SHARE_HIGH = 0.45


@dataclass(frozen=True)
class OfflineCatalog:
    """The parsed catalog; ``regions`` maps a region to its zones and offerings."""

    document: dict[str, Any]

    @property
    def regions(self) -> list[str]:
        return sorted(self.document["regions"])

    @property
    def instance_types(self) -> dict[str, dict[str, Any]]:
        types: dict[str, dict[str, Any]] = self.document["instance_types"]
        return types

    @property
    def sources(self) -> dict[str, str]:
        sources: dict[str, str] = self.document["sources"]
        return sources

    @property
    def listed(self) -> frozenset[str]:
        """The types whose price is a list price (the others are modelled)."""
        return frozenset(self.document["listed"])

    def zones(self, region: str) -> list[tuple[str, str]]:
        """(zone, zone ID) of a region, in order."""
        return [(name, zone_id) for name, zone_id in self.document["regions"][region]["zones"]]

    def offerings(self, region: str) -> dict[str, list[str]]:
        """Instance type -> the zones of ``region`` that offer it."""
        zones = [name for name, _ in self.zones(region)]
        found = self.document["regions"][region]["offerings"]
        return {name: [zones[i] for i in indexes] for name, indexes in found.items()}

    def on_demand_price(self, instance_type: str) -> float | None:
        price = self.document["prices"].get(instance_type)
        return float(price) if price is not None else None

    def spot_price(self, instance_type: str, zone: str) -> float | None:
        on_demand = self.on_demand_price(instance_type)
        if on_demand is None:
            return None
        return round(on_demand * spot_share(instance_type, zone), 5)


def spot_share(instance_type: str, zone: str) -> float:
    """A fixed share of on-demand in [SPOT_SHARE_LOW, SPOT_SHARE_HIGH) per (type, zone)."""
    digest = hashlib.sha256(f"{instance_type}/{zone}".encode()).digest()
    fraction = int.from_bytes(digest[:4], "big") / 2**32
    return SPOT_SHARE_LOW + (SPOT_SHARE_HIGH - SPOT_SHARE_LOW) * fraction


@cache
def load_catalog() -> OfflineCatalog:
    data = resources.files("nodewright_aws.offline").joinpath(CATALOG_FILE).read_bytes()
    return OfflineCatalog(decode_catalog(data))
