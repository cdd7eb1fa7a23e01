"""Build ``nodewright_aws/offline/catalog.json.gz``, the catalog behind ``aws.offline=REGION``.

Everything comes from installed packages; nothing is downloaded::

    uv run --frozen python providers/aws/scripts/generate_offline_catalog.py          # write
    uv run --frozen python providers/aws/scripts/generate_offline_catalog.py --check  # compare

Sources:

* instance types, per-zone offerings and zone IDs: moto's bundled EC2 data (moto is a test
  dependency; its ``ec2/resources`` files are DescribeInstanceTypes and
  DescribeInstanceTypeOfferings answers recorded from AWS, and its zone table maps zone names
  to zone IDs). Only the fields the provider reads are kept.
* on-demand prices: the provider's own ``static_prices.json`` (us-east-1 Linux list prices)
  for the types it lists; every other type gets a modelled price fitted to that table (per
  vCPU, per GiB of memory, per GiB of GPU memory, with a Graviton and an AMD factor). No
  package on PyPI ships EC2 prices, so the model is the honest fallback: it is marked as such
  in the catalog and in the simulation's events. Every region uses the same prices.
* spot prices are not stored: the offline client derives them from on-demand (see
  ``nodewright_aws.offline.catalog.spot_price``).
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from nodewright.plugin import write_or_check_catalog

PACKAGE = Path(__file__).resolve().parents[1] / "nodewright_aws"
TARGET = PACKAGE / "offline" / "catalog.json.gz"
STATIC_PRICES = PACKAGE / "static_prices.json"
FORMAT = 1

#: The fields of DescribeInstanceTypes the provider reads (nested dicts: kept sub-fields;
#: True: the whole value). Lists of dicts keep the listed sub-fields of each item.
KEPT: dict[str, Any] = {
    "InstanceType": True,
    "BareMetal": True,
    "BurstablePerformanceSupported": True,
    "Hypervisor": True,
    "SupportedUsageClasses": True,
    "SupportedVirtualizationTypes": True,
    "VCpuInfo": {"DefaultVCpus": True},
    "MemoryInfo": {"SizeInMiB": True},
    "ProcessorInfo": {
        "SupportedArchitectures": True,
        "Manufacturer": True,
        "SustainedClockSpeedInGhz": True,
        "SupportedFeatures": True,
    },
    "PlacementGroupInfo": {"SupportedStrategies": True},
    "EbsInfo": {
        "EbsOptimizedSupport": True,
        "EbsOptimizedInfo": {"MaximumBandwidthInMbps": True},
    },
    "NetworkInfo": {
        "DefaultNetworkCardIndex": True,
        "MaximumNetworkInterfaces": True,
        "Ipv4AddressesPerInterface": True,
        "EncryptionInTransitSupported": True,
        "EnaSupport": True,
        "EfaInfo": {"MaximumEfaInterfaces": True},
        "NetworkCards": {
            "NetworkCardIndex": True,
            "MaximumNetworkInterfaces": True,
            "BaselineBandwidthInGbps": True,
        },
    },
    "InstanceStorageInfo": {"TotalSizeInGB": True, "NvmeSupport": True},
    "GpuInfo": True,
    "InferenceAcceleratorInfo": True,
    "NeuronInfo": True,
}


def trim(value: Any, kept: Any) -> Any:
    """``value`` with only the ``kept`` fields (recursively; lists item by item)."""
    if kept is True:
        return value
    if isinstance(value, list):
        return [trim(item, kept) for item in value]
    if not isinstance(value, dict):
        return value
    return {k: trim(v, kept[k]) for k, v in value.items() if k in kept}


def _moto_file(*parts: str) -> Any:
    path = resources.files("moto").joinpath("ec2", "resources", *parts)
    return json.loads(gzip.decompress(path.read_bytes()))


def _usable(info: Mapping[str, Any]) -> bool:
    archs = info.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
    return "hvm" in info.get("SupportedVirtualizationTypes", []) and bool(
        set(archs) & {"x86_64", "arm64"}
    )


def _features(info: Mapping[str, Any]) -> tuple[float, float, float]:
    vcpus = float(info.get("VCpuInfo", {}).get("DefaultVCpus", 0))
    gib = float(info.get("MemoryInfo", {}).get("SizeInMiB", 0)) / 1024
    gpu_gib = float(info.get("GpuInfo", {}).get("TotalGpuMemoryInMiB", 0)) / 1024
    accelerators = info.get("NeuronInfo", {}).get("NeuronDevices", []) + info.get(
        "InferenceAcceleratorInfo", {}
    ).get("Accelerators", [])
    for device in accelerators:
        memory = device.get("MemoryInfo", {}).get("SizeInMiB", 0)
        gpu_gib += float(device.get("Count", 0)) * float(memory) / 1024
    return vcpus, gib, gpu_gib


def _arm(info: Mapping[str, Any]) -> bool:
    return "arm64" in info.get("ProcessorInfo", {}).get("SupportedArchitectures", [])


def _amd(info: Mapping[str, Any]) -> bool:
    return info.get("ProcessorInfo", {}).get("Manufacturer") == "AMD"


def _burstable(info: Mapping[str, Any]) -> bool:
    return bool(info.get("BurstablePerformanceSupported"))


def _solve(rows: list[tuple[tuple[float, float, float], float]]) -> tuple[float, float, float]:
    """Least squares for price = a*vcpu + b*gib + c*gpu_gib (normal equations, 3x3)."""
    matrix = [[sum(x[i] * x[j] for x, _ in rows) for j in range(3)] for i in range(3)]
    vector = [sum(x[i] * y for x, y in rows) for i in range(3)]
    # Gaussian elimination with partial pivoting.
    augmented = [[*row, v] for row, v in zip(matrix, vector, strict=True)]
    for col in range(3):
        pivot = max(range(col, 3), key=lambda r: abs(augmented[r][col]))
        augmented[col], augmented[pivot] = augmented[pivot], augmented[col]
        for r in range(3):
            if r != col and augmented[col][col]:
                factor = augmented[r][col] / augmented[col][col]
                augmented[r] = [
                    a - factor * b for a, b in zip(augmented[r], augmented[col], strict=True)
                ]
    a, b, c = (augmented[i][3] / augmented[i][i] for i in range(3))
    return a, b, c


def price_model(
    infos: Mapping[str, Mapping[str, Any]], listed: Mapping[str, float]
) -> dict[str, float]:
    """Coefficients fitted to the listed prices: fixed-performance Intel types fix the
    per-unit prices, then the median ratio of Graviton and of AMD types to that fit gives
    their factors. Burstable types (t*) are priced by memory alone, at the median listed
    Intel burstable price per GiB."""
    known = {name: price for name, price in listed.items() if name in infos}
    bursting = [
        p / _features(infos[n])[1]
        for n, p in sorted(known.items())
        if _burstable(infos[n]) and not _arm(infos[n]) and not _amd(infos[n])
    ]
    known = {n: p for n, p in known.items() if not _burstable(infos[n])}
    intel = [
        (_features(infos[n]), p)
        for n, p in sorted(known.items())
        if not _arm(infos[n]) and not _amd(infos[n])
    ]
    a, b, c = _solve(intel)

    def base(name: str) -> float:
        vcpus, gib, gpu_gib = _features(infos[name])
        return a * vcpus + b * gib + c * gpu_gib

    arm = [p / base(n) for n, p in sorted(known.items()) if _arm(infos[n])]
    amd = [p / base(n) for n, p in sorted(known.items()) if _amd(infos[n])]
    return {
        "per_vcpu": round(a, 6),
        "per_gib": round(b, 6),
        "per_gpu_gib": round(c, 6),
        "arm64_factor": round(statistics.median(arm), 4) if arm else 1.0,
        "amd_factor": round(statistics.median(amd), 4) if amd else 1.0,
        "burstable_per_gib": round(statistics.median(bursting), 6) if bursting else b,
    }


def modelled_price(info: Mapping[str, Any], model: Mapping[str, float]) -> float:
    vcpus, gib, gpu_gib = _features(info)
    price = model["per_vcpu"] * vcpus + model["per_gib"] * gib + model["per_gpu_gib"] * gpu_gib
    if _burstable(info):
        price = model["burstable_per_gib"] * gib
    if _arm(info):
        price *= model["arm64_factor"]
    elif _amd(info):
        price *= model["amd_factor"]
    return round(max(price, 0.0001), 5)


def build(generated: str) -> dict[str, Any]:
    """The catalog document (``generated`` is the only field that is not reproducible)."""
    from moto.ec2.models.availability_zones_and_regions import (  # noqa: PLC0415
        RegionsAndZonesBackend,
    )

    raw: dict[str, dict[str, Any]] = _moto_file("instance_types.json.gz")
    infos = {name: trim(info, KEPT) for name, info in sorted(raw.items()) if _usable(info)}
    static = json.loads(STATIC_PRICES.read_text())
    listed: dict[str, float] = static["regions"]["us-east-1"]
    model = price_model(infos, listed)
    prices = {
        name: listed[name] if name in listed else modelled_price(info, model)
        for name, info in infos.items()
    }
    regions: dict[str, Any] = {}
    offering_dir = resources.files("moto").joinpath(
        "ec2", "resources", "instance_type_offerings", "availability-zone"
    )
    zone_table = RegionsAndZonesBackend.zones
    for entry in sorted(offering_dir.iterdir(), key=lambda p: p.name):
        region = entry.name.removesuffix(".json.gz")
        offerings = json.loads(gzip.decompress(entry.read_bytes()))
        zone_ids = {z.name: z.zone_id for z in zone_table.get(region, [])}
        zones = sorted({o["Location"] for o in offerings} & zone_ids.keys())
        if not zones:
            continue
        index = {zone: i for i, zone in enumerate(zones)}
        by_type: dict[str, list[int]] = {}
        for offering in offerings:
            name, zone = offering["InstanceType"], offering["Location"]
            if name in infos and zone in index:
                by_type.setdefault(name, []).append(index[zone])
        regions[region] = {
            "zones": [[zone, zone_ids[zone]] for zone in zones],
            "offerings": {name: sorted(set(z)) for name, z in sorted(by_type.items())},
        }
    moto_version = metadata.version("moto")
    return {
        "format": FORMAT,
        "generated": generated,
        "sources": {
            "instance_types": f"moto {moto_version}: ec2/resources/instance_types.json.gz "
            "(recorded DescribeInstanceTypes answers; only the fields the provider reads)",
            "offerings": f"moto {moto_version}: ec2/resources/instance_type_offerings/"
            "availability-zone/<region>.json.gz",
            "zones": f"moto {moto_version}: ec2.models.availability_zones_and_regions",
            "prices": "nodewright_aws/static_prices.json, "
            f"{static.get('generated', 'undated')}: us-east-1 Linux on-demand list prices for "
            f"{len([n for n in listed if n in infos])} types; every other type is modelled "
            "(see price_model); the same prices in every region; spot is derived, not quoted",
        },
        "price_model": model,
        "listed": sorted(n for n in listed if n in infos),
        "instance_types": infos,
        "prices": prices,
        "regions": regions,
    }


def summary(target: Path, document: Mapping[str, Any]) -> str:
    return (
        f"wrote {target} ({target.stat().st_size // 1024} KiB): "
        f"{len(document['instance_types'])} instance types, {len(document['regions'])} regions, "
        f"{len(document['listed'])} listed prices"
    )


def main(argv: list[str]) -> int:
    today = datetime.now(UTC).date().isoformat()
    return write_or_check_catalog(TARGET, build(today), argv, summary)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
