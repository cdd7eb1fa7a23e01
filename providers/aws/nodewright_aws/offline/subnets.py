"""The offline account's subnets: one per zone of the region (a tag selector matches all of
them), those an ID selector names (placed in the region's zones in turn), and those an
EC2NodeClass's status lists, learnt from a cluster snapshot in their own zones (a tag selector
they match gets them alone)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright_aws.offline.api import filter_values, hex_id, tag_list, tags_match, tags_of

SUBNET_FREE_ADDRESSES = 4091


class OfflineSubnets:
    """DescribeSubnets entries by subnet ID."""

    def __init__(self, region: str, zones: Sequence[tuple[str, str]]) -> None:
        self.zones = list(zones)
        self.records: dict[str, dict[str, Any]] = {}
        #: The subnets learnt from an EC2NodeClass's status.
        self.learned: set[str] = set()
        for index, (zone, zone_id) in enumerate(self.zones):
            subnet_id = hex_id("subnet", f"{region}/{zone}")
            self.records[subnet_id] = self.record(subnet_id, zone, zone_id, index)

    def get(self, subnet_id: str) -> dict[str, Any] | None:
        return self.records.get(subnet_id)

    @staticmethod
    def record(subnet_id: str, zone: str, zone_id: str, index: int) -> dict[str, Any]:
        """A DescribeSubnets entry: the ``index``-th /20 of 172.31.0.0/16 (wrapping at 16)."""
        return {
            "SubnetId": subnet_id,
            "AvailabilityZone": zone,
            "AvailabilityZoneId": zone_id,
            "AvailableIpAddressCount": SUBNET_FREE_ADDRESSES,
            "CidrBlock": f"172.31.{(index % 16) * 16}.0/20",
            "Tags": [],
        }

    def learn(self, subnets: Sequence[Mapping[str, Any]], tags: Mapping[str, str]) -> list[str]:
        """Subnets a real cluster resolved for an EC2NodeClass (``status.subnets``: ``id``,
        ``zone``, ``zoneID``) become this account's, in their zones, carrying ``tags`` (the
        tags the class selects subnets by), so the class resolves to them again and its nodes
        launch in their zones only. Returns the IDs of those in zones this region does not
        have, left out."""
        zones = dict(self.zones)
        names = [name for name, _ in self.zones]
        outside = []
        for entry in subnets:
            subnet_id, zone = str(entry.get("id") or ""), str(entry.get("zone") or "")
            if not subnet_id:
                continue
            if zone not in zones:
                outside.append(subnet_id)
                continue
            record = self.records.get(subnet_id)
            if record is None:
                zone_id = str(entry.get("zoneID") or zones[zone])
                record = self.record(subnet_id, zone, zone_id, names.index(zone))
                self.records[subnet_id] = record
            known = tags_of(record["Tags"])
            record["Tags"] = tag_list(
                {**known, **{k: v for k, v in tags.items() if k not in known}}
            )
            self.learned.add(subnet_id)
        return outside

    def describe(self, filters: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """DescribeSubnets: by ID (an unknown ID is placed in the region's zones in turn), else
        the learnt subnets the tag filters match, else the region's own."""
        ids = filter_values(filters, "subnet-id")
        if ids is None:
            learned = [
                self.records[i]
                for i in sorted(self.learned)
                if tags_match(tags_of(self.records[i]["Tags"]), filters)
            ]
            return learned or [s for i, s in self.records.items() if i not in self.learned]
        for position, subnet_id in enumerate(ids):
            if subnet_id not in self.records:
                zone, zone_id = self.zones[position % len(self.zones)]
                self.records[subnet_id] = self.record(subnet_id, zone, zone_id, len(self.records))
        return [self.records[i] for i in ids]
