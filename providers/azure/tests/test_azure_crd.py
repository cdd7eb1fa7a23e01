"""The AKSNodeClass CRD: a valid apiextensions v1 object shaped as Karpenter Azure's, that the
manifests users have (the example, seed 002's v1alpha2 class) validate against and that
rejects what the CRD rejects."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

from nodewright.commands.crds import all_crds
from nodewright.commands.host import load_host
from nodewright_azure.crd import aks_node_class_crd
from nodewright_azure.nodeclass import AKSNodeClass
from tests.crds.cel import validate as broken_rules

ROOT = Path(__file__).resolve().parents[3]


K8S_VERSION = "1.30.0"
SEED_002_CLASS = {
    "apiVersion": "karpenter.azure.com/v1alpha2",
    "kind": "AKSNodeClass",
    "metadata": {"name": "default", "generation": 1},
    "spec": {"imageFamily": "Ubuntu2204", "osDiskSizeGB": 128},
}


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return aks_node_class_crd()


def _schema(crd: Mapping[str, Any], version: str) -> dict[str, Any]:
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(version)


def _nodes(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from _nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), Mapping):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


def _validate(crd: Mapping[str, Any], document: Mapping[str, Any]) -> None:
    version = document["apiVersion"].split("/", 1)[1]
    jsonschema.Draft7Validator(_schema(crd, version)).validate(document)


def test_the_provider_supplies_it_to_nodewright_crds() -> None:
    names = [c["metadata"]["name"] for c in all_crds(load_host())]
    assert "aksnodeclasses.karpenter.azure.com" in names


def test_it_is_a_valid_structural_apiextensions_object(crd: dict[str, Any]) -> None:
    kubernetes_validate.validate(crd, K8S_VERSION, strict=True)
    for version in ("v1beta1", "v1alpha2"):
        for path, node in _nodes(_schema(crd, version)):
            assert "type" in node or node.get("x-kubernetes-int-or-string"), path
            assert not ("properties" in node and "additionalProperties" in node), path
            for rule in node.get("x-kubernetes-validations", []):
                assert rule["rule"], path
                assert rule["message"], path
        assert _schema(crd, version)["properties"]["metadata"] == {"type": "object"}


def test_names_versions_and_columns_match_karpenter_azure(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "aksnodeclasses.karpenter.azure.com"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["shortNames"] == ["aksnc", "aksncs"]
    assert spec["names"]["categories"] == ["karpenter", "nap"]
    versions = {v["name"]: v for v in spec["versions"]}
    assert versions["v1beta1"]["storage"] is True
    assert versions["v1alpha2"]["storage"] is False
    assert versions["v1alpha2"]["served"] is True
    assert versions["v1alpha2"]["deprecated"] is True
    assert "v1beta1" in versions["v1alpha2"]["deprecationWarning"]
    for version in versions.values():
        columns = [(c["name"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]]
        assert columns == [("Ready", 0), ("Age", 0), ("ImageFamily", 1)]
        assert version["subresources"] == {"status": {}}
    # One schema in both versions (the Go types differ only in helper methods).
    assert _schema(crd, "v1beta1") == _schema(crd, "v1alpha2")


def test_seed_002_and_example_manifests_validate(crd: dict[str, Any]) -> None:
    _validate(crd, SEED_002_CLASS)
    checked = 0
    for path in sorted((ROOT / "examples" / "azure").rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == "AKSNodeClass":
                _validate(crd, document)
                checked += 1
    assert checked >= 1


def test_a_full_spec_with_status_validates(crd: dict[str, Any]) -> None:
    document = {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "full"},
        "spec": {
            "imageFamily": "AzureLinux",
            "osDiskSizeGB": 64,
            "maxPods": 110,
            "tags": {"team": "web"},
            "kubelet": {"cpuManagerPolicy": "static", "containerLogMaxSize": "20Mi"},
            "security": {"encryptionAtHost": True, "trustedLaunch": {"vtpm": True}},
            "gpu": {"mode": "None"},
            "artifactStreaming": {"enabled": False},
            "linuxOSConfig": {"transparentHugePageEnabled": "madvise"},
        },
        "status": {
            "images": [
                {
                    "id": "/CommunityGalleries/g/images/2204gen2containerd/versions/1.2.3",
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                    ],
                }
            ],
            "kubernetesVersion": "1.30.3",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-18T10:28:20Z"}
            ],
        },
    }
    _validate(crd, document)
    AKSNodeClass.model_validate(document)


@pytest.mark.parametrize(
    "spec",
    [
        {"imageFamily": "Windows2022"},
        {"osDiskSizeGB": 20},
        {"osDiskSizeGB": 4096},
        {"maxPods": 5},
        {"vnetSubnetID": "subnet-1"},
        {"fipsMode": "On"},
        {"kubelet": {"cpuManagerPolicy": "dynamic"}},
        {"kubelet": {"containerLogMaxFiles": 1}},
        {"gpu": {"mode": "Auto"}},
    ],
)
def test_the_schema_and_the_model_reject_the_same_values(
    crd: dict[str, Any], spec: dict[str, Any]
) -> None:
    document = {**SEED_002_CLASS, "spec": spec}
    with pytest.raises(jsonschema.ValidationError):
        _validate(crd, document)
    with pytest.raises(ValidationError):
        AKSNodeClass.model_validate(document)


def _rule_messages(crd: Mapping[str, Any]) -> set[str]:
    return {
        rule["message"]
        for _, node in _nodes(_schema(crd, "v1beta1"))
        for rule in node.get("x-kubernetes-validations", [])
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"kubelet": {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}},
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
        ),
        ({"fipsMode": "FIPS", "imageFamily": "Ubuntu2404"}, "FIPS is not supported for Ubuntu2404"),
        (
            {"fipsMode": "FIPS", "imageFamily": "Ubuntu2204"},
            "FIPS on Ubuntu2204 requires security.trustedLaunch (vtpm or secureBoot)",
        ),
        ({"tags": {"a?b": "x"}}, "tags keys must not contain '<', '>', '%', '&', or '?'"),
        ({"tags": {"k": "v" * 300}}, "tags values must be less than 256 characters"),
    ],
)
def test_cel_rules_reject_and_the_model_agrees(
    crd: dict[str, Any], spec: dict[str, Any], message: str
) -> None:
    """The CRD's rule (evaluated with cel-python, as the API server would) rejects the manifest
    with its message, and nodewright's model rejects it too (simulate and run enforce it)."""
    document = {**SEED_002_CLASS, "spec": spec}
    assert message in {broken.message for broken in broken_rules(crd, document)}
    with pytest.raises(ValidationError):
        AKSNodeClass.model_validate(document)


def test_fips_on_ubuntu2204_with_trusted_launch_is_accepted(crd: dict[str, Any]) -> None:
    document = {
        **SEED_002_CLASS,
        "spec": {
            "fipsMode": "FIPS",
            "imageFamily": "Ubuntu2204",
            "security": {"trustedLaunch": {"secureBoot": True}},
        },
    }
    assert broken_rules(crd, document) == []
    assert AKSNodeClass.model_validate(document).spec.fips_mode == "FIPS"


def test_valid_manifests_break_no_rule(crd: dict[str, Any]) -> None:
    assert broken_rules(crd, SEED_002_CLASS) == []
    full = {
        **SEED_002_CLASS,
        "spec": {
            "imageFamily": "AzureLinux",
            "tags": {"team": "web", "cost-center": "42"},
            "kubelet": {"imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 80},
            "linuxOSConfig": {"swapFileSize": "1500Mi"},
            "localDNS": {
                "mode": "Preferred",
                "vnetDNSOverrides": [_dns_zone(".", "VnetDNS"), _dns_zone("cluster.local")],
                "kubeDNSOverrides": [_dns_zone("."), _dns_zone("cluster.local")],
            },
        },
    }
    full["spec"]["kubelet"]["failSwapOn"] = False  # type: ignore[index]
    assert broken_rules(crd, full) == []
    # Swap without failSwapOn: false breaks the rule.
    no_fail_swap = {**full, "spec": {**full["spec"], "kubelet": {}}}  # type: ignore[dict-item]
    assert [b.message for b in broken_rules(crd, no_fail_swap)] == [
        "kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize is specified"
    ]
    # The local DNS overrides must name both required zones.
    one_zone = copy.deepcopy(full)
    one_zone["spec"]["localDNS"]["kubeDNSOverrides"] = [_dns_zone(".")]  # type: ignore[index]
    assert "must contain required zones '.' and 'cluster.local'" in {
        b.message for b in broken_rules(crd, one_zone)
    }


def _dns_zone(zone: str, destination: str = "ClusterCoreDNS") -> dict[str, Any]:
    return {
        "zone": zone,
        "queryLogging": "Error",
        "protocol": "PreferUDP",
        "forwardDestination": destination,
        "forwardPolicy": "Sequential",
        "maxConcurrent": 1000,
        "cacheDuration": "1h",
        "serveStaleDuration": "1h",
        "serveStale": "Verify",
    }


def test_swap_rule_is_declared(crd: dict[str, Any]) -> None:
    assert (
        "kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize is specified"
        in _rule_messages(crd)
    )


def test_dumped_yaml_round_trips(crd: dict[str, Any]) -> None:
    assert yaml.safe_load(yaml.safe_dump(crd)) == crd
