"""Drift (Karpenter's cloudprovider drift): the class's static hash first (no AWS call), then
the instance's AMI, security groups and subnet against what the class resolves to now, then
the NodeClaim's placement group against the class's. Also
re-stamps NodeClaims hashed under another hash version, so later class changes drift them."""

from __future__ import annotations

import botocore.exceptions

from nodewright.plugin import NodeClaim, ProviderCluster, ProviderError, restamp_hashes
from nodewright_aws import labels as L
from nodewright_aws.discovery import NodeClassDiscovery
from nodewright_aws.instance import InstanceProvider, parse_provider_id
from nodewright_aws.launch import static_hash
from nodewright_aws.nodeclass import EC2NodeClass
from nodewright_aws.placementgroup import LOOKUP_ERRORS, PlacementGroupProvider


def static_fields_drifted(node_claim: NodeClaim, node_class: EC2NodeClass) -> bool:
    """Karpenter's static drift: the NodeClaim's ``ec2nodeclass-hash`` annotation differs
    from the class's hash. A missing annotation, or one written under another hash version
    (the hashing changed, not the class), is not drift."""
    annotations = node_claim.metadata.annotations
    stored = annotations.get(L.NODECLASS_HASH_ANNOTATION)
    version = annotations.get(L.NODECLASS_HASH_VERSION_ANNOTATION)
    if not stored or version != L.NODECLASS_HASH_VERSION:
        return False
    return stored != static_hash(node_class)


def placement_group_drifted(
    node_claim: NodeClaim, node_class: EC2NodeClass, groups: PlacementGroupProvider
) -> bool:
    """The NodeClaim's placement-group label differs from the class's group now (a selector
    added, removed or naming another group); not when the class's group cannot be read."""
    try:
        group = groups.get(node_class)
    except LOOKUP_ERRORS:  # EC2 cannot say now: no verdict
        return False
    launched_in = node_claim.metadata.labels.get(L.PLACEMENT_GROUP_ID, "")
    return launched_in != (group.id if group is not None else "")


def drift_reason(
    node_claim: NodeClaim,
    node_class: EC2NodeClass,
    discovery: NodeClassDiscovery,
    instances: InstanceProvider,
    placement_groups: PlacementGroupProvider | None = None,
) -> str | None:
    """Why the claim's instance drifted from its class, or None (also when AWS cannot say)."""
    provider_id = node_claim.status.provider_id
    if not provider_id:
        return None
    if static_fields_drifted(node_claim, node_class):  # first: it needs no AWS call
        return "NodeClassDrift"
    try:
        resolution = discovery.resolution(node_class)
        description = instances.describe(parse_provider_id(provider_id))
    except (ProviderError, botocore.exceptions.ClientError):
        return None
    if description is None or not resolution.ready:
        return None
    image = node_claim.status.image_id or description.get("ImageId", "")
    if image and image not in {a.id for a in resolution.amis}:
        return "AMIDrift"
    groups = {g["GroupId"] for g in description.get("SecurityGroups", [])}
    if groups and groups != {g["id"] for g in resolution.security_groups}:
        return "SecurityGroupDrift"
    subnet = description.get("SubnetId")
    if subnet and subnet not in {s.id for s in resolution.subnets}:
        return "SubnetDrift"
    if placement_groups is not None and placement_group_drifted(
        node_claim, node_class, placement_groups
    ):
        return "PlacementGroupDrift"
    return None


def restamp(cluster: ProviderCluster) -> list[str]:
    """Re-stamp NodeClaims hashed under another version (Karpenter's ``v6`` on takeover)
    with the class's current hash, so later class changes drift them."""
    return restamp_hashes(
        cluster,
        EC2NodeClass,
        L.NODECLASS_HASH_VERSION_ANNOTATION,
        L.NODECLASS_HASH_VERSION,
        lambda node_class: {
            L.NODECLASS_HASH_ANNOTATION: static_hash(node_class),
            L.NODECLASS_HASH_VERSION_ANNOTATION: L.NODECLASS_HASH_VERSION,
        },
    )
