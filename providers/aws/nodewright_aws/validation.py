"""Dry-run validation of an EC2NodeClass (Karpenter's ``ValidationSucceeded`` condition): once
a class resolves, EC2 is asked with ``DryRun`` whether the controller may call
CreateLaunchTemplate, CreateFleet and RunInstances (in one of the class's subnets) with what
the class would launch. ``UnauthorizedOperation`` on any of them makes the class not Ready,
with Karpenter's reason (``CreateLaunchTemplateAuthCheckFailed``, ...). A verdict is kept for
30 minutes per class spec and resolution; an answer that is neither (throttling, an outage)
gives no verdict. ``aws.disable-dry-run`` turns the check off."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import botocore.exceptions

from nodewright.plugin import InstanceType, ProviderError
from nodewright_aws import labels as L
from nodewright_aws.clients import AWSClients, aws_errors, error_code, error_text
from nodewright_aws.discovery import Resolution, ami_for
from nodewright_aws.launch import (
    Override,
    create_fleet_input,
    launch_template_data,
    static_hash,
    tag_list,
)
from nodewright_aws.nodeclass import EC2NodeClass

log = logging.getLogger(__name__)

VALIDATION_TTL = timedelta(minutes=30)
UNAUTHORIZED = "UnauthorizedOperation"
DRY_RUN_PASSED = "DryRunOperation"
#: API -> (condition reason, message) when the controller may not call it.
REFUSED = {
    "CreateLaunchTemplate": (
        "CreateLaunchTemplateAuthCheckFailed",
        "Controller isn't authorized to call ec2:CreateLaunchTemplate",
    ),
    "CreateFleet": (
        "CreateFleetAuthCheckFailed",
        "Controller isn't authorized to call ec2:CreateFleet",
    ),
    "RunInstances": (
        "RunInstancesAuthCheckFailed",
        "Controller isn't authorized to call ec2:RunInstances",
    ),
}

Verdict = tuple[str, str] | None


class _NoVerdict(Exception):
    """EC2 answered neither "would succeed" nor "unauthorized"."""


class DryRunValidation:
    """The dry-run verdict of each class, kept for 30 minutes."""

    def __init__(
        self,
        clients: AWSClients,
        cluster_name: Callable[[], str],
        now: Callable[[], datetime],
        *,
        disabled: bool,
    ) -> None:
        self.clients = clients
        self.cluster_name = cluster_name
        self.now = now
        self.disabled = disabled
        #: Class name -> (key of what was checked, when, the verdict).
        self.verdicts: dict[str, tuple[str, datetime, Verdict]] = {}

    def problem(
        self,
        node_class: EC2NodeClass,
        resolution: Resolution,
        instance_types: Callable[[], Sequence[InstanceType]],
    ) -> Verdict:
        """(reason, message) when EC2 says the controller may not launch for the class
        (``instance_types``, the class's, are built only when EC2 is asked)."""
        if self.disabled:
            return None
        key = _key(node_class, resolution)
        now = self.now()
        known = self.verdicts.get(node_class.name)
        if known is not None and known[0] == key and now - known[1] < VALIDATION_TTL:
            return known[2]
        try:
            with aws_errors(f"validating EC2NodeClass {node_class.name!r}"):
                verdict = self._check(node_class, resolution, instance_types())
        except (_NoVerdict, ProviderError, botocore.exceptions.BotoCoreError) as error:
            log.info("EC2NodeClass %s not validated now: %s", node_class.name, error)
            return None
        self.verdicts[node_class.name] = (key, now, verdict)
        return verdict

    def _check(
        self,
        node_class: EC2NodeClass,
        resolution: Resolution,
        instance_types: Sequence[InstanceType],
    ) -> Verdict:
        chosen = next(
            ((t, ami) for t in instance_types if (ami := ami_for(t, resolution.amis)) is not None),
            None,
        )
        if chosen is None or not resolution.subnets:
            raise _NoVerdict("no instance type of the class fits its AMIs")
        instance_type, ami = chosen
        cluster = self.cluster_name()
        tags = {
            **node_class.spec.tags,
            f"{L.CLUSTER_TAG_PREFIX}{cluster}": "owned",
            L.EKS_CLUSTER_NAME_TAG: cluster,
            L.EC2NODECLASS_TAG: node_class.name,
        }
        groups = [g["id"] for g in resolution.security_groups]
        data = launch_template_data(
            node_class,
            image_id=ami.id,
            user_data="",
            security_groups=groups,
            instance_profile=resolution.instance_profile,
            tags=tags,
        )
        name = f"{L.LAUNCH_TEMPLATE_PREFIX}validation-{node_class.name}"
        ec2 = self.clients.ec2
        refused = _dry_run(
            "CreateLaunchTemplate",
            lambda: ec2.create_launch_template(
                DryRun=True,
                LaunchTemplateName=name,
                LaunchTemplateData=data,
                TagSpecifications=[{"ResourceType": "launch-template", "Tags": tag_list(tags)}],
            ),
        )
        if refused is not None:
            return refused
        subnet = resolution.subnets[0]
        fleet = create_fleet_input(
            "on-demand",
            {name: [Override(instance_type.name, subnet.zone, subnet.id, ami.id, 0.0)]},
            tags,
            node_class.spec.context,
        )
        refused = _dry_run("CreateFleet", lambda: ec2.create_fleet(DryRun=True, **fleet))
        if refused is not None:
            return refused
        run: dict[str, Any] = {
            "DryRun": True,
            "MinCount": 1,
            "MaxCount": 1,
            "ImageId": ami.id,
            "InstanceType": instance_type.name,
            "SecurityGroupIds": groups,
            "TagSpecifications": [
                {"ResourceType": kind, "Tags": tag_list(tags)} for kind in ("instance", "volume")
            ],
        }
        if resolution.instance_profile:
            run["IamInstanceProfile"] = {"Name": resolution.instance_profile}
        first: Verdict = None
        for index, each in enumerate(resolution.subnets):
            refused = _dry_run("RunInstances", partial(ec2.run_instances, **run, SubnetId=each.id))
            if refused is None:
                return None  # one subnet that works is enough
            if index == 0:
                first = refused
        return first


def _dry_run(api: str, call: Callable[[], Any]) -> Verdict:
    """None when EC2 says the call would succeed; Karpenter's reason when it is refused."""
    try:
        call()
    except botocore.exceptions.ClientError as error:
        code = error_code(error)
        if code == DRY_RUN_PASSED:
            return None
        if code == UNAUTHORIZED:
            reason, message = REFUSED[api]
            return reason, f"{message}: {error_text(error)}"
        raise _NoVerdict(f"{api}: {error_text(error)}") from None
    raise _NoVerdict(f"{api}: EC2 ran a dry run without saying so")


def _key(node_class: EC2NodeClass, resolution: Resolution) -> str:
    """What a verdict depends on: the spec (hashed as for drift) and the resolution."""
    checked: Mapping[str, Any] = {"spec": static_hash(node_class), "status": resolution.status()}
    return hashlib.sha256(json.dumps(checked, sort_keys=True, default=str).encode()).hexdigest()
