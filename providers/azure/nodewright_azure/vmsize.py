"""The VM-size name grammar (``Azure/skewer`` ``vmsize.go``): ``D8ds_v5`` is family D, 8 vCPUs,
additive features ``ds``, version 5.

Karpenter derives ``sku-family``, ``sku-series``, ``sku-version`` and ``sku-gpu-name`` from
this parse, and drops SKUs whose names do not parse or that have constrained vCPUs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SIZE = re.compile(
    r"^([A-Z])([A-Z]?)([A-Z]?)([0-9]+)-?((?:[0-9]+)?)"
    r"((?:[abcdeiflmnotspPr]+|C+|NP)?)_?(?:NDR_)?(?:((?:xl_)?[A-Z]+[0-9]+[A-Z]*)_?)?"
    r"(_cc_)?(_[0-9]+_)?(_MI300X_)?(_H100_)?((?:[vV][1-9])?)?(_Promo)?$"
)

#: Accelerators of sizes whose names do not carry one.
_IMPLIED_ACCELERATORS = {
    "NC6s_v3": "V100",
    "NC12s_v3": "V100",
    "NC24s_v3": "V100",
    "NC24rs_v3": "V100",
    "NC6s_v2": "P100",
    "NC12s_v2": "P100",
    "NC24s_v2": "P100",
    "NC6": "K80",
    "NC12": "K80",
    "NC24": "K80",
    "NV6": "M60",
    "NV12": "M60",
    "NV24": "M60",
    "NV12s_v3": "M60",
    "NV24s_v3": "M60",
    "NV48s_v3": "M60",
}


class VMSizeError(ValueError):
    """A VM-size name outside the grammar."""


@dataclass(frozen=True)
class VMSize:
    """A parsed VM size (without the ``Standard_`` prefix)."""

    size: str
    family: str
    subfamily: str
    cpus: int
    constrained_cpus: int | None
    additive_features: str
    accelerator: str
    version: str  # as written, e.g. "v5"; "" when absent
    promo: bool

    @property
    def series(self) -> str:
        """Family, sub-family and features, with ``_<version>``: ``Ds_v5``, ``NCads_v4``."""
        base = self.family + self.subfamily + self.additive_features
        return f"{base}_{self.version}" if self.version else base

    @property
    def version_label(self) -> str | None:
        """``sku-version``: the version without its ``v``; ``1`` when the name has none."""
        if not self.version:
            return "1"
        if self.version[0] in "vV":
            return self.version[1:]
        return None


def parse_vm_size(name: str) -> VMSize:
    """Parse ``Standard_D8s_v5`` or ``D8s_v5``; a :class:`VMSizeError` names the size."""
    size = name.removeprefix("Standard_")
    match = _SIZE.match(size)
    if match is None:
        raise VMSizeError(f"VM size {name!r} does not follow the Azure size grammar")
    family, sub1, sub2, cpus, constrained, features, accelerator = match.group(1, 2, 3, 4, 5, 6, 7)
    mi300x, h100, version, promo = match.group(10, 11, 12, 13)
    accelerator = (accelerator or "").removeprefix("xl_")
    if not accelerator:
        if mi300x:
            accelerator = "MI300X"
        elif h100:
            accelerator = "H100"
        else:
            accelerator = _IMPLIED_ACCELERATORS.get(size, "")
    return VMSize(
        size=size,
        family=family,
        subfamily=sub1 + sub2,
        cpus=int(cpus),
        constrained_cpus=int(constrained) if constrained else None,
        additive_features=features or "",
        accelerator=accelerator,
        version=version or "",
        promo=bool(promo),
    )
