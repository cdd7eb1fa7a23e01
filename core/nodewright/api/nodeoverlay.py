"""Karpenter's ``karpenter.sh/v1alpha1`` NodeOverlay: price and extended-resource adjustments
that apply to the instance types (and offerings) its requirements select, feature gate
``NodeOverlay``."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator

from nodewright.api.core import _quantities
from nodewright.api.meta import Condition, StrictKubeObject, StrictModel

API_VERSION = "karpenter.sh/v1alpha1"

#: Set to "true" on a NodeClaim launched from instance types whose price an overlay changed.
PRICE_OVERLAY_APPLIED_ANNOTATION = "karpenter.sh/price-overlay-applied"
#: Set to "true" on a NodeClaim launched from instance types whose capacity an overlay extended.
CAPACITY_OVERLAY_APPLIED_ANNOTATION = "karpenter.sh/capacity-overlay-applied"

#: Resources an overlay may not add or change: only extended resources are overlaid.
RESTRICTED_CAPACITY = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})

#: ``spec.price``: an absolute price.
PRICE_PATTERN = r"^\d+(\.\d+)?$"
#: ``spec.priceAdjustment``: a signed amount, or a percentage (a decrease of at most 100 %).
PRICE_ADJUSTMENT_PATTERN = (
    r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$"
)
WEIGHT_RANGE = (1, 10000)

#: Condition reasons of ``ValidationSucceeded`` = False.
REASON_RUNTIME_VALIDATION = "RuntimeValidation"
REASON_CONFLICT = "Conflict"


class NodeSelectorRequirement(StrictModel):
    """A requirement without ``minValues`` (an overlay selects, it does not ask for variety)."""

    key: str
    operator: str
    values: list[str] = Field(default_factory=list)

    @field_validator("values", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [
                str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                for v in value
            ]
        return value


class NodeOverlaySpec(StrictModel):
    #: Required by the CRD; None when the manifest leaves it out (a validation error).
    requirements: list[NodeSelectorRequirement] | None = None
    price_adjustment: str | None = None
    price: str | None = None
    capacity: dict[str, str] = Field(default_factory=dict)
    weight: int | None = None

    _normalise = field_validator("capacity", mode="before")(_quantities)


class NodeOverlayStatus(StrictModel):
    conditions: list[Condition] = Field(default_factory=list)


class NodeOverlay(StrictKubeObject):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "NodeOverlay"
    NAMESPACED: ClassVar[bool] = False

    spec: NodeOverlaySpec = Field(default_factory=NodeOverlaySpec)
    status: NodeOverlayStatus = Field(default_factory=NodeOverlayStatus)


def by_weight(overlays: list[NodeOverlay]) -> list[NodeOverlay]:
    """Overlays in the order they apply: heaviest first, and of equal weight the name later in
    the alphabet first (an unset weight counts as 0)."""
    return sorted(overlays, key=lambda o: (o.spec.weight or 0, o.name), reverse=True)
