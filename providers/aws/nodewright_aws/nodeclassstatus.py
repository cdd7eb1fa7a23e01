"""The status of an EC2NodeClass (``karpenter.k8s.aws/v1``): what the provider resolved from
the spec's selector terms (subnets, security groups, AMIs, capacity reservations) and the
instance profile it uses.

The status keeps entries as written (plain maps); the models here give the CRD their shape
(:class:`~nodewright.plugin.SchemaFrom`).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from nodewright.plugin import (
    Int32,
    Model,
    NodeClassStatus,
    ResolvedRequirement,
    Schema,
    SchemaFrom,
)

#: A capacity reservation's ID (the spec's capacity reservation selector terms check it too).
CAPACITY_RESERVATION_ID = re.compile(r"^cr-[0-9a-z]+$")
#: An AWS account ID, the owner of a capacity reservation.
OWNER_ID = re.compile(r"^[0-9]{12}$")


class SubnetStatus(Model):
    """The shape of a ``status.subnets`` entry (the status keeps entries as written)."""

    id: str
    zone: str
    zone_id: str | None = Field(default=None, alias="zoneID")


class SecurityGroupStatus(Model):
    id: str
    name: str | None = None


class AMIStatus(Model):
    id: str
    name: str | None = None
    deprecated: bool | None = None
    requirements: list[ResolvedRequirement]


class CapacityReservationStatus(Model):
    availability_zone: str
    end_time: datetime | None = None
    id: Annotated[str, Schema(pattern=CAPACITY_RESERVATION_ID.pattern)]
    instance_match_criteria: Literal["open", "targeted"]
    instance_type: str
    owner_id: Annotated[str | None, Schema(pattern=OWNER_ID.pattern)] = Field(
        default=None, alias="ownerID"
    )
    reservation_type: Literal["default", "capacity-block"] | None = None
    #: EC2 may reclaim the reservation's capacity (an interruptible ODCR).
    interruptible: bool | None = None
    state: Literal["active", "expiring"] | None = None
    available_instance_count: Int32 | None = Field(default=None, ge=0)


class EC2NodeClassStatus(NodeClassStatus):
    model_config = ConfigDict(extra="allow")

    subnets: list[Annotated[dict[str, Any], SchemaFrom(SubnetStatus)]] = Field(default_factory=list)
    security_groups: list[Annotated[dict[str, Any], SchemaFrom(SecurityGroupStatus)]] = Field(
        default_factory=list
    )
    amis: list[Annotated[dict[str, Any], SchemaFrom(AMIStatus)]] = Field(default_factory=list)
    capacity_reservations: list[
        Annotated[dict[str, Any], SchemaFrom(CapacityReservationStatus)]
    ] = Field(default_factory=list)
    instance_profile: str | None = None
