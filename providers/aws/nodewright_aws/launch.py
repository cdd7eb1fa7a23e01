"""Launch templates and the CreateFleet request, shaped as Karpenter's AWS provider does."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.plugin import parse_resources
from nodewright_aws import labels as L
from nodewright_aws.networkinterface import network_interfaces
from nodewright_aws.nodeclass import EC2NodeClass

#: CreateFleet error codes that mean "no capacity for this offering" (Karpenter's list).
UNFULFILLABLE_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientFreeAddressesInSubnet",
        "MaxFleetCountExceeded",
        "ReservationCapacityExceeded",
    }
)
#: The market of instances in an interruptible capacity reservation (launch template, fleet
#: and the instance's ``InstanceLifecycle``).
INTERRUPTIBLE_RESERVATION = "interruptible-capacity-reservation"
#: At most this many instance types go into one CreateFleet (cheapest first).
MAX_INSTANCE_TYPES = 60


@dataclass(frozen=True)
class Override:
    instance_type: str
    zone: str
    subnet_id: str
    image_id: str
    price: float


def static_hash(node_class: EC2NodeClass) -> str:
    """Hash of the spec fields that drift a node when changed (selectors and amiFamily are
    excluded, the effective AMI family included), like Karpenter's ``Hash``."""
    spec = node_class.spec.model_dump(
        mode="json",
        by_alias=True,
        exclude_none=True,
        exclude={
            "subnet_selector_terms",
            "security_group_selector_terms",
            "ami_selector_terms",
            "capacity_reservation_selector_terms",
            "ami_family",
        },
    )
    spec["effectiveAMIFamily"] = node_class.spec.effective_ami_family()
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def instance_tags(
    node_class: EC2NodeClass, cluster: str, node_pool: str, node_claim: str, uid: str
) -> dict[str, str]:
    """spec.tags merged under Karpenter's fixed tags (the fixed ones win)."""
    return {
        **node_class.spec.tags,
        f"{L.CLUSTER_TAG_PREFIX}{cluster}": "owned",
        L.EKS_CLUSTER_NAME_TAG: cluster,
        L.NODEPOOL_TAG: node_pool,
        L.EC2NODECLASS_TAG: node_class.name,
        L.NODECLAIM_TAG: node_claim,
        L.IDEMPOTENCY_TAG: uid,
        # Kept on the instance so an adopted instance (nodewright restarted) gives its
        # NodeClaim the hash annotations again (Instance.annotations).
        L.NODECLASS_HASH_ANNOTATION: static_hash(node_class),
        L.NODECLASS_HASH_VERSION_ANNOTATION: L.NODECLASS_HASH_VERSION,
    }


def tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def launch_template_data(
    node_class: EC2NodeClass,
    *,
    image_id: str,
    user_data: str,
    security_groups: Sequence[str],
    instance_profile: str | None,
    tags: Mapping[str, str],
    efa_count: int = 0,
    placement: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The template's data; ``efa_count`` EFA interfaces when the NodeClaim asks for EFA,
    ``placement`` the placement group (and partition) to launch into."""
    spec = node_class.spec
    data: dict[str, Any] = {
        "ImageId": image_id,
        "UserData": base64.b64encode(user_data.encode()).decode(),
        "MetadataOptions": {
            "HttpEndpoint": spec.metadata_options.http_endpoint,
            "HttpProtocolIpv6": spec.metadata_options.http_protocol_ipv6,
            "HttpPutResponseHopLimit": spec.metadata_options.http_put_response_hop_limit,
            "HttpTokens": spec.metadata_options.http_tokens,
            "InstanceMetadataTags": "disabled",
        },
        "Monitoring": {"Enabled": bool(spec.detailed_monitoring)},
        "NetworkInterfaces": network_interfaces(spec, security_groups, efa_count),
        "TagSpecifications": [{"ResourceType": "network-interface", "Tags": tag_list(tags)}],
    }
    if spec.cpu_options is not None and spec.cpu_options.nested_virtualization is not None:
        data["CpuOptions"] = {"NestedVirtualization": spec.cpu_options.nested_virtualization}
    if placement:
        data["Placement"] = dict(placement)
    if instance_profile:
        data["IamInstanceProfile"] = {"Name": instance_profile}
    mappings = []
    for m in spec.block_device_mappings:
        entry: dict[str, Any] = {"DeviceName": m.device_name}
        if m.ebs is not None:
            ebs: dict[str, Any] = {}
            if m.ebs.volume_size:
                size = parse_resources({"s": m.ebs.volume_size})["s"] // 1000
                ebs["VolumeSize"] = -(-size // (1024**3))
            for key, value in (
                ("DeleteOnTermination", m.ebs.delete_on_termination),
                ("Encrypted", m.ebs.encrypted),
                ("Iops", m.ebs.iops),
                ("KmsKeyId", m.ebs.kms_key_id),
                ("SnapshotId", m.ebs.snapshot_id),
                ("Throughput", m.ebs.throughput),
                ("VolumeType", m.ebs.volume_type),
            ):
                if value is not None:
                    ebs[key] = value
            entry["Ebs"] = ebs
        mappings.append(entry)
    if not mappings and spec.effective_ami_family() in ("AL2", "AL2023"):
        mappings.append(
            {
                "DeviceName": "/dev/xvda",
                "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": True},
            }
        )
    if mappings:
        data["BlockDeviceMappings"] = mappings
    return data


def launch_template_name(data: Mapping[str, Any], cluster: str, node_class: str) -> str:
    """Deterministic: the same resolved options always give the same name."""
    digest = hashlib.sha256(
        json.dumps({"data": data, "cluster": cluster, "class": node_class}, sort_keys=True).encode()
    ).hexdigest()
    return f"{L.LAUNCH_TEMPLATE_PREFIX}{int(digest[:16], 16)}"


def create_fleet_input(
    capacity_type: str,
    templates: Mapping[str, Sequence[Override]],
    tags: Mapping[str, str],
    context: str | None = None,
    interruptible_reservation: bool = False,
) -> dict[str, Any]:
    """Type instant, one instance; lowest-price on-demand, price-capacity-optimized spot; an
    interruptible capacity reservation is bought as ``reserved-capacity`` of that type."""
    request: dict[str, Any] = {
        "Type": "instant",
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": (
                "reserved-capacity" if interruptible_reservation else capacity_type
            ),
        },
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [
                    {
                        "InstanceType": o.instance_type,
                        "SubnetId": o.subnet_id,
                        "AvailabilityZone": o.zone,
                        "ImageId": o.image_id,
                        "Priority": o.price,
                    }
                    for o in overrides
                ],
            }
            for name, overrides in templates.items()
        ],
        "TagSpecifications": [
            {"ResourceType": kind, "Tags": tag_list(tags)}
            for kind in ("instance", "volume", "fleet")
        ],
    }
    if capacity_type == "spot":
        request["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
    elif interruptible_reservation:
        request["ReservedCapacityOptions"] = {"ReservationTypes": [INTERRUPTIBLE_RESERVATION]}
    else:
        request["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
    if context:
        request["Context"] = context
    return request


def fleet_errors(response: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(code, message, instance type, zone) of each fleet error."""
    out = []
    for error in response.get("Errors") or []:
        override = error.get("LaunchTemplateAndOverrides", {}).get("Overrides", {})
        out.append(
            (
                error.get("ErrorCode", ""),
                error.get("ErrorMessage", ""),
                override.get("InstanceType", ""),
                override.get("AvailabilityZone", ""),
            )
        )
    return out
