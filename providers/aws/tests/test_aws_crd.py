"""The EC2NodeClass CRD: a valid structural apiextensions v1 object shaped as Karpenter's,
that the manifests users have (the example, seed 000 after conversion) validate against, that
rejects what Karpenter's schema rejects, and that ``nodewright crds`` prints."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

from nodewright.api.convert import convert_documents
from nodewright.commands import main
from nodewright_aws.crd import ec2_node_class_crd
from nodewright_aws.nodeclass import EC2NodeClass
from tests.crds.cel import validate as cel_violations

ROOT = Path(__file__).resolve().parents[3]


K8S_VERSION = "1.30.0"
PRIMARY = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
EFA_ONLY = {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}
BASE: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
    },
}


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return ec2_node_class_crd()


def _schema(crd: Mapping[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _nodes(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from _nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), Mapping):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


def _validate(crd: Mapping[str, Any], document: Mapping[str, Any]) -> None:
    jsonschema.Draft7Validator(_schema(crd)).validate(document)


def _with(**spec: Any) -> dict[str, Any]:
    return {**BASE, "spec": {**BASE["spec"], **spec}}


def _rules(crd: Mapping[str, Any]) -> dict[str, str]:
    """message -> CEL expression of every rule in the schema."""
    return {
        r["message"]: r["rule"]
        for _, node in _nodes(_schema(crd))
        for r in node.get("x-kubernetes-validations", [])
    }


def test_nodewright_crds_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    (ours,) = [d for d in printed if d["spec"]["names"]["kind"] == "EC2NodeClass"]
    assert ours == ec2_node_class_crd()


def test_it_is_a_valid_structural_apiextensions_object(crd: dict[str, Any]) -> None:
    kubernetes_validate.validate(crd, K8S_VERSION, strict=True)
    for path, node in _nodes(_schema(crd)):
        assert "type" in node or node.get("x-kubernetes-int-or-string"), path
        assert not ("properties" in node and "additionalProperties" in node), path
        for r in node.get("x-kubernetes-validations", []):
            assert r["rule"], path
            assert r["message"], path
    assert _schema(crd)["properties"]["metadata"] == {"type": "object"}


def test_names_and_columns_match_karpenter(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "ec2nodeclasses.karpenter.k8s.aws"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["shortNames"] == ["ec2nc", "ec2ncs"]
    assert spec["names"]["categories"] == ["karpenter"]
    assert spec["names"]["singular"] == "ec2nodeclass"
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = [(c["name"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]]
    assert columns == [("Ready", 0), ("Age", 0), ("Role", 1)]


def test_seed_000_after_conversion_and_the_examples_validate(crd: dict[str, Any]) -> None:
    checked = 0
    for path in [
        ROOT / "examples/aws/nodeclass.yaml",
        *sorted((ROOT / "examples/aws-seed-000").rglob("*.yaml")),
    ]:
        loaded = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        for document in convert_documents(loaded).documents:
            if document.get("kind") == "EC2NodeClass":
                _validate(crd, document)
                checked += 1
    assert checked == 2


def test_a_full_spec_with_status_validates(crd: dict[str, Any]) -> None:
    document = _with(
        amiFamily="AL2023",
        amiSelectorTerms=[{"name": "my-ami-*", "owner": "self"}, {"ssmParameter": "/my/ami"}],
        blockDeviceMappings=[
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "encrypted": True},
            }
        ],
        kubelet={
            "maxPods": 110,
            "kubeReserved": {"cpu": "100m"},
            "evictionSoft": {"memory.available": "5%"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
        tags={"team": "a"},
        metadataOptions={"httpPutResponseHopLimit": 2},
        capacityReservationSelectorTerms=[{"id": "cr-0123456789abcdef0"}],
        placementGroupSelector={"name": "hpc"},
        networkInterfaces=[PRIMARY, EFA_ONLY],
        cpuOptions={"nestedVirtualization": "enabled"},
        connectionTracking={"tcpEstablishedTimeout": 3600},
    )
    document["status"] = {
        "capacityReservations": [
            {
                "availabilityZone": "us-west-2a",
                "id": "cr-0123456789abcdef0",
                "instanceMatchCriteria": "targeted",
                "instanceType": "m5.large",
                "reservationType": "default",
                "interruptible": True,
                "state": "active",
            }
        ],
        "subnets": [{"id": "subnet-1", "zone": "us-west-2a", "zoneID": "usw2-az1"}],
        "securityGroups": [{"id": "sg-1", "name": "nodes"}],
        "amis": [
            {
                "id": "ami-1",
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                ],
            }
        ],
        "instanceProfile": "p",
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "Ready",
                "message": "",
            }
        ],
    }
    _validate(crd, document)
    EC2NodeClass.model_validate(document)


@pytest.mark.parametrize(
    "spec",
    [
        {"subnetSelectorTerms": []},
        {"subnetSelectorTerms": [{"id": "vpc-1"}]},
        {"securityGroupSelectorTerms": [{"id": "subnet-1"}]},
        {"amiSelectorTerms": [{"alias": "al2023@" + "x" * 30}]},
        {"amiFamily": "Ubuntu"},
        {"instanceStorePolicy": "RAID1"},
        {"metadataOptions": {"httpPutResponseHopLimit": 65}},
        {"metadataOptions": {"httpTokens": "sometimes"}},
        {"kubelet": {"maxPods": -1}},
        {"kubelet": {"imageGCHighThresholdPercent": 101}},
        {"blockDeviceMappings": [{"ebs": {"volumeSize": "100Gi", "volumeType": "gp9"}}]},
        {"capacityReservationSelectorTerms": [{"ownerID": "12"}]},
        {"placementGroupSelector": {"id": "group-1"}},
        {"placementGroupSelector": {"name": ""}},
        {"networkInterfaces": [{**PRIMARY, "interfaceType": "efa"}]},
        {"networkInterfaces": [{**PRIMARY, "deviceIndex": -1}]},
        {"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0}]},
        {"networkInterfaces": [PRIMARY] * 151},
        {"cpuOptions": {"nestedVirtualization": "yes"}},
        {"connectionTracking": {"tcpEstablishedTimeout": 59}},
        {"connectionTracking": {"udpStreamTimeout": 181}},
        {"connectionTracking": {"udpTimeout": 61}},
    ],
)
def test_the_schema_and_the_model_reject_the_same_values(
    crd: dict[str, Any], spec: dict[str, Any]
) -> None:
    document = _with(**spec)
    with pytest.raises(jsonschema.ValidationError):
        _validate(crd, document)
    with pytest.raises(ValidationError):
        EC2NodeClass.model_validate(document)


@pytest.mark.parametrize(
    ("spec", "message", "expression"),
    [
        (
            {"amiSelectorTerms": [{"id": "ami-1"}]},
            "must specify amiFamily if amiSelectorTerms does not contain an alias",
            "has(self.amiFamily)",
        ),
        (
            {"amiFamily": "Bottlerocket"},
            "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias",
            "== 'al2023'",
        ),
        (
            {"amiSelectorTerms": [{"alias": "ubuntu@latest"}]},
            "family is not supported, must be one of the following: 'al2','al2023',"
            "'bottlerocket','windows2019','windows2022','windows2025'",
            "self.find('^[^@]+') in",
        ),
        (
            {"amiSelectorTerms": [{"alias": "al2023"}]},
            "'alias' is improperly formatted, must match the format 'family@version'",
            "self.matches(",
        ),
        (
            {"amiSelectorTerms": [{"alias": "windows2022@v1"}]},
            "windows families may only specify version 'latest'",
            "'latest'",
        ),
        (
            {"amiSelectorTerms": [{"alias": "al2023@latest"}, {"id": "ami-1"}]},
            "'alias' is mutually exclusive, cannot be set with a combination of other "
            "amiSelectorTerms",
            "self.size() != 1",
        ),
        (
            {"amiSelectorTerms": [{"alias": "al2023@latest", "tags": {"a": "b"}}]},
            "'alias' is mutually exclusive, cannot be set with a combination of other fields "
            "in amiSelectorTerms",
            "has(x.alias) && (",
        ),
        (
            {"subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}]},
            "'id' is mutually exclusive, cannot be set with a combination of other fields in "
            "subnetSelectorTerms",
            "has(x.id) && (has(x.tags))",
        ),
        (
            {"securityGroupSelectorTerms": [{"name": "n", "tags": {"a": "b"}}]},
            "'name' is mutually exclusive, cannot be set with a combination of other fields "
            "in securityGroupSelectorTerms",
            "has(x.name) && (",
        ),
        (
            {"instanceProfile": "p"},
            "must specify exactly one of ['role', 'instanceProfile']",
            "!has(self.instanceProfile)",
        ),
        (
            {"tags": {"karpenter.sh/nodepool": "x"}},
            "tag contains a restricted tag matching karpenter.sh/nodepool",
            "k != 'karpenter.sh/nodepool'",
        ),
        (
            {"tags": {"kubernetes.io/cluster/c": "owned"}},
            "tag contains a restricted tag matching kubernetes.io/cluster/",
            "startsWith('kubernetes.io/cluster')",
        ),
        (
            {"kubelet": {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}},
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            "self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent",
        ),
        (
            {"kubelet": {"evictionSoft": {"memory.available": "5%"}}},
            "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
            "self.evictionSoft.all(",
        ),
        (
            {"blockDeviceMappings": [{"rootVolume": True}, {"rootVolume": True}]},
            "must have only one blockDeviceMappings with rootVolume",
            ".size() <= 1",
        ),
        (
            {"placementGroupSelector": {"name": "hpc", "id": "pg-1"}},
            "'name' and 'id' are mutually exclusive",
            "!(has(self.name) && has(self.id))",
        ),
        (
            {"placementGroupSelector": {}},
            "expected at least one, got none, ['name', 'id']",
            "has(self.name) || has(self.id)",
        ),
        (
            {"networkInterfaces": [{**PRIMARY, "deviceIndex": 1}]},
            "networkInterfaces must include a primary interface with interfaceType='interface'",
            "x.deviceIndex == 0 && x.networkCardIndex == 0",
        ),
        (
            {"networkInterfaces": [PRIMARY, PRIMARY]},
            "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, "
            "and can have at most one efa device per network card",
            "x.deviceIndex == y.deviceIndex).size() == 1",
        ),
        (
            {"networkInterfaces": [PRIMARY, EFA_ONLY, {**EFA_ONLY, "deviceIndex": 2}]},
            "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, "
            "and can have at most one efa device per network card",
            "y.interfaceType == 'efa-only').size() == 1",
        ),
        (
            {"connectionTracking": {}},
            "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",
            "has(self.udpTimeout)",
        ),
    ],
)
def test_cel_rules_are_declared_and_the_model_enforces_them(
    crd: dict[str, Any], spec: dict[str, Any], message: str, expression: str
) -> None:
    """The rule is in the CRD with Karpenter's message, cel-python evaluates it to exactly
    that violation (as the API server would), and nodewright's model rejects the manifest."""
    rules = _rules(crd)
    assert message in rules
    assert expression in rules[message]
    assert [b.message for b in cel_violations(crd, _with(**spec))] == [message]
    with pytest.raises(ValidationError):
        EC2NodeClass.model_validate(_with(**spec))


def test_valid_classes_break_no_cel_rule(crd: dict[str, Any]) -> None:
    spec: dict[str, Any]
    for spec in (
        {},
        {"amiFamily": "Custom"},
        {"amiFamily": "AL2023"},
        {"amiSelectorTerms": [{"id": "ami-1"}, {"name": "n", "owner": "self"}], "amiFamily": "AL2"},
        {"amiSelectorTerms": [{"alias": "windows2022@latest"}]},
        {"amiSelectorTerms": [{"alias": "bottlerocket@v1.20.0"}]},
        {
            "kubelet": {
                "evictionSoft": {"memory.available": "5%"},
                "evictionSoftGracePeriod": {"memory.available": "1m"},
                "kubeReserved": {"cpu": "100m"},
            }
        },
        {"tags": {"team": "a", "karpenter.sh/discovery": "c"}},
        {"blockDeviceMappings": [{"rootVolume": True, "ebs": {"volumeSize": "20Gi"}}]},
        {"placementGroupSelector": {"name": "hpc"}},
        {"placementGroupSelector": {"id": "pg-0a1b2c"}},
        {"networkInterfaces": []},
        {
            "networkInterfaces": [
                PRIMARY,
                EFA_ONLY,
                {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
                {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "interface"},
            ]
        },
        {"cpuOptions": {"nestedVirtualization": "enabled"}},
        {"cpuOptions": {}},
        {"connectionTracking": {"udpStreamTimeout": 60}},
    ):
        assert cel_violations(crd, _with(**spec)) == [], spec
        EC2NodeClass.model_validate(_with(**spec))


def test_role_change_and_switch_to_role_are_refused_on_update(crd: dict[str, Any]) -> None:
    old = _with()
    assert cel_violations(crd, _with(role="OtherRole"), old=old)[0].message == (
        "immutable field changed"
    )
    with_profile = {**BASE, "spec": {k: v for k, v in BASE["spec"].items() if k != "role"}}
    with_profile["spec"]["instanceProfile"] = "p"
    messages = [b.message for b in cel_violations(crd, _with(), old=with_profile)]
    assert any(m.startswith("changing from 'instanceProfile' to 'role'") for m in messages)
    assert cel_violations(crd, _with(), old=old) == []


def test_role_is_immutable_and_profile_role_switch_is_refused(crd: dict[str, Any]) -> None:
    rules = _rules(crd)
    assert rules["immutable field changed"] == "self == oldSelf"
    assert (
        "has(oldSelf.role) && has(self.role)"
        in rules[
            "changing from 'instanceProfile' to 'role' is not supported. You must delete and "
            "recreate this node class if you want to change this."
        ]
    )


def test_metadata_options_default_as_in_karpenter(crd: dict[str, Any]) -> None:
    options = _schema(crd)["properties"]["spec"]["properties"]["metadataOptions"]
    assert options["default"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
