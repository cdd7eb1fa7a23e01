from __future__ import annotations

import pytest
from pydantic import ValidationError

from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import parse_object
from nodewright_azure.cloudprovider import provider_info
from nodewright_azure.nodeclass import AKSNodeClass

SEED_002 = {
    "apiVersion": "karpenter.azure.com/v1alpha2",
    "kind": "AKSNodeClass",
    "metadata": {"name": "default", "generation": 1},
    "spec": {"imageFamily": "Ubuntu2204", "osDiskSizeGB": 128},
}


def test_seed_002_node_class_parses_with_defaults() -> None:
    node_class = AKSNodeClass.model_validate(SEED_002)
    assert node_class.spec.image_family == "Ubuntu2204"
    assert node_class.spec.os_disk_size_gb == 128
    assert node_class.spec.os_sku == "Ubuntu"
    assert node_class.spec.max_pods is None
    assert AKSNodeClass.model_validate({"metadata": {"name": "x"}}).spec.os_disk_size_gb == 128


def test_full_spec_round_trips_and_keeps_unknown_fields() -> None:
    manifest = {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "full"},
        "spec": {
            "imageFamily": "AzureLinux",
            "osDiskSizeGB": 64,
            "vnetSubnetID": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/"
            "virtualNetworks/v/subnets/nodes",
            "tags": {"team": "web"},
            "maxPods": 50,
            "kubelet": {
                "cpuManagerPolicy": "static",
                "cpuCFSQuota": True,
                "imageGCHighThresholdPercent": 85,
                "imageGCLowThresholdPercent": 80,
                "containerLogMaxFiles": 5,
            },
            "security": {"encryptionAtHost": True},
            "localDNS": {"mode": "Preferred"},
            "futureField": {"x": 1},
        },
    }
    node_class = AKSNodeClass.model_validate(manifest)
    out = node_class.to_dict()["spec"]
    assert out["localDNS"] == {"mode": "Preferred"}
    assert out["futureField"] == {"x": 1}
    assert out["kubelet"]["cpuCFSQuota"] is True
    assert out["vnetSubnetID"].endswith("/subnets/nodes")
    assert node_class.spec.os_sku == "AzureLinux"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"osDiskSizeGB": 10}, "osDiskSizeGB"),
        ({"imageFamily": "Windows2022"}, "imageFamily"),
        ({"maxPods": 400}, "maxPods"),
        ({"vnetSubnetID": "subnet-1"}, "vnetSubnetID"),
        ({"tags": {"a<b": "x"}}, "tags"),
        (
            {"kubelet": {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}},
            "kubelet",
        ),
        ({"kubelet": {"cpuManagerPolicy": "dynamic"}}, "cpuManagerPolicy"),
    ],
)
def test_invalid_values_are_errors_naming_the_field(spec: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        AKSNodeClass.model_validate({"metadata": {"name": "bad"}, "spec": spec})


def test_both_api_versions_are_served() -> None:
    registry = KindRegistry()
    (kind,) = provider_info().node_classes
    registry.register(kind.model, kind.extra_versions)
    for version in ("karpenter.azure.com/v1beta1", "karpenter.azure.com/v1alpha2"):
        obj = parse_object({**SEED_002, "apiVersion": version}, registry, "seed-002.yaml")
        assert isinstance(obj, AKSNodeClass)


def test_manifest_errors_name_the_object_and_field() -> None:
    registry = KindRegistry()
    (kind,) = provider_info().node_classes
    registry.register(kind.model, kind.extra_versions)
    bad = {**SEED_002, "spec": {"osDiskSizeGB": 5}}
    with pytest.raises(ValueError, match="osDiskSizeGB") as info:
        parse_object(bad, registry, "seed-002.yaml")
    assert "default" in str(info.value)
