"""The KWOK catalog file and NodeOverlays of ``bench/simulate.py``'s ``reserved-10k`` and
``overlays-10k`` cases: 18 types with capacity reservations, and price-discounting overlays."""

from __future__ import annotations

import random
from typing import Any

FAMILIES = {"c": 2, "s": 4, "m": 8}  # GiB of memory per CPU
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")


def catalog() -> list[dict[str, Any]]:
    """18 amd64 types in 3 zones, spot and on-demand, and a 20-instance capacity reservation
    in test-zone-a for each 4- and 8-CPU type: with reservations the catalog is priced again
    whenever a reservation fills or frees, which is what the overlay cases weigh."""
    types = []
    for family, gib in FAMILIES.items():
        for cpu in (1, 2, 4, 8, 16, 32):
            name = f"{family}-{cpu}x-amd64-linux"
            price = cpu * {"c": 0.025, "s": 0.03, "m": 0.04}[family]
            offerings: list[dict[str, Any]] = [
                {"zone": zone, "capacityType": kind, "price": round(price * factor, 5)}
                for zone in ZONES
                for kind, factor in (("on-demand", 1.0), ("spot", 0.4))
            ]
            if cpu in (4, 8):
                offerings.append(
                    {
                        "zone": ZONES[0],
                        "capacityType": "reserved",
                        "price": round(price * 0.01, 6),
                        "reservationID": f"cr-{family}{cpu}",
                        "reservationCapacity": 20,
                    }
                )
            types.append(
                {
                    "name": name,
                    "architecture": "amd64",
                    "operatingSystems": ["linux"],
                    "resources": {"cpu": str(cpu), "memory": f"{cpu * gib}Gi", "pods": "110"},
                    "offerings": offerings,
                }
            )
    return types


def overlays(count: int) -> list[dict[str, Any]]:
    """``count`` NodeOverlays of distinct weights: price discounts on three types each, every
    fifth one also adding a device-plugin resource."""
    rng = random.Random(7)
    names = [t["name"] for t in catalog()]
    made = []
    for index in range(count):
        spec: dict[str, Any] = {
            "weight": index + 1,
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": sorted(rng.sample(names, 3)),
                }
            ],
            "priceAdjustment": f"-{index % 9 + 1}%",
        }
        if index % 5 == 0:
            spec["capacity"] = {"example.com/device": "1"}
        made.append(
            {
                "apiVersion": "karpenter.sh/v1alpha1",
                "kind": "NodeOverlay",
                "metadata": {"name": f"overlay-{index:02d}"},
                "spec": spec,
            }
        )
    return made
