"""EC2NodeClass parsing: Karpenter manifests load unchanged; CEL rules name the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from nodewright_aws.nodeclass import EC2NodeClass
from providers.aws.tests.aws_helpers import node_class, node_class_manifest


def test_a_full_karpenter_manifest_loads_and_round_trips() -> None:
    manifest = node_class_manifest(
        amiFamily="AL2023",
        userData="#!/bin/bash\necho hi\n",
        tags={"team": "a"},
        associatePublicIPAddress=False,
        instanceStorePolicy="RAID0",
        detailedMonitoring=True,
        metadataOptions={"httpTokens": "required", "httpPutResponseHopLimit": 2},
        blockDeviceMappings=[
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "kmsKeyID": "k"},
            }
        ],
        kubelet={
            "maxPods": 50,
            "kubeReserved": {"cpu": "200m"},
            "imageGCHighThresholdPercent": 80,
            "imageGCLowThresholdPercent": 70,
            "clusterDNS": ["10.0.0.10"],
        },
        capacityReservationSelectorTerms=[{"id": "cr-0123abc"}],
    )
    parsed = EC2NodeClass.model_validate(manifest)
    spec = parsed.to_dict()["spec"]
    assert spec["associatePublicIPAddress"] is False
    assert spec["blockDeviceMappings"][0]["ebs"]["kmsKeyID"] == "k"
    assert spec["kubelet"]["imageGCHighThresholdPercent"] == 80
    assert spec["kubelet"]["clusterDNS"] == ["10.0.0.10"]
    assert spec["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 2,
        "httpTokens": "required",
    }


def test_unknown_fields_are_preserved() -> None:
    manifest = node_class_manifest(
        placementGroupSelector={"name": "pg"}, kubelet={"futureKnob": "x"}
    )
    spec = EC2NodeClass.model_validate(manifest).to_dict()["spec"]
    assert spec["placementGroupSelector"] == {"name": "pg"}
    assert spec["kubelet"]["futureKnob"] == "x"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"instanceProfile": "p"}, "exactly one of 'role' or 'instanceProfile'"),
        ({"amiSelectorTerms": [{"id": "ami-1"}]}, "spec.amiFamily is required"),
        (
            {"amiSelectorTerms": [{"alias": "al2023@latest"}, {"id": "ami-1"}]},
            "must be the only term",
        ),
        ({"amiSelectorTerms": [{"alias": "ubuntu@latest"}]}, "amiSelectorTerms.alias"),
        ({"amiSelectorTerms": [{"alias": "windows2022@v1"}]}, "Windows allows @latest"),
        ({"amiFamily": "Bottlerocket"}, "must match the alias's family"),
        ({"subnetSelectorTerms": []}, "subnetSelectorTerms"),
        ({"subnetSelectorTerms": [{"id": "sn-1"}]}, "subnetSelectorTerms.id"),
        (
            {"securityGroupSelectorTerms": [{"id": "sg-1", "name": "x"}]},
            "exactly one of 'tags', 'id' or 'name'",
        ),
        ({"tags": {"karpenter.sh/nodepool": "x"}}, "restricted"),
        ({"tags": {"kubernetes.io/cluster/c": "owned"}}, "restricted"),
        ({"metadataOptions": {"httpPutResponseHopLimit": 65}}, "httpPutResponseHopLimit"),
        (
            {"kubelet": {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}},
            "imageGCHighThresholdPercent",
        ),
    ],
)
def test_invalid_specs_are_refused_naming_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        node_class(**spec)


def test_effective_ami_family_comes_from_the_alias() -> None:
    assert node_class().spec.effective_ami_family() == "AL2023"
    assert node_class(amiFamily="Custom").spec.effective_ami_family() == "Custom"
    assert (
        node_class(amiSelectorTerms=[{"alias": "bottlerocket@v1.20.0"}]).spec.effective_ami_family()
        == "Bottlerocket"
    )
