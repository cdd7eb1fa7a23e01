"""An in-process stand-in for the AWS APIs the provider calls, for ``aws.offline=REGION``.

It answers exactly the calls the provider makes (same names, arguments and response shapes
as boto3's clients, errors as botocore ``ClientError`` with EC2's codes), from the bundled
catalog and an in-memory account, so the provider's code runs unchanged. What the offline
account holds (docs/providers/aws.md, "Offline catalog"):

* one subnet per zone of the region (4091 free addresses each); a tag selector matches all of
  them, an ID selector resolves to that ID, placed in the region's zones in turn; and the
  subnets an EC2NodeClass's status lists (a cluster snapshot's, see
  :meth:`~nodewright_aws.offline.subnets.OfflineSubnets.learn`), in their own zones, which its
  tag selector then matches instead;
* a security group for each selector term (tag terms share one);
* an AMI for every SSM alias parameter (arm64 when the path says so, else x86_64), except
  Amazon Linux 2 for Kubernetes 1.33 and later, which AWS does not publish; an ID term is an
  x86_64 image, a name or tag term one x86_64 and one arm64 image;
* an EKS cluster (Kubernetes ``DEFAULT_KUBERNETES_VERSION`` unless the option sets one),
  instance profiles, launch templates, an empty interruption queue, no capacity reservations;
* a ``cluster`` placement group for every name or ID asked for;
* dry runs (CreateLaunchTemplate, CreateFleet, RunInstances) always pass;
* instances: CreateFleet launches the cheapest override of the asked capacity type (spot
  prices derived from on-demand, see ``catalog.spot_price``), running at once; terminating
  one ends it at once. There is never a capacity shortage.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nodewright_aws.offline.api import (
    Service,
    by_keys,
    client_error,
    dry_run_passed,
    filter_values,
    hex_id,
    tag_list,
    tags_match,
    tags_of,
)
from nodewright_aws.offline.catalog import OfflineCatalog
from nodewright_aws.offline.services import (
    OFFLINE_ACCOUNT,
    OfflineEKS,
    OfflineIAM,
    OfflineSQS,
    OfflineSSM,
    OfflineZonalShift,
)
from nodewright_aws.offline.subnets import OfflineSubnets

DEFAULT_KUBERNETES_VERSION = "1.32"
IMAGE_CREATED = "2026-01-01T00:00:00.000Z"


class OfflineAWS:
    """The offline account of one region: its state and the service clients over it."""

    def __init__(
        self,
        catalog: OfflineCatalog,
        region: str,
        now: Callable[[], datetime],
        kubernetes_version: str | None = None,
    ) -> None:
        self.catalog = catalog
        self.region = region
        self.now = now
        self.kubernetes_version = kubernetes_version or DEFAULT_KUBERNETES_VERSION
        self.zones = catalog.zones(region)
        self.offerings = catalog.offerings(region)
        self.subnets = OfflineSubnets(region, self.zones)
        self.images: dict[str, dict[str, Any]] = {}
        self.instance_profiles: dict[str, dict[str, Any]] = {}
        self.launch_templates: dict[str, dict[str, Any]] = {}
        self.instances: dict[str, dict[str, Any]] = {}
        self._serial = itertools.count(1)
        #: Whether a provider ID or node name is already the cluster's (a snapshot's nodes
        #: are instances this account did not launch): set by the provider.
        self.taken: Callable[[str, str], bool] = lambda provider_id, node_name: False
        self.ec2 = OfflineEC2(self)
        self.services: dict[str, Any] = {
            "ec2": self.ec2,
            "pricing": OfflinePricing(self),
            "ssm": OfflineSSM(self),
            "iam": OfflineIAM(self),
            "eks": OfflineEKS(self),
            "sqs": OfflineSQS(),
            "arc-zonal-shift": OfflineZonalShift(),
        }

    def session(self, region: str) -> OfflineSession:
        return OfflineSession(self)

    def zone_id(self, zone: str) -> str:
        return dict(self.zones).get(zone, "")

    def image(self, image_id: str, name: str, architecture: str) -> dict[str, Any]:
        return self.images.setdefault(
            image_id,
            {
                "ImageId": image_id,
                "Name": name,
                "Architecture": architecture,
                "CreationDate": IMAGE_CREATED,
                "OwnerId": OFFLINE_ACCOUNT,
                "State": "available",
            },
        )

    def next_instance(self, zone: str, subnet: Mapping[str, Any]) -> tuple[str, str, str]:
        """The next instance ID, private address and DNS name, skipping any whose provider ID
        or node name a node of the cluster already has, so a launch never takes the
        identity of a snapshot's instance."""
        # In the subnet's /20 of the default VPC range (172.31.0.0/16).
        base = int(str(subnet.get("CidrBlock", "172.31.0.0/20")).split(".")[2])
        while True:
            serial = next(self._serial)
            instance_id = f"i-{serial:017x}"
            address = f"172.31.{base + (serial // 250) % 16}.{serial % 250 + 4}"
            name = f"ip-{address.replace('.', '-')}.{self.region}.compute.internal"
            if not self.taken(f"aws:///{zone}/{instance_id}", name):
                return instance_id, address, name


class OfflineSession:
    """What ``AWSClients`` asks of a boto3 session: credentials (none needed) and clients."""

    def __init__(self, cloud: OfflineAWS) -> None:
        self._cloud = cloud

    def get_credentials(self) -> object:
        return "offline"

    def client(self, service: str, **_: Any) -> Any:
        try:
            return self._cloud.services[service]
        except KeyError:
            raise client_error(
                "Client", "UnsupportedOperation", f"{service} has no offline stand-in"
            ) from None


class OfflineEC2(Service):
    def __init__(self, cloud: OfflineAWS) -> None:
        self.cloud = cloud

    # -- catalog -------------------------------------------------------------------------

    def describe_instance_types(self, Filters: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        virtualization = filter_values(Filters, "supported-virtualization-type")
        architectures = filter_values(Filters, "processor-info.supported-architecture")
        patterns = filter_values(Filters, "instance-type")
        found = []
        for name, info in sorted(self.cloud.catalog.instance_types.items()):
            if name not in self.cloud.offerings:
                continue
            if virtualization and not set(virtualization) & set(
                info.get("SupportedVirtualizationTypes", [])
            ):
                continue
            archs = info.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
            if architectures and not set(architectures) & set(archs):
                continue
            if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            found.append(info)
        return {"InstanceTypes": found}

    def describe_instance_type_offerings(
        self, LocationType: str = "region", **_: Any
    ) -> dict[str, Any]:
        if LocationType != "availability-zone":
            raise client_error(
                "DescribeInstanceTypeOfferings",
                "InvalidParameterValue",
                "offline: only LocationType availability-zone",
            )
        return {
            "InstanceTypeOfferings": [
                {"InstanceType": name, "LocationType": LocationType, "Location": zone}
                for name, zones in sorted(self.cloud.offerings.items())
                for zone in zones
            ]
        }

    def describe_spot_price_history(
        self, StartTime: datetime | None = None, InstanceTypes: Sequence[str] = (), **_: Any
    ) -> dict[str, Any]:
        catalog = self.cloud.catalog
        wanted = set(InstanceTypes)
        stamp = StartTime or self.cloud.now()
        records = []
        for name, zones in sorted(self.cloud.offerings.items()):
            info = catalog.instance_types.get(name, {})
            if (wanted and name not in wanted) or "spot" not in info.get(
                "SupportedUsageClasses", []
            ):
                continue
            for zone in zones:
                price = catalog.spot_price(name, zone)
                if price is not None:
                    records.append(
                        {
                            "AvailabilityZone": zone,
                            "InstanceType": name,
                            "ProductDescription": "Linux/UNIX",
                            "SpotPrice": f"{price:.6f}",
                            "Timestamp": stamp,
                        }
                    )
        return {"SpotPriceHistory": records}

    # -- the account -----------------------------------------------------------------------

    def describe_subnets(self, Filters: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        return {"Subnets": self.cloud.subnets.describe(Filters)}

    def describe_security_groups(self, Filters: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        ids = filter_values(Filters, "group-id")
        names = filter_values(Filters, "group-name")
        if ids is not None:
            groups = [{"GroupId": i, "GroupName": ""} for i in ids]
        elif names is not None:
            groups = [{"GroupId": hex_id("sg", n), "GroupName": n} for n in names]
        else:
            groups = [{"GroupId": hex_id("sg", "offline-nodes"), "GroupName": "offline-nodes"}]
        return {"SecurityGroups": groups}

    def describe_images(
        self,
        Filters: Sequence[Mapping[str, Any]] = (),
        ImageIds: Sequence[str] = (),
        **_: Any,
    ) -> dict[str, Any]:
        if ImageIds:
            return {
                "Images": [
                    self.cloud.images.get(i) or self.cloud.image(i, i, "x86_64") for i in ImageIds
                ]
            }
        names = filter_values(Filters, "name") or ["offline-image"]
        images = []
        for name in names:
            for arch in ("x86_64", "arm64"):
                shown = f"{name.replace('*', 'offline')}-{arch}"
                images.append(self.cloud.image(hex_id("ami", shown), shown, arch))
        return {"Images": images}

    def describe_capacity_reservations(self, **_: Any) -> dict[str, Any]:
        return {"CapacityReservations": []}

    def describe_placement_groups(
        self, GroupIds: Sequence[str] = (), GroupNames: Sequence[str] = (), **_: Any
    ) -> dict[str, Any]:
        """Every group asked for exists, available, with the ``cluster`` strategy."""
        groups = [(hex_id("pg", f"name/{n}"), n) for n in GroupNames]
        groups += [(i, i) for i in GroupIds]
        return {
            "PlacementGroups": [
                {"GroupId": i, "GroupName": n, "Strategy": "cluster", "State": "available"}
                for i, n in groups
            ]
        }

    # -- launch templates ------------------------------------------------------------------

    def describe_launch_templates(
        self,
        LaunchTemplateNames: Sequence[str] = (),
        Filters: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        templates = self.cloud.launch_templates
        if LaunchTemplateNames:
            chosen = by_keys(
                templates,
                LaunchTemplateNames,
                "DescribeLaunchTemplates",
                "InvalidLaunchTemplateName.NotFoundException",
                "At least one of the launch templates specified does not exist: {}",
            )
        else:
            chosen = [t for t in templates.values() if tags_match(tags_of(t["Tags"]), Filters)]
        return {
            "LaunchTemplates": [
                {"LaunchTemplateName": t["LaunchTemplateName"], "Tags": t["Tags"]} for t in chosen
            ]
        }

    def create_launch_template(
        self,
        LaunchTemplateName: str,
        LaunchTemplateData: Mapping[str, Any],
        TagSpecifications: Sequence[Mapping[str, Any]] = (),
        DryRun: bool = False,
    ) -> dict[str, Any]:
        if DryRun:
            raise dry_run_passed("CreateLaunchTemplate")
        if LaunchTemplateName in self.cloud.launch_templates:
            raise client_error(
                "CreateLaunchTemplate",
                "InvalidLaunchTemplateName.AlreadyExistsException",
                f"Launch template name already in use: {LaunchTemplateName}",
            )
        tags = [t for spec in TagSpecifications for t in spec.get("Tags", [])]
        self.cloud.launch_templates[LaunchTemplateName] = {
            "LaunchTemplateName": LaunchTemplateName,
            "Data": json.loads(json.dumps(LaunchTemplateData)),
            "Tags": tags,
        }
        return {"LaunchTemplate": {"LaunchTemplateName": LaunchTemplateName}}

    def delete_launch_template(self, LaunchTemplateName: str) -> dict[str, Any]:
        if self.cloud.launch_templates.pop(LaunchTemplateName, None) is None:
            raise client_error(
                "DeleteLaunchTemplate",
                "InvalidLaunchTemplateName.NotFoundException",
                f"The specified launch template does not exist: {LaunchTemplateName}",
            )
        return {"LaunchTemplate": {"LaunchTemplateName": LaunchTemplateName}}

    # -- instances -------------------------------------------------------------------------

    def create_fleet(
        self,
        LaunchTemplateConfigs: Sequence[Mapping[str, Any]],
        TargetCapacitySpecification: Mapping[str, Any],
        TagSpecifications: Sequence[Mapping[str, Any]] = (),
        DryRun: bool = False,
        **_: Any,
    ) -> dict[str, Any]:
        """Type instant, one instance: the cheapest override of the capacity type asked for
        (what lowest-price and price-capacity-optimized pick when capacity is plentiful)."""
        if DryRun:
            raise dry_run_passed("CreateFleet")
        capacity_type = TargetCapacitySpecification.get("DefaultTargetCapacityType", "on-demand")
        catalog = self.cloud.catalog
        candidates: list[tuple[float, str, str, str, Mapping[str, Any]]] = []
        for config in LaunchTemplateConfigs:
            name = config["LaunchTemplateSpecification"]["LaunchTemplateName"]
            template = self.cloud.launch_templates.get(name)
            if template is None:
                raise client_error(
                    "CreateFleet",
                    "InvalidLaunchTemplateName.NotFoundException",
                    f"The specified launch template does not exist: {name}",
                )
            for override in config.get("Overrides", []):
                instance_type = override["InstanceType"]
                zone = override.get("AvailabilityZone") or self._zone_of(override["SubnetId"])
                if zone not in self.cloud.offerings.get(instance_type, []):
                    continue
                price = (
                    catalog.spot_price(instance_type, zone)
                    if capacity_type == "spot"
                    else catalog.on_demand_price(instance_type)
                )
                if price is not None:
                    candidates.append((price, instance_type, zone, name, override))
        if not candidates:
            return {
                "Instances": [],
                "Errors": [
                    {
                        "ErrorCode": "InvalidFleetConfiguration",
                        "ErrorMessage": "offline: no override is offered in this region",
                    }
                ],
            }
        chosen = min(candidates, key=lambda c: c[:3])
        instance_type, zone, template_name, override = chosen[1:]
        data = self.cloud.launch_templates[template_name]["Data"]
        tags = {
            t["Key"]: t["Value"]
            for spec in TagSpecifications
            if spec.get("ResourceType") == "instance"
            for t in spec.get("Tags", [])
        }
        subnet = self.cloud.subnets.get(override["SubnetId"]) or {}
        instance_id, address, dns_name = self.cloud.next_instance(zone, subnet)
        groups = (data.get("NetworkInterfaces") or [{}])[0].get("Groups", [])
        description: dict[str, Any] = {
            "InstanceId": instance_id,
            "InstanceType": instance_type,
            "ImageId": override.get("ImageId") or data.get("ImageId", ""),
            "State": {"Code": 16, "Name": "running"},
            "Placement": {
                "AvailabilityZone": zone,
                "AvailabilityZoneId": self.cloud.zone_id(zone),
                "Tenancy": "default",
                **{
                    k: v
                    for k, v in data.get("Placement", {}).items()
                    if k in ("GroupId", "PartitionNumber")
                },
            },
            "SubnetId": override["SubnetId"],
            "VpcId": hex_id("vpc", self.cloud.region),
            "PrivateIpAddress": address,
            "PrivateDnsName": dns_name,
            "SecurityGroups": [{"GroupId": g, "GroupName": ""} for g in groups],
            "LaunchTime": self.cloud.now(),
            "Tags": tag_list(tags),
        }
        if subnet:
            subnet["AvailableIpAddressCount"] = max(0, subnet["AvailableIpAddressCount"] - 1)
        if capacity_type == "spot":
            description["InstanceLifecycle"] = "spot"
        self.cloud.instances[instance_id] = description
        return {
            "FleetId": hex_id("fleet", instance_id),
            "Errors": [],
            "Instances": [
                {
                    "InstanceIds": [instance_id],
                    "InstanceType": instance_type,
                    "Lifecycle": capacity_type,
                    "LaunchTemplateAndOverrides": {
                        "LaunchTemplateSpecification": {"LaunchTemplateName": template_name},
                        "Overrides": dict(override),
                    },
                }
            ],
        }

    def run_instances(self, DryRun: bool = False, **_: Any) -> dict[str, Any]:
        """Only as a dry run (the provider launches through CreateFleet): always allowed."""
        if DryRun:
            raise dry_run_passed("RunInstances")
        raise client_error("RunInstances", "UnsupportedOperation", "offline: use CreateFleet")

    def _zone_of(self, subnet_id: str) -> str:
        return str((self.cloud.subnets.get(subnet_id) or {}).get("AvailabilityZone", ""))

    def describe_instances(
        self,
        InstanceIds: Sequence[str] = (),
        Filters: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        instances = self.cloud.instances
        if InstanceIds:
            chosen = by_keys(
                instances,
                InstanceIds,
                "DescribeInstances",
                "InvalidInstanceID.NotFound",
                "The instance ID '{}' does not exist",
            )
        else:
            chosen = list(instances.values())
        states = filter_values(Filters, "instance-state-name")
        found = [
            copy.deepcopy(i)
            for i in chosen
            if tags_match(tags_of(i["Tags"]), Filters)
            and (states is None or i["State"]["Name"] in states)
        ]
        return {"Reservations": [{"Instances": found}] if found else []}

    def terminate_instances(self, InstanceIds: Sequence[str]) -> dict[str, Any]:
        changes = []
        for instance_id in InstanceIds:
            instance = self.cloud.instances.get(instance_id)
            if instance is None:
                raise client_error(
                    "TerminateInstances",
                    "InvalidInstanceID.NotFound",
                    f"The instance ID '{instance_id}' does not exist",
                )
            previous = dict(instance["State"])
            instance["State"] = {"Code": 48, "Name": "terminated"}
            changes.append(
                {
                    "InstanceId": instance_id,
                    "PreviousState": previous,
                    "CurrentState": instance["State"],
                }
            )
        return {"TerminatingInstances": changes}


class OfflinePricing(Service):
    """GetProducts as the Pricing API shapes it: one JSON string per instance type."""

    def __init__(self, cloud: OfflineAWS) -> None:
        self.cloud = cloud

    def get_products(self, Filters: Sequence[Mapping[str, Any]] = (), **_: Any) -> dict[str, Any]:
        terms = {f["Field"]: f["Value"] for f in Filters}
        if terms.get("regionCode") != self.cloud.region:
            return {"PriceList": []}
        metal = terms.get("productFamily") == "Compute Instance (bare metal)"
        catalog = self.cloud.catalog
        entries = []
        for name in sorted(self.cloud.offerings):
            info = catalog.instance_types.get(name, {})
            price = catalog.on_demand_price(name)
            if price is None or bool(info.get("BareMetal")) != metal:
                continue
            entries.append(
                json.dumps(
                    {
                        "product": {
                            "attributes": {"instanceType": name, "regionCode": self.cloud.region}
                        },
                        "terms": {
                            "OnDemand": {
                                f"{name}.offline": {
                                    "priceDimensions": {
                                        f"{name}.offline.hrs": {
                                            "unit": "Hrs",
                                            "pricePerUnit": {"USD": f"{price:.6f}"},
                                        }
                                    }
                                }
                            }
                        },
                    }
                )
            )
        return {"PriceList": entries}
