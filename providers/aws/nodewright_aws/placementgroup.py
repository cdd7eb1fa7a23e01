"""Placement groups (Karpenter's placementgroup provider): the group an EC2NodeClass's
``placementGroupSelector`` names, resolved with DescribePlacementGroups (available groups only),
asked again after a minute, and the last group found kept for a day in case EC2 cannot answer.

What a resolved group changes: only instance types whose ``PlacementGroupInfo`` supports its
strategy are offered; a ``partition`` group splits every offering into one per partition
(label ``karpenter.k8s.aws/placement-group-partition``, so pods can spread over partitions);
the launch template places the instance in the group (and the NodeClaim's partition); the
NodeClaim carries the group's ID as a label, and a NodeClaim whose label differs from the
class's group has drifted (``PlacementGroupDrift``). A NodeClaim launched into a partition
group without naming a partition carries the partition label empty until its Node
registers, which waits for EC2 to report the partition it chose.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import botocore.exceptions

from nodewright.plugin import (
    Instance,
    NodeClaim,
    Offering,
    ProviderError,
    Requirement,
    Requirements,
    TemporaryProviderError,
)
from nodewright_aws import labels as L
from nodewright_aws.clients import AWSClients, aws_errors, error_code
from nodewright_aws.nodeclass import EC2NodeClass

log = logging.getLogger(__name__)

#: How long a resolved group (or its absence) is reused before EC2 is asked again.
PLACEMENT_GROUP_TTL = timedelta(minutes=1)
#: How long the last group found stands in when EC2 cannot be asked.
PLACEMENT_GROUP_AVAILABILITY_TTL = timedelta(hours=24)
PARTITION = "partition"
#: What a failed lookup raises.
LOOKUP_ERRORS = (
    ProviderError,
    botocore.exceptions.ClientError,
    botocore.exceptions.BotoCoreError,
)
#: EC2's answer to a describe by a name or ID it does not know.
UNKNOWN_GROUP_CODES = frozenset({"InvalidPlacementGroup.Unknown", "InvalidGroup.NotFound"})


@dataclass(frozen=True)
class PlacementGroup:
    id: str
    name: str
    #: ``cluster``, ``partition`` or ``spread``.
    strategy: str
    partition_count: int = 0

    def partitions(self) -> list[str]:
        """The partition numbers, as label values; none unless the strategy is partition."""
        if self.strategy != PARTITION:
            return []
        return [str(n) for n in range(1, self.partition_count + 1)]


def selector_text(node_class: EC2NodeClass) -> str:
    selector = node_class.spec.placement_group_selector
    if selector is None:
        return ""
    return selector.name or selector.id or ""


class PlacementGroupProvider:
    """The placement group of each selector, reused for a minute."""

    def __init__(self, clients: AWSClients, now: Callable[[], datetime]) -> None:
        self.clients = clients
        self.now = now
        #: Selector key -> (when asked, the group or None).
        self.resolved: dict[tuple[str, str], tuple[datetime, PlacementGroup | None]] = {}
        #: Selector key -> (when found, the group): the last one EC2 returned.
        self.known: dict[tuple[str, str], tuple[datetime, PlacementGroup]] = {}

    def get(self, node_class: EC2NodeClass) -> PlacementGroup | None:
        """The class's group; None without a selector or when EC2 has no such available group.
        A failed call falls back to the last group found within a day, else raises."""
        selector = node_class.spec.placement_group_selector
        if selector is None:
            return None
        key = ("id", selector.id) if selector.id else ("name", selector.name or "")
        now = self.now()
        cached = self.resolved.get(key)
        if cached is not None and now - cached[0] < PLACEMENT_GROUP_TTL:
            return cached[1]
        query: dict[str, Any] = {"Filters": [{"Name": "state", "Values": ["available"]}]}
        query["GroupIds" if key[0] == "id" else "GroupNames"] = [key[1]]
        try:
            with aws_errors(f"describing placement group {key[1]!r}"):
                groups = self.clients.ec2.describe_placement_groups(**query)["PlacementGroups"]
        except botocore.exceptions.ClientError as error:
            if error_code(error) not in UNKNOWN_GROUP_CODES:
                return self._fallback(key, now, error)
            groups = []
        except (ProviderError, botocore.exceptions.BotoCoreError) as error:
            return self._fallback(key, now, error)
        found = from_description(groups[0]) if groups else None
        self.resolved[key] = (now, found)
        if found is not None:
            self.known[key] = (now, found)
        return found

    def lookup(self, node_class: EC2NodeClass) -> PlacementGroup | None:
        """:meth:`get`, with None when EC2 cannot say (what instance types, offerings and
        launches use; the class's readiness reports the failure)."""
        try:
            return self.get(node_class)
        except LOOKUP_ERRORS as error:
            log.debug("placement group of %s unknown: %s", node_class.name, error)
            return None

    def _fallback(
        self, key: tuple[str, str], now: datetime, error: Exception
    ) -> PlacementGroup | None:
        known = self.known.get(key)
        if known is not None and now - known[0] < PLACEMENT_GROUP_AVAILABILITY_TTL:
            log.warning(
                "placement group %s not described, using the last one found: %s", key[1], error
            )
            return known[1]
        raise error


def from_description(group: Mapping[str, Any]) -> PlacementGroup:
    return PlacementGroup(
        id=str(group.get("GroupId", "")),
        name=str(group.get("GroupName", "")),
        strategy=str(group.get("Strategy", "")),
        partition_count=int(group.get("PartitionCount") or 0),
    )


def supports(info: Mapping[str, Any], group: PlacementGroup) -> bool:
    """Whether an instance type can join the group (its supported placement strategies)."""
    strategies = (info.get("PlacementGroupInfo") or {}).get("SupportedStrategies") or []
    return group.strategy in strategies


def partition_requirement(group: PlacementGroup | None) -> Requirement | None:
    """The partitions an instance type offers in a partition group (None otherwise)."""
    partitions = group.partitions() if group is not None else []
    return Requirement.of(L.PLACEMENT_GROUP_PARTITION, "In", partitions) if partitions else None


def split_by_partition(
    offerings: Sequence[Offering], group: PlacementGroup | None
) -> list[Offering]:
    """Each offering once per partition of a partition group (as is otherwise)."""
    partitions = group.partitions() if group is not None else []
    if not partitions:
        return list(offerings)
    return [
        replace(o, labels={**o.labels, L.PLACEMENT_GROUP_PARTITION: partition})
        for o in offerings
        for partition in partitions
    ]


def chosen_partition(requirements: Requirements, group: PlacementGroup | None) -> int | None:
    """The partition a launch asks for: the lowest one the NodeClaim allows (EC2 takes one);
    None when the group is not partitioned or the NodeClaim does not name partitions."""
    if group is None or group.strategy != PARTITION:
        return None
    requirement = requirements.get(L.PLACEMENT_GROUP_PARTITION)
    if requirement is None or requirement.complement or not requirement.values:
        return None
    numbers = sorted(int(v) for v in requirement.values if v.isdigit())
    return numbers[0] if numbers else None


#: How soon registration asks EC2 again for a partition it has not reported yet.
PARTITION_RETRY = timedelta(seconds=5)


def registered_partition(node_claim: NodeClaim, instance: Instance) -> dict[str, str] | None:
    """The partition label a Node registers with, when its NodeClaim was launched into a
    partition group without naming a partition (the label is there, empty, and EC2 chose
    one): the number a fresh description of ``instance`` gives. Karpenter's
    PlacementGroupRegistrationHook, so spreads over partitions see every node's partition.
    Raises TemporaryProviderError while EC2 does not report it yet (the Node waits)."""
    labels = node_claim.metadata.labels
    if L.PLACEMENT_GROUP_ID not in labels or labels.get(L.PLACEMENT_GROUP_PARTITION) != "":
        return None
    partition = instance.labels.get(L.PLACEMENT_GROUP_PARTITION)
    if not partition:
        raise TemporaryProviderError(
            f"instance {instance.provider_id.rsplit('/', 1)[-1]} in placement group "
            f"{labels[L.PLACEMENT_GROUP_ID]} has no partition number yet",
            PARTITION_RETRY,
        )
    return {L.PLACEMENT_GROUP_PARTITION: partition}
