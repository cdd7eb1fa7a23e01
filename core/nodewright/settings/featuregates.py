"""Karpenter's feature gates, as ``nodewright run`` (``--feature-gates`` / ``FEATURE_GATES``)
and ``nodewright simulate`` take them."""

from __future__ import annotations

#: Karpenter's feature gates and their defaults.
DEFAULT_FEATURE_GATES = (
    "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,"
    "NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"
)
KNOWN_FEATURE_GATES = frozenset(
    {
        "NodeRepair",
        "ReservedCapacity",
        "SpotToSpotConsolidation",
        "NodeOverlay",
        "StaticCapacity",
        "CapacityBuffer",
    }
)


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``A=true,B=false`` -> {"A": True, "B": False}; unknown gates and values are errors."""
    gates: dict[str, bool] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise ValueError(f"{part!r} is not NAME=true or NAME=false")
        if name not in KNOWN_FEATURE_GATES:
            raise ValueError(
                f"unknown feature gate {name!r}; known: {', '.join(sorted(KNOWN_FEATURE_GATES))}"
            )
        gates[name] = value == "true"
    return gates
