"""Which instance types an EC2NodeClass can launch at all (Karpenter's instance-type
compatibility checks): a type that fails one is not offered for the class.

- ``networkInterfaces``: the type has ENA, enough network cards, enough interfaces on each card
  used, and at least as many EFA interfaces as the class lists ``efa-only`` ones;
- ``cpuOptions.nestedVirtualization: enabled``: the type reports ``nested-virtualization``;
- a resolved placement group: the type supports the group's strategy;
- ``connectionTracking``: the type is built on the nitro hypervisor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright_aws.launchoptions import EFA_ONLY, NESTED_VIRTUALIZATION_FEATURE, NetworkInterface
from nodewright_aws.nodeclass import EC2NodeClassSpec
from nodewright_aws.placementgroup import PlacementGroup, supports


def fits_network_interfaces(
    info: Mapping[str, Any], interfaces: Sequence[NetworkInterface]
) -> bool:
    network = info.get("NetworkInfo") or {}
    cards = network.get("NetworkCards") or []
    if not cards or network.get("EnaSupport") == "unsupported":
        return False
    by_index = {int(card.get("NetworkCardIndex", 0)): card for card in cards}
    for interface in interfaces:
        card = by_index.get(interface.network_card_index)
        if card is None or int(card.get("MaximumNetworkInterfaces", 0)) <= interface.device_index:
            return False
    efa_only = sum(1 for i in interfaces if i.interface_type == EFA_ONLY)
    if efa_only:
        limit = (network.get("EfaInfo") or {}).get("MaximumEfaInterfaces")
        if limit is None or efa_only > int(limit):
            return False
    return True


def compatible(
    info: Mapping[str, Any], spec: EC2NodeClassSpec, group: PlacementGroup | None
) -> bool:
    """Whether the class can launch the type described by ``info`` (DescribeInstanceTypes)."""
    if spec.network_interfaces is not None and not fits_network_interfaces(
        info, spec.network_interfaces
    ):
        return False
    if spec.nested_virtualization():
        features = (info.get("ProcessorInfo") or {}).get("SupportedFeatures") or []
        if NESTED_VIRTUALIZATION_FEATURE not in features:
            return False
    if group is not None and not supports(info, group):
        return False
    return spec.connection_tracking is None or info.get("Hypervisor") == "nitro"
