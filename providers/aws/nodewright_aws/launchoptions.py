"""EC2NodeClass spec parts that shape a launched instance beyond its image, storage and IMDS:
the placement group it joins, its network interfaces (EFA-only ones included), its CPU options
and its connection-tracking timeouts (Karpenter v1.11 and v1.13 additions).

Each model checks what the CRD's CEL rules and bounds check, naming the field; the rules are
declared beside the fields so the generated CRD carries them too.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from nodewright.plugin import Int32, Model, Rule, Schema, validations

PLACEMENT_GROUP_ID = re.compile(r"^pg-[0-9a-z]+$")
INTERFACE = "interface"
EFA_ONLY = "efa-only"
#: What a nitro instance type reports in ``ProcessorInfo.SupportedFeatures`` when it can run
#: nested virtual machines.
NESTED_VIRTUALIZATION_FEATURE = "nested-virtualization"


class _Open(Model):
    """Keeps fields a newer Karpenter adds (forward compatibility)."""

    model_config = ConfigDict(extra="allow")


class PlacementGroupSelector(_Open):
    """The one placement group (by name or by ID) the class's instances are launched into."""

    model_config = ConfigDict(
        json_schema_extra=validations(
            Rule(
                "has(self.name) || has(self.id)", "expected at least one, got none, ['name', 'id']"
            ),
            Rule("!(has(self.name) && has(self.id))", "'name' and 'id' are mutually exclusive"),
        )
    )

    name: Annotated[str | None, Schema(minLength=1)] = None
    id: Annotated[str | None, Schema(pattern=PLACEMENT_GROUP_ID.pattern)] = None

    @model_validator(mode="after")
    def _check(self) -> PlacementGroupSelector:
        if self.name is None and self.id is None:
            raise ValueError("placementGroupSelector: set one of 'name' or 'id'")
        if self.name is not None and self.id is not None:
            raise ValueError("placementGroupSelector: 'name' and 'id' are mutually exclusive")
        if self.name == "":
            raise ValueError("placementGroupSelector.name must not be empty")
        if self.id is not None and not PLACEMENT_GROUP_ID.match(self.id):
            raise ValueError(f"placementGroupSelector.id {self.id!r} must match pg-[0-9a-z]+")
        return self


class NetworkInterface(_Open):
    """One interface of the instance: its card and device index, ENA (``interface``) or an
    Elastic Fabric Adapter that carries no IP traffic (``efa-only``)."""

    network_card_index: Int32 = Field(ge=0)
    device_index: Int32 = Field(ge=0)
    interface_type: Literal["interface", "efa-only"]


#: The CEL rules of ``spec.networkInterfaces`` (Karpenter's, same messages).
NETWORK_INTERFACE_RULES: dict[str, Any] = validations(
    Rule(
        "self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && "
        "x.interfaceType == 'interface')",
        "networkInterfaces must include a primary interface with interfaceType='interface'",
    ),
    Rule(
        "self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && "
        "x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || "
        "self.filter(y, x.networkCardIndex == y.networkCardIndex && "
        "y.interfaceType == 'efa-only').size() == 1))",
        "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and "
        "can have at most one efa device per network card",
    ),
)


def check_network_interfaces(interfaces: list[NetworkInterface]) -> None:
    """What the CEL rules of ``spec.networkInterfaces`` refuse, as a ValueError naming it."""
    if not interfaces:
        return
    if not any(
        i.network_card_index == 0 and i.device_index == 0 and i.interface_type == INTERFACE
        for i in interfaces
    ):
        raise ValueError(
            "spec.networkInterfaces must include the primary interface (networkCardIndex 0, "
            "deviceIndex 0, interfaceType 'interface')"
        )
    seen: set[tuple[int, int]] = set()
    efa_cards: set[int] = set()
    for interface in interfaces:
        slot = (interface.network_card_index, interface.device_index)
        if slot in seen:
            raise ValueError(
                f"spec.networkInterfaces: networkCardIndex {slot[0]} deviceIndex {slot[1]} "
                "is listed twice"
            )
        seen.add(slot)
        if interface.interface_type == EFA_ONLY:
            if interface.network_card_index in efa_cards:
                raise ValueError(
                    "spec.networkInterfaces: at most one efa-only interface per network card "
                    f"(card {interface.network_card_index} has more)"
                )
            efa_cards.add(interface.network_card_index)


class CPUOptions(_Open):
    #: ``enabled`` keeps only instance types that support nested virtualization.
    nested_virtualization: Literal["enabled", "disabled"] | None = None


class ConnectionTracking(_Open):
    """Idle timeouts (seconds) of the connections EC2 tracks on the ENIs the launch template
    defines (not on EFA-only ones); nitro instance types only."""

    model_config = ConfigDict(
        json_schema_extra=validations(
            Rule(
                "has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || "
                "has(self.udpTimeout)",
                "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must "
                "be set",
            )
        )
    )

    tcp_established_timeout: Int32 | None = Field(default=None, ge=60, le=432000)
    udp_stream_timeout: Int32 | None = Field(default=None, ge=60, le=180)
    udp_timeout: Int32 | None = Field(default=None, ge=30, le=60)

    @model_validator(mode="after")
    def _check(self) -> ConnectionTracking:
        if (
            self.tcp_established_timeout is None
            and self.udp_stream_timeout is None
            and self.udp_timeout is None
        ):
            raise ValueError(
                "connectionTracking: set at least one of tcpEstablishedTimeout, "
                "udpStreamTimeout or udpTimeout"
            )
        return self

    def specification(self) -> dict[str, int]:
        """The launch template's ``ConnectionTrackingSpecification``."""
        values = {
            "TcpEstablishedTimeout": self.tcp_established_timeout,
            "UdpStreamTimeout": self.udp_stream_timeout,
            "UdpTimeout": self.udp_timeout,
        }
        return {k: v for k, v in values.items() if v is not None}
