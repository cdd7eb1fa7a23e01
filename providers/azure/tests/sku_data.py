"""Real-shaped Resource SKU payloads for ``japaneast`` (zones 1-3), as ARM returns them from
``GET /subscriptions/{id}/providers/Microsoft.Compute/skus``.

The shapes (capability names and value formats, ``locationInfo``, ``restrictions``) follow
real responses; the set is a realistic subset: B, D, E and F series v2-v5, one Arm64 size,
two supported GPU sizes, and sizes every filter must drop.
"""

from __future__ import annotations

from typing import Any

REGION = "japaneast"
ZONES = ["1", "2", "3"]

# name, family, vCPUs, MemoryGB, premium IO, accelerated networking, cached disk bytes,
# max resource volume MB, GPUs, arch
_ROWS: list[tuple[str, str, int, float, bool, bool, int, int, int, str]] = [
    ("Standard_B1s", "standardBSFamily", 1, 1, True, False, 0, 4096, 0, "x64"),
    ("Standard_B2s", "standardBSFamily", 2, 4, True, False, 0, 8192, 0, "x64"),
    ("Standard_B2ms", "standardBSFamily", 2, 8, True, False, 0, 16384, 0, "x64"),
    ("Standard_A1_v2", "standardAv2Family", 1, 2, False, False, 0, 10240, 0, "x64"),
    ("Standard_D2_v2", "standardDv2Family", 2, 7, False, True, 0, 102400, 0, "x64"),
    ("Standard_D2_v3", "standardDv3Family", 2, 8, False, True, 0, 51200, 0, "x64"),
    ("Standard_D4_v3", "standardDv3Family", 4, 16, False, True, 0, 102400, 0, "x64"),
    ("Standard_D2s_v3", "standardDSv3Family", 2, 8, True, True, 53687091200, 16384, 0, "x64"),
    ("Standard_D2_v4", "standardDv4Family", 2, 8, False, True, 0, 0, 0, "x64"),
    ("Standard_D4_v4", "standardDv4Family", 4, 16, False, True, 0, 0, 0, "x64"),
    ("Standard_D8_v4", "standardDv4Family", 8, 32, False, True, 0, 0, 0, "x64"),
    ("Standard_D16_v4", "standardDv4Family", 16, 64, False, True, 0, 0, 0, "x64"),
    ("Standard_D2s_v5", "standardDSv5Family", 2, 8, True, True, 0, 0, 0, "x64"),
    ("Standard_D4s_v5", "standardDSv5Family", 4, 16, True, True, 0, 0, 0, "x64"),
    ("Standard_D8s_v5", "standardDSv5Family", 8, 32, True, True, 0, 0, 0, "x64"),
    ("Standard_D16s_v5", "standardDSv5Family", 16, 64, True, True, 0, 0, 0, "x64"),
    ("Standard_D2pls_v5", "standardDPLSv5Family", 2, 4, True, True, 0, 0, 0, "Arm64"),
    ("Standard_DC2s_v3", "standardDCSv3Family", 2, 16, True, True, 0, 0, 0, "x64"),
    ("Standard_E8s_v3", "standardESv3Family", 8, 64, True, True, 214748364800, 131072, 0, "x64"),
    ("Standard_E4s_v4", "standardESv4Family", 4, 32, True, True, 0, 0, 0, "x64"),
    ("Standard_E2s_v5", "standardESv5Family", 2, 16, True, True, 0, 0, 0, "x64"),
    ("Standard_E4s_v5", "standardESv5Family", 4, 32, True, True, 0, 0, 0, "x64"),
    ("Standard_E8s_v5", "standardESv5Family", 8, 64, True, True, 0, 0, 0, "x64"),
    ("Standard_E16s_v5", "standardESv5Family", 16, 128, True, True, 0, 0, 0, "x64"),
    ("Standard_E16as_v5", "standardEASv5Family", 16, 128, True, True, 0, 0, 0, "x64"),
    ("Standard_E16ds_v5", "standardEDSv5Family", 16, 128, True, True, 0, 614400, 0, "x64"),
    ("Standard_F2s_v2", "standardFSv2Family", 2, 4, True, True, 34359738368, 16384, 0, "x64"),
    ("Standard_F4s_v2", "standardFSv2Family", 4, 8, True, True, 68719476736, 32768, 0, "x64"),
    ("Standard_F8s_v2", "standardFSv2Family", 8, 16, True, True, 137438953472, 65536, 0, "x64"),
    ("Standard_F16s_v2", "standardFSv2Family", 16, 32, True, True, 274877906944, 131072, 0, "x64"),
    ("Standard_M8-2ms", "standardMSFamily", 8, 218.75, True, True, 0, 256000, 0, "x64"),
    ("Standard_NC4as_T4_v3", "Standard NCASv3_T4 Family", 4, 28, True, True, 0, 180224, 1, "x64"),
    ("Standard_NC6s_v3", "standardNCSv3Family", 6, 112, True, False, 0, 344064, 1, "x64"),
    ("Standard_NV6", "standardNVFamily", 6, 56, False, False, 0, 389120, 1, "x64"),
]

#: SKU name -> restrictions, as ARM reports them.
_RESTRICTIONS: dict[str, list[dict[str, Any]]] = {
    "Standard_D2_v2": [
        {
            "type": "Location",
            "values": [REGION],
            "restrictionInfo": {"locations": [REGION]},
            "reasonCode": "NotAvailableForSubscription",
        }
    ],
    "Standard_E4s_v4": [
        {
            "type": "Zone",
            "values": [REGION],
            "restrictionInfo": {"locations": [REGION], "zones": ["3"]},
            "reasonCode": "NotAvailableForSubscription",
        }
    ],
}


def _capabilities(
    row: tuple[str, str, int, float, bool, bool, int, int, int, str],
) -> list[dict[str, str]]:
    name, _family, cpus, memory, premium, accelerated, cached, resource_mb, gpus, arch = row
    ephemeral = cached > 0 or resource_mb > 0
    caps = {
        "MaxResourceVolumeMB": str(resource_mb),
        "OSVhdSizeMB": "1047552",
        "vCPUs": str(cpus),
        "MemoryPreservingMaintenanceSupported": "True",
        "HyperVGenerations": "V1,V2" if arch == "x64" else "V2",
        "MemoryGB": f"{memory:g}",
        "MaxDataDiskCount": str(max(4, cpus * 2)),
        "CpuArchitectureType": arch,
        "LowPriorityCapable": "False" if name.startswith("Standard_B") else "True",
        "PremiumIO": "True" if premium else "False",
        "VMDeploymentTypes": "IaaS",
        "vCPUsAvailable": str(cpus),
        "ACUs": "195",
        "vCPUsPerCore": "2" if cpus > 1 else "1",
        "EphemeralOSDiskSupported": "True" if ephemeral else "False",
        "EncryptionAtHostSupported": "True",
        "CapacityReservationSupported": "True",
        "AcceleratedNetworkingEnabled": "True" if accelerated else "False",
        "RdmaEnabled": "False",
        "MaxNetworkInterfaces": str(max(2, cpus // 2)),
    }
    if ephemeral:
        caps["SupportedEphemeralOSDiskPlacements"] = (
            "ResourceDisk,CacheDisk" if cached else "ResourceDisk"
        )
    if cached:
        caps["CachedDiskBytes"] = str(cached)
    if gpus:
        caps["GPUs"] = str(gpus)
    return [{"name": k, "value": v} for k, v in caps.items()]


def sku_payloads(region: str = REGION) -> list[dict[str, Any]]:
    """Every SKU of the region, plus a disk SKU ARM lists too (not a VM: ignored)."""
    skus: list[dict[str, Any]] = []
    for row in _ROWS:
        name = row[0]
        skus.append(
            {
                "resourceType": "virtualMachines",
                "name": name,
                "tier": "Standard",
                "size": name.removeprefix("Standard_"),
                "family": row[1],
                "locations": [region],
                "locationInfo": [
                    {
                        "location": region,
                        "zones": ZONES,
                        "zoneDetails": [],
                    }
                ],
                "capabilities": _capabilities(row),
                "restrictions": _RESTRICTIONS.get(name, []),
            }
        )
    skus.append(
        {
            "resourceType": "disks",
            "name": "Premium_LRS",
            "tier": "Premium",
            "size": "P1",
            "family": "",
            "locations": [region],
            "locationInfo": [{"location": region, "zones": ZONES}],
            "capabilities": [{"name": "MaxSizeGiB", "value": "4"}],
            "restrictions": [],
        }
    )
    return skus


def price_items(region: str = REGION, factor: float = 1.0) -> list[dict[str, Any]]:
    """Retail Prices API rows for the region: Linux on-demand and spot, plus the Windows and
    Low Priority rows the provider must skip. ``factor`` scales prices so tests can tell the
    API's prices from the bundled table's."""
    from nodewright_azure.pricing import static_prices

    items: list[dict[str, Any]] = []
    for sku, price in sorted(static_prices(region).items()):
        short = sku.removeprefix("Standard_").replace("_", " ")
        base = {
            "currencyCode": "USD",
            "armRegionName": region,
            "location": "JA East",
            "armSkuName": sku,
            "serviceName": "Virtual Machines",
            "serviceFamily": "Compute",
            "unitOfMeasure": "1 Hour",
            "type": "Consumption",
            "priceType": "Consumption",
        }
        series = f"Virtual Machines {sku.split('_')[1][0]} Series"
        items.append(
            {
                **base,
                "retailPrice": round(price * factor, 6),
                "skuName": short,
                "meterName": short,
                "productName": series,
            }
        )
        items.append(
            {
                **base,
                "retailPrice": round(price * factor * 0.2, 6),
                "skuName": f"{short} Spot",
                "meterName": f"{short} Spot",
                "productName": series,
            }
        )
        items.append(
            {
                **base,
                "retailPrice": round(price * factor * 0.1, 6),
                "skuName": f"{short} Low Priority",
                "meterName": f"{short} Low Priority",
                "productName": series,
            }
        )
        items.append(
            {
                **base,
                "retailPrice": round(price * factor * 1.9, 6),
                "skuName": short,
                "meterName": short,
                "productName": f"{series} Windows",
            }
        )
    return items
