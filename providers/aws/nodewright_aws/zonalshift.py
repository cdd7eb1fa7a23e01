"""ARC zonal shifts (Karpenter's ``--enable-zonal-shift``): with ``aws.enable-zonal-shift``
the provider reads the zonal shifts of the EKS cluster (ARC ``GetManagedResource`` on the
cluster's ARN from DescribeCluster) every 30 seconds, and offers nothing in a zone an applied,
unexpired shift moves traffic away from."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import botocore.exceptions

from nodewright.plugin import ProviderError
from nodewright_aws.clients import AWSClients, aws_errors, error_text
from nodewright_aws.cluster import EKSCluster

log = logging.getLogger(__name__)

#: How often the shifts are read again (Karpenter's zonal shift controller period).
ZONAL_SHIFT_REFRESH = timedelta(seconds=30)


@dataclass(frozen=True)
class Shift:
    expires: datetime
    applied: bool


class ZonalShiftProvider:
    """The cluster's zonal shifts by zone ID; nothing at all unless ``enabled``."""

    def __init__(
        self,
        clients: AWSClients,
        cluster: EKSCluster,
        now: Callable[[], datetime],
        *,
        enabled: bool,
    ) -> None:
        self.clients = clients
        self.cluster = cluster
        self.now = now
        self.enabled = enabled
        self.shifts: dict[str, Shift] = {}
        self.next_refresh: datetime | None = None

    def refresh(self) -> None:
        """Read the cluster's shifts; a failure keeps what was known (and is logged)."""
        if not self.enabled:
            return
        now = self.now()
        self.next_refresh = now + ZONAL_SHIFT_REFRESH
        arn = self.cluster.description().get("arn")
        if not arn:
            log.warning("zonal shift: EKS does not describe cluster %s; no ARN", self.cluster.name)
            return
        try:
            with aws_errors("reading zonal shifts"):
                answer = self.clients.client("arc-zonal-shift").get_managed_resource(
                    resourceIdentifier=arn
                )
        except (ProviderError, botocore.exceptions.ClientError) as error:
            detail = (
                error_text(error) if isinstance(error, botocore.exceptions.ClientError) else error
            )
            log.warning("zonal shifts of %s not read: %s", arn, detail)
            return
        self.shifts = {
            shift["awayFrom"]: Shift(shift["expiryTime"], shift.get("appliedStatus") == "APPLIED")
            for shift in answer.get("zonalShifts", [])
        }

    def due(self, now: datetime) -> bool:
        return self.enabled and (self.next_refresh is None or now >= self.next_refresh)

    def shifted(self) -> frozenset[str]:
        """The zone IDs traffic is shifted away from now (read first if never read)."""
        if not self.enabled:
            return frozenset()
        if self.next_refresh is None:
            self.refresh()
        now = self.now()
        return frozenset(
            zone for zone, shift in self.shifts.items() if shift.applied and shift.expires > now
        )
