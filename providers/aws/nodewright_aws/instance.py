"""EC2 instances (Karpenter's instance provider): launch through CreateFleet, describe,
list this cluster's, terminate, and turn a description into the core's :class:`Instance`.

A launch picks one capacity type (reserved, then spot, then on-demand, as Karpenter), the 60
cheapest fitting types, one subnet per zone and a launch template per AMI; insufficient
capacity marks the offering unavailable and is reported back to the core's catalog.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

import botocore.exceptions

from nodewright.plugin import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    REGION_LABEL,
    ZONE_LABEL,
    Instance,
    InstanceNotFoundError,
    InstanceType,
    InsufficientCapacityError,
    LaunchError,
    LaunchRequest,
    LaunchResult,
    NodeClassNotReadyError,
    Offering,
    TemporaryProviderError,
)
from nodewright_aws import labels as L
from nodewright_aws.clients import (
    UNAUTHORIZED_CODES,
    AWSClients,
    MissingConfigurationError,
    aws_errors,
    error_code,
    error_text,
)
from nodewright_aws.discovery import NodeClassDiscovery, ami_for
from nodewright_aws.instancetype import InstanceTypeProvider
from nodewright_aws.launch import (
    INTERRUPTIBLE_RESERVATION,
    MAX_INSTANCE_TYPES,
    UNFULFILLABLE_CODES,
    Override,
    create_fleet_input,
    fleet_errors,
    instance_tags,
)
from nodewright_aws.launchtemplate import LaunchTemplateProvider
from nodewright_aws.nodeclass import EC2NodeClass
from nodewright_aws.options import Settings
from nodewright_aws.placementgroup import PARTITION, PlacementGroupProvider, chosen_partition
from nodewright_aws.pricing import PricingProvider
from nodewright_aws.unavailable import UNAVAILABLE_TTL, UnavailableOfferings

log = logging.getLogger(__name__)

#: Launch-time stamp from the core's clock (LaunchTime is the cloud's wall clock).
LAUNCHED_AT_TAG = "nodewright.sh/launched-at"
#: Karpenter's launch order: capacity bought ahead, then spot, then on-demand.
LAUNCHABLE_CAPACITY_TYPES = (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND)
LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]


def parse_provider_id(provider_id: str) -> str:
    """The instance ID of ``aws:///<zone>/<id>``; InstanceNotFoundError if malformed."""
    if not provider_id.startswith(L.PROVIDER_ID_PREFIX):
        raise InstanceNotFoundError(f"{provider_id!r} is not an AWS provider ID")
    instance_id = provider_id.rsplit("/", 1)[-1]
    if not instance_id.startswith("i-"):
        raise InstanceNotFoundError(f"{provider_id!r} names no EC2 instance")
    return instance_id


class InstanceProvider:
    """This cluster's EC2 instances."""

    def __init__(
        self,
        *,
        clients: AWSClients,
        settings: Settings,
        cluster_name: str,
        discovery: NodeClassDiscovery,
        instance_types: InstanceTypeProvider,
        pricing: PricingProvider,
        launch_templates: LaunchTemplateProvider,
        unavailable: UnavailableOfferings,
        now: Callable[[], datetime],
        placement_groups: PlacementGroupProvider | None = None,
        node_classes: Callable[[str], EC2NodeClass | None] = lambda _: None,
    ) -> None:
        self.clients = clients
        self.settings = settings
        self.cluster_name = cluster_name
        self.discovery = discovery
        self.instance_types = instance_types
        self.pricing = pricing
        self.launch_templates = launch_templates
        self.unavailable = unavailable
        self.now = now
        self.placement_groups = placement_groups
        #: The EC2NodeClass of a name, as the cluster has it now (None: not there).
        self.node_classes = node_classes

    # -- reading -------------------------------------------------------------------------

    def describe(self, instance_id: str) -> dict[str, Any] | None:
        """DescribeInstances of one ID; None when EC2 does not know it."""
        try:
            reservations = self.clients.ec2.describe_instances(InstanceIds=[instance_id])[
                "Reservations"
            ]
        except botocore.exceptions.ClientError as error:
            if error_code(error) == "InvalidInstanceID.NotFound":
                return None
            raise
        for reservation in reservations:
            for description in reservation.get("Instances", []):
                return dict(description)
        return None

    def to_instance(
        self, description: Mapping[str, Any], instance_type: InstanceType | None = None
    ) -> Instance:
        tags = {t["Key"]: t["Value"] for t in description.get("Tags", [])}
        zone = description.get("Placement", {}).get("AvailabilityZone", "")
        name = description.get("InstanceType", "")
        spot = description.get("InstanceLifecycle") == "spot" or bool(
            description.get("SpotInstanceRequestId")
        )
        capacity_type = CAPACITY_TYPE_SPOT if spot else CAPACITY_TYPE_ON_DEMAND
        reservation_id = tags.get(L.CAPACITY_RESERVATION_ID) or description.get(
            "CapacityReservationId"
        )
        if reservation_id:
            capacity_type = CAPACITY_TYPE_RESERVED
        state = description.get("State", {}).get("Name", "running")
        created = tags.get(LAUNCHED_AT_TAG)
        created_at = (
            datetime.fromisoformat(created)
            if created
            else description.get("LaunchTime", self.now())
        )
        if instance_type is None:
            # As the launch built it: the class's interfaces and kubelet set max pods.
            node_class = self.node_classes(tags.get(L.EC2NODECLASS_TAG, ""))
            instance_type = self.instance_types.build(name, node_class)
        book = self.pricing.prices
        price = (
            (book.spot_price(name, zone) if spot else book.on_demand_price(name))
            if book is not None
            else None
        )
        labels = dict(instance_type.requirements.labels()) if instance_type is not None else {}
        labels.pop(L.ZONE_ID, None)
        labels.update(
            {
                INSTANCE_TYPE_LABEL: name,
                ZONE_LABEL: zone,
                CAPACITY_TYPE_LABEL: capacity_type,
                L.INSTANCE_TENANCY: description.get("Placement", {}).get("Tenancy", "default"),
            }
        )
        zone_id = description.get("Placement", {}).get(
            "AvailabilityZoneId"
        ) or self.discovery.zone_id_of_subnet(description.get("SubnetId"))
        if zone_id:
            labels[L.ZONE_ID] = zone_id
        if self.settings.region:
            labels[REGION_LABEL] = self.settings.region
        if tags.get(L.NODEPOOL_TAG):
            labels[NODEPOOL_LABEL] = tags[L.NODEPOOL_TAG]
        if reservation_id:
            labels[L.CAPACITY_RESERVATION_ID] = reservation_id
            labels[L.CAPACITY_RESERVATION_TYPE] = "default"
            interruptible = description.get("InstanceLifecycle") == INTERRUPTIBLE_RESERVATION
            labels[L.CAPACITY_RESERVATION_INTERRUPTIBLE] = str(interruptible).lower()
        placement = description.get("Placement", {})
        if placement.get("GroupId"):
            labels[L.PLACEMENT_GROUP_ID] = placement["GroupId"]
            if placement.get("PartitionNumber"):
                labels[L.PLACEMENT_GROUP_PARTITION] = str(placement["PartitionNumber"])
        return Instance(
            provider_id=f"{L.PROVIDER_ID_PREFIX}{zone}/{description['InstanceId']}",
            node_claim=tags.get(L.NODECLAIM_TAG, ""),
            node_pool=tags.get(L.NODEPOOL_TAG, ""),
            node_class=tags.get(L.EC2NODECLASS_TAG, ""),
            instance_type=name,
            zone=zone,
            capacity_type=capacity_type,
            price=price or 0.0,
            created_at=created_at,
            labels=labels,
            capacity=instance_type.capacity if instance_type is not None else {},
            allocatable=instance_type.allocatable() if instance_type is not None else {},
            image_id=description.get("ImageId", ""),
            node_name=description.get("PrivateDnsName") or "",
            annotations={
                key: tags[key]
                for key in (L.NODECLASS_HASH_ANNOTATION, L.NODECLASS_HASH_VERSION_ANNOTATION)
                if tags.get(key)
            },
            state={
                "pending": "pending",
                "running": "running",
                "shutting-down": "terminating",
                "terminated": "terminated",
            }.get(state, "running" if state != "stopping" else "terminating"),
        )

    def get(self, provider_id: str) -> Instance:
        instance_id = parse_provider_id(provider_id)
        with aws_errors(f"describing {instance_id}"):
            description = self.describe(instance_id)
        if description is None or description.get("State", {}).get("Name") == "terminated":
            raise InstanceNotFoundError(provider_id)
        with aws_errors(f"describing {instance_id}'s instance type"):
            return self.to_instance(description)

    def list(self) -> list[Instance]:
        """This cluster's live instances. With no region configured there is nothing this
        provider can have launched (e.g. a KWOK-only simulation): an empty list, no call.
        Garbage collection confirms every absence through ``get``, so this is safe."""
        if not self.settings.region:
            return []
        filters = [
            {"Name": "tag-key", "Values": [L.NODEPOOL_TAG]},
            {"Name": "tag-key", "Values": [L.EC2NODECLASS_TAG]},
            {"Name": f"tag:{L.EKS_CLUSTER_NAME_TAG}", "Values": [self.cluster_name]},
            {"Name": "instance-state-name", "Values": LIVE_STATES},
        ]
        found = []
        with aws_errors("listing instances"):
            for page in self.clients.ec2.get_paginator("describe_instances").paginate(
                Filters=filters
            ):
                for reservation in page.get("Reservations", []):
                    for description in reservation.get("Instances", []):
                        found.append(self.to_instance(dict(description)))
        return found

    def delete(self, provider_id: str) -> None:
        instance_id = parse_provider_id(provider_id)
        with aws_errors(f"terminating {instance_id}"):
            description = self.describe(instance_id)
            state = (description or {}).get("State", {}).get("Name")
            if description is None or state == "terminated":
                raise InstanceNotFoundError(provider_id)
            if state == "shutting-down":
                return
            try:
                self.clients.ec2.terminate_instances(InstanceIds=[instance_id])
            except botocore.exceptions.ClientError as error:
                if error_code(error) == "InvalidInstanceID.NotFound":
                    raise InstanceNotFoundError(provider_id) from None
                raise

    # -- launching -----------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance | LaunchResult:
        node_class = request.node_class
        assert isinstance(node_class, EC2NodeClass)
        with aws_errors(f"launching for NodeClaim {request.node_claim.name!r}"):
            try:
                existing = self._find_by_key(request.idempotency_key)
                if existing is not None:
                    return existing
                return self._create(request, node_class)
            except MissingConfigurationError as error:
                raise NodeClassNotReadyError(str(error)) from None
            except botocore.exceptions.ClientError as error:
                code = error_code(error)
                if code in UNAUTHORIZED_CODES:
                    raise LaunchError("Unauthorized", error_text(error)) from None
                if code in ("RequestLimitExceeded", "Throttling", "ThrottlingException"):
                    raise
                raise LaunchError("LaunchFailed", error_text(error)) from None

    def _find_by_key(self, key: str) -> Instance | None:
        reservations = self.clients.ec2.describe_instances(
            Filters=[
                {"Name": f"tag:{L.IDEMPOTENCY_TAG}", "Values": [key]},
                {
                    "Name": "instance-state-name",
                    "Values": ["pending", "running", "stopping", "stopped"],
                },
            ]
        )["Reservations"]
        for reservation in reservations:
            for description in reservation.get("Instances", []):
                return self.to_instance(dict(description))
        return None

    def _create(self, request: LaunchRequest, node_class: EC2NodeClass) -> Instance | LaunchResult:
        resolution = self.discovery.ready(node_class)
        self.pricing.book()  # prices for the instance returned
        subnets_by_zone: dict[str, str] = {}
        for subnet in resolution.subnets:  # sorted by free IPs: the first per zone wins
            subnets_by_zone.setdefault(subnet.zone, subnet.id)
        choices: list[tuple[float, str, InstanceType, Offering]] = []
        for option in request.instance_types:
            if not request.requirements.meets(option.requirements):
                continue
            for offering in option.matching_offerings(request.requirements):
                if (
                    offering.capacity_type in LAUNCHABLE_CAPACITY_TYPES
                    and offering.zone in subnets_by_zone
                ):
                    choices.append((offering.price, option.name, option, offering))
        if not choices:
            raise InsufficientCapacityError(
                "no requested instance type and offering fits NodeClaim "
                f"{request.node_claim.name!r}"
            )
        present = {o.capacity_type for _, _, _, o in choices}
        # Karpenter's order: capacity bought ahead, then spot, then on-demand.
        capacity_type = next(ct for ct in LAUNCHABLE_CAPACITY_TYPES if ct in present)
        choices = sorted(
            (c for c in choices if c[3].capacity_type == capacity_type), key=lambda c: c[:2]
        )
        # The cheapest MAX_INSTANCE_TYPES types, each at its first (cheapest) choice.
        kept_types = list(dict.fromkeys(name for _, name, _, _ in choices))
        kept = set(kept_types[:MAX_INSTANCE_TYPES])
        node_pool = request.node_claim.metadata.labels.get(NODEPOOL_LABEL, "")
        tags = instance_tags(
            node_class,
            self.cluster_name,
            node_pool,
            request.node_claim.name,
            request.idempotency_key,
        )
        tags[LAUNCHED_AT_TAG] = self.now().isoformat()
        # Per-claim tags stay off the template, so claims share it (deterministic names).
        per_claim = (L.NODECLAIM_TAG, L.IDEMPOTENCY_TAG, LAUNCHED_AT_TAG)
        template_tags = {k: v for k, v in tags.items() if k not in per_claim}
        if capacity_type == CAPACITY_TYPE_RESERVED:
            choices = choices[:1]  # one reservation: its own template targets it
            reservation = choices[0][3].reservation
            if reservation is not None:
                tags[L.CAPACITY_RESERVATION_ID] = reservation.id
        group = self.placement_groups.lookup(node_class) if self.placement_groups else None
        partition = chosen_partition(request.requirements, group)
        placement: dict[str, Any] | None = None
        if group is not None:
            placement = {"GroupId": group.id}
            if partition is not None:
                placement["PartitionNumber"] = partition
        wants_efa = L.EFA_RESOURCE in request.node_claim.spec.resources.requests
        interruptible = False
        groups: dict[str, list[Override]] = {}
        types_by_name: dict[str, InstanceType] = {}
        overridden: set[tuple[str, str]] = set()
        templates: dict[tuple[str, int, str | None, bool, int], str] = {}
        for price, name, option, offering in choices:
            # A partition group offers each (type, zone) once per partition: one override.
            if name not in kept or (name, offering.zone) in overridden:
                continue
            ami = ami_for(option, resolution.amis)
            if ami is None:
                continue
            interruptible = offering.labels.get(L.CAPACITY_RESERVATION_INTERRUPTIBLE) == "true"
            max_pods = option.capacity.get("pods", 0) // 1000
            reservation_id = offering.reservation.id if offering.reservation else None
            efa_count = option.capacity.get(L.EFA_RESOURCE, 0) // 1000 if wants_efa else 0
            # The rest of a template's inputs are the claim's: types alike share one.
            key = (ami.id, max_pods, reservation_id, interruptible, efa_count)
            template = templates.get(key)
            if template is None:
                template = templates[key] = self.launch_templates.ensure_for(
                    request,
                    node_class,
                    resolution=resolution,
                    ami=ami,
                    max_pods=max_pods,
                    capacity_type=capacity_type,
                    tags=template_tags,
                    reservation_id=reservation_id,
                    interruptible=interruptible,
                    efa_count=efa_count,
                    placement=placement,
                )
            groups.setdefault(template, []).append(
                Override(name, offering.zone, subnets_by_zone[offering.zone], ami.id, price)
            )
            overridden.add((name, offering.zone))
            types_by_name[name] = option
        if not groups:
            raise InsufficientCapacityError(
                f"no AMI of EC2NodeClass {node_class.name!r} fits the requested instance types"
            )
        fleet = create_fleet_input(
            CAPACITY_TYPE_ON_DEMAND if capacity_type == CAPACITY_TYPE_RESERVED else capacity_type,
            groups,
            tags,
            node_class.spec.context,
            interruptible_reservation=capacity_type == CAPACITY_TYPE_RESERVED and interruptible,
        )
        response = self.clients.ec2.create_fleet(**fleet)
        failed = []
        for code, message, instance_type, zone in fleet_errors(response):
            if code in UNFULFILLABLE_CODES and instance_type and zone:
                failed.append((instance_type, zone, capacity_type))
                self.unavailable.mark(instance_type, zone, capacity_type, self.now())
            log.info("CreateFleet error %s for %s in %s: %s", code, instance_type, zone, message)
        launched = [
            (i.get("InstanceType", ""), instance_id)
            for i in response.get("Instances") or []
            for instance_id in i.get("InstanceIds", [])
        ]
        if not launched:
            errors = fleet_errors(response)
            if failed or not errors:
                raise InsufficientCapacityError(
                    f"CreateFleet launched nothing for NodeClaim {request.node_claim.name!r}: "
                    + ", ".join(f"{t} in {z} ({ct})" for t, z, ct in failed),
                    failed,
                )
            code, message, _, _ = errors[0]
            raise LaunchError(
                "Unauthorized" if code in UNAUTHORIZED_CODES else "LaunchFailed",
                f"{code}: {message}",
            )
        instance_id = launched[0][1]
        description = self.describe(instance_id)
        if description is None:  # eventual consistency: a fresh ID may not be visible yet
            raise TemporaryProviderError(f"instance {instance_id} not visible yet")
        instance = self.to_instance(
            description, types_by_name.get(description.get("InstanceType", ""))
        )
        # What the launch asked for, where a fresh description may not say it yet.
        asked: dict[str, str] = {}
        if group is not None:
            asked[L.PLACEMENT_GROUP_ID] = group.id
            if partition is not None:
                asked[L.PLACEMENT_GROUP_PARTITION] = str(partition)
            elif group.strategy == PARTITION and L.PLACEMENT_GROUP_PARTITION not in instance.labels:
                # EC2 chooses the partition; registration fills it in once EC2 reports it.
                asked[L.PLACEMENT_GROUP_PARTITION] = ""
        if instance.capacity_type == CAPACITY_TYPE_RESERVED:
            asked[L.CAPACITY_RESERVATION_INTERRUPTIBLE] = str(interruptible).lower()
        if asked:
            instance = replace(instance, labels={**instance.labels, **asked})
        if not failed:
            return instance
        # The fleet bought one type and found no capacity for others: the core's catalog
        # must stop offering those too, or consolidation sizes replacements for them.
        return LaunchResult(instance, tuple(failed), UNAVAILABLE_TTL)
