"""The network interfaces of a launch template (Karpenter's ``generateNetworkInterfaces``).

In order of precedence:

- the class lists ``networkInterfaces``: one interface per entry, at its card and device index
  and of its type; an ``efa-only`` interface carries no IP traffic, so it gets no public
  address and no connection tracking;
- the NodeClaim requests ``vpc.amazonaws.com/efa``: one EFA interface per EFA the instance
  type has, one per network card (device index 0 on card 0, 1 on the others);
- otherwise the primary interface alone.

Each carries the class's security groups and its ``connectionTracking`` timeouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodewright_aws.launchoptions import EFA_ONLY
from nodewright_aws.nodeclass import EC2NodeClassSpec

#: The interface type EC2 calls an EFA that also carries IP traffic.
EFA = "efa"


def network_interfaces(
    spec: EC2NodeClassSpec, security_groups: Sequence[str], efa_count: int = 0
) -> list[dict[str, Any]]:
    tracking = spec.connection_tracking.specification() if spec.connection_tracking else None
    public_ip = spec.associate_public_ip_address

    def interface(card: int | None, device: int, kind: str | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"DeviceIndex": device, "Groups": list(security_groups)}
        if card is not None:
            entry["NetworkCardIndex"] = card
        if kind is not None:
            entry["InterfaceType"] = kind
        if kind != EFA_ONLY:
            if public_ip is not None:
                entry["AssociatePublicIpAddress"] = public_ip
            if tracking:
                entry["ConnectionTrackingSpecification"] = dict(tracking)
        return entry

    if spec.network_interfaces:
        return [
            interface(i.network_card_index, i.device_index, i.interface_type)
            for i in spec.network_interfaces
        ]
    if efa_count:
        return [interface(card, 0 if card == 0 else 1, EFA) for card in range(efa_count)]
    return [interface(None, 0, None)]
