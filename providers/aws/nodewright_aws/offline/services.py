"""The offline account's services besides EC2 and Pricing (:mod:`nodewright_aws.offline.cloud`):
SSM (the EKS AMI parameters), IAM (instance profiles), EKS (the cluster), SQS (an empty
interruption queue) and ARC zonal shift (no shift)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nodewright_aws.offline.api import Service, client_error, hex_id

if TYPE_CHECKING:
    from nodewright_aws.offline.cloud import OfflineAWS

OFFLINE_ACCOUNT = "000000000000"
#: AWS publishes no Amazon Linux 2 EKS AMIs for Kubernetes 1.33 and later.
AL2_PATH = re.compile(r"/eks/optimized-ami/1\.(\d+)/amazon-linux-2(-arm64|-gpu)?/")


class OfflineSSM(Service):
    def __init__(self, cloud: OfflineAWS) -> None:
        self.cloud = cloud

    def get_parameter(self, Name: str, **_: Any) -> dict[str, Any]:
        al2 = AL2_PATH.search(Name)
        if al2 is not None and int(al2.group(1)) >= 33:
            raise client_error("GetParameter", "ParameterNotFound", f"Parameter {Name} not found.")
        arch = "arm64" if "arm64" in Name else "x86_64"
        image_id = hex_id("ami", Name)
        self.cloud.image(image_id, Name.strip("/").replace("/", "-"), arch)
        return {"Parameter": {"Name": Name, "Type": "String", "Value": image_id}}


class OfflineIAM(Service):
    def __init__(self, cloud: OfflineAWS) -> None:
        self.cloud = cloud

    def get_instance_profile(self, InstanceProfileName: str) -> dict[str, Any]:
        profile = self.cloud.instance_profiles.get(InstanceProfileName)
        if profile is None:
            raise client_error(
                "GetInstanceProfile",
                "NoSuchEntity",
                f"Instance Profile {InstanceProfileName} cannot be found.",
            )
        return {"InstanceProfile": profile}

    def create_instance_profile(
        self, InstanceProfileName: str, Path: str = "/", Tags: Sequence[Any] = ()
    ) -> dict[str, Any]:
        profile = {
            "InstanceProfileName": InstanceProfileName,
            "Path": Path,
            "Roles": [],
            "Tags": list(Tags),
        }
        self.cloud.instance_profiles[InstanceProfileName] = profile
        return {"InstanceProfile": profile}

    def add_role_to_instance_profile(self, InstanceProfileName: str, RoleName: str) -> None:
        self.get_instance_profile(InstanceProfileName)["InstanceProfile"]["Roles"].append(
            {"RoleName": RoleName}
        )

    def remove_role_from_instance_profile(self, InstanceProfileName: str, RoleName: str) -> None:
        profile = self.get_instance_profile(InstanceProfileName)["InstanceProfile"]
        profile["Roles"] = [r for r in profile["Roles"] if r["RoleName"] != RoleName]


class OfflineEKS(Service):
    def __init__(self, cloud: OfflineAWS) -> None:
        self.cloud = cloud

    def describe_cluster(self, name: str) -> dict[str, Any]:
        return {
            "cluster": {
                "name": name,
                "arn": f"arn:aws:eks:{self.cloud.region}:{OFFLINE_ACCOUNT}:cluster/{name}",
                "version": self.cloud.kubernetes_version,
                "endpoint": f"https://{name}.offline.invalid",
                "certificateAuthority": {"data": "b2ZmbGluZQ=="},
                "kubernetesNetworkConfig": {"serviceIpv4Cidr": "10.100.0.0/16"},
                "status": "ACTIVE",
            }
        }


class OfflineSQS(Service):
    """An interruption queue that never holds a message: nothing interrupts offline."""

    def get_queue_url(self, QueueName: str) -> dict[str, Any]:
        return {"QueueUrl": f"https://sqs.offline.invalid/{OFFLINE_ACCOUNT}/{QueueName}"}

    def receive_message(self, **_: Any) -> dict[str, Any]:
        return {"Messages": []}

    def delete_message(self, **_: Any) -> None:
        """No message is ever handed out, so none is deleted."""


class OfflineZonalShift(Service):
    """ARC zonal shift: the cluster is registered and no zone is ever shifted away from."""

    def get_managed_resource(self, resourceIdentifier: str) -> dict[str, Any]:
        return {"arn": resourceIdentifier, "zonalShifts": []}
