"""Launch templates (Karpenter's launchtemplate provider): one per distinct template data,
named from its hash so NodeClaims share it, created on first use with the bootstrap user data
for the AMI family, and deleted once unused for a minute."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

import botocore.exceptions

from nodewright.plugin import CAPACITY_TYPE_LABEL, LaunchError, LaunchRequest
from nodewright_aws import labels as L
from nodewright_aws.clients import AWSClients, error_code, error_text
from nodewright_aws.cluster import EKSCluster
from nodewright_aws.discovery import AMI, Resolution
from nodewright_aws.launch import (
    INTERRUPTIBLE_RESERVATION,
    launch_template_data,
    launch_template_name,
    tag_list,
)
from nodewright_aws.nodeclass import EC2NodeClass
from nodewright_aws.options import Settings
from nodewright_aws.userdata import BootstrapOptions, UserDataError, claim_taints
from nodewright_aws.userdata import generate as generate_user_data

log = logging.getLogger(__name__)

#: A template unused this long is deleted.
LAUNCH_TEMPLATE_TTL = timedelta(minutes=1)
#: User data texts kept before the memo starts over (a cache: dropping it costs renders).
_USER_DATA_KEPT = 256


class LaunchTemplateProvider:
    """This cluster's launch templates, with when each was last used."""

    def __init__(
        self,
        clients: AWSClients,
        settings: Settings,
        cluster: EKSCluster,
        now: Callable[[], datetime],
    ) -> None:
        self.clients = clients
        self.settings = settings
        self.cluster = cluster
        self.now = now
        self.templates: dict[str, datetime] = {}
        self.templates_loaded = False
        #: (AMI family, bootstrap options as written out) -> the user data they make.
        self._user_data: dict[tuple[str, str], str] = {}

    def bootstrap_options(
        self, request: LaunchRequest, node_class: EC2NodeClass, capacity_type: str, max_pods: int
    ) -> BootstrapOptions:
        """Cluster endpoint/CA/CIDR (options, else EKS), the class's kubelet settings, the
        NodeClaim's labels (with its capacity type) and taints, the class's user data."""
        settings = self.settings
        needs_eks = not (
            settings.cluster_endpoint and settings.cluster_ca_bundle and settings.cluster_cidr
        )
        eks = self.cluster.description() if needs_eks else {}
        network = eks.get("kubernetesNetworkConfig") or {}
        claim = request.node_claim
        return BootstrapOptions(
            cluster_name=self.cluster.name,
            cluster_endpoint=settings.cluster_endpoint or str(eks.get("endpoint") or ""),
            ca_bundle=settings.cluster_ca_bundle
            or str((eks.get("certificateAuthority") or {}).get("data") or ""),
            cluster_cidr=settings.cluster_cidr
            or str(network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr") or ""),
            max_pods=max_pods,
            kubelet=node_class.spec.kubelet,
            labels={**claim.metadata.labels, CAPACITY_TYPE_LABEL: capacity_type},
            taints=claim_taints(claim.spec.taints, claim.spec.startup_taints),
            custom=node_class.spec.user_data or "",
            instance_store_policy=node_class.spec.instance_store_policy,
        )

    def ensure_for(
        self,
        request: LaunchRequest,
        node_class: EC2NodeClass,
        *,
        resolution: Resolution,
        ami: AMI,
        max_pods: int,
        capacity_type: str,
        tags: dict[str, str],
        reservation_id: str | None,
        interruptible: bool = False,
        efa_count: int = 0,
        placement: Mapping[str, Any] | None = None,
    ) -> str:
        """The name of the template launching ``ami`` for this claim, created if missing:
        into reservation ``reservation_id`` (as interruptible capacity when ``interruptible``),
        with ``efa_count`` EFA interfaces and in ``placement`` (a placement group)."""
        family = node_class.spec.effective_ami_family()
        options = self.bootstrap_options(request, node_class, capacity_type, max_pods)
        # The user data is a function of the family and the options alone, and launches of
        # one pool's claims ask for the same few (one per max-pods value) over and over.
        key = (family, repr(options))
        text = self._user_data.get(key)
        if text is None:
            try:
                text = generate_user_data(family, options)
            except UserDataError as error:
                raise LaunchError(
                    "InvalidUserData", f"EC2NodeClass {node_class.name!r}: {error}"
                ) from None
            if len(self._user_data) >= _USER_DATA_KEPT:
                self._user_data.clear()
            self._user_data[key] = text
        data = launch_template_data(
            node_class,
            image_id=ami.id,
            user_data=text,
            security_groups=[g["id"] for g in resolution.security_groups],
            instance_profile=resolution.instance_profile,
            tags=tags,
            efa_count=efa_count,
            placement=placement,
        )
        if reservation_id is not None:
            data["CapacityReservationSpecification"] = {
                "CapacityReservationTarget": {"CapacityReservationId": reservation_id}
            }
            if interruptible:
                data["InstanceMarketOptions"] = {"MarketType": INTERRUPTIBLE_RESERVATION}
        return self.ensure(data, node_class)

    def ensure(self, data: dict[str, Any], node_class: EC2NodeClass) -> str:
        name = launch_template_name(data, self.cluster.name, node_class.name)
        if name not in self.templates:
            ec2 = self.clients.ec2
            try:
                ec2.describe_launch_templates(LaunchTemplateNames=[name])
            except botocore.exceptions.ClientError as error:
                if error_code(error) != "InvalidLaunchTemplateName.NotFoundException":
                    raise
                lt_tags = {
                    f"{L.CLUSTER_TAG_PREFIX}{self.cluster.name}": "owned",
                    L.EKS_CLUSTER_NAME_TAG: self.cluster.name,
                    L.EC2NODECLASS_TAG: node_class.name,
                    **node_class.spec.tags,
                }
                try:
                    ec2.create_launch_template(
                        LaunchTemplateName=name,
                        LaunchTemplateData=data,
                        TagSpecifications=[
                            {"ResourceType": "launch-template", "Tags": tag_list(lt_tags)}
                        ],
                    )
                except botocore.exceptions.ClientError as create_error:
                    if (
                        error_code(create_error)
                        != "InvalidLaunchTemplateName.AlreadyExistsException"
                    ):
                        raise
        self.templates[name] = self.now()
        return name

    def cleanup(self) -> list[str]:
        """Delete this cluster's launch templates not used for a minute; return their names."""
        now = self.now()
        if not self.templates_loaded:
            self.templates_loaded = True
            pages = self.clients.ec2.get_paginator("describe_launch_templates").paginate(
                Filters=[{"Name": f"tag:{L.EKS_CLUSTER_NAME_TAG}", "Values": [self.cluster.name]}]
            )
            for page in pages:
                for template in page.get("LaunchTemplates", []):
                    self.templates.setdefault(template["LaunchTemplateName"], now)
        stale = [n for n, used in self.templates.items() if now - used >= LAUNCH_TEMPLATE_TTL]
        for name in stale:
            try:
                self.clients.ec2.delete_launch_template(LaunchTemplateName=name)
            except botocore.exceptions.ClientError as error:
                log.info("launch template %s not deleted: %s", name, error_text(error))
            del self.templates[name]
        return stale
