"""The CRDs: valid apiextensions v1 objects with structural schemas, and the manifests users
write (the examples, the seeds after ``nodewright convert``) validate against them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from nodewright.api.convert import convert_documents
from nodewright.commands import main
from nodewright.commands.crds import all_crds, dump, run_crds
from nodewright.commands.host import load_host
from nodewright.plugin import NodeClassKind, ProviderInfo, hookimpl
from nodewright.plugin.host import PluginHost
from nodewright.testing import FakeNodeClass, FakeProvider
from nodewright.testing.catalog import GROUP
from tests.convert.test_convert import SEED_000_PROVISIONER, SEED_002_NODEPOOL

ROOT = Path(__file__).resolve().parents[2]
K8S_VERSION = "1.30.0"


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[str, Any]]:
    return {
        crd["spec"]["names"]["kind"]: dict(crd)
        for crd in all_crds(load_host())  # the workspace installs the KWOK provider
    }


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


def test_core_and_provider_crds_are_there(crds: dict[str, dict[str, Any]]) -> None:
    assert {"NodePool", "NodeClaim", "KWOKNodeClass"} <= set(crds)
    assert crds["KWOKNodeClass"]["metadata"]["name"] == "kwoknodeclasses.karpenter.kwok.sh"


def test_every_crd_is_a_valid_apiextensions_v1_object(crds: dict[str, dict[str, Any]]) -> None:
    for crd in crds.values():
        # Raises ValidationError on any field that does not fit the Kubernetes schema.
        kubernetes_validate.validate(crd, K8S_VERSION, strict=True)


def test_a_broken_crd_is_rejected(crds: dict[str, dict[str, Any]]) -> None:
    broken = yaml.safe_load(dump(crds["NodePool"]))
    broken["spec"]["scope"] = 7
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_schemas_are_structural(crds: dict[str, dict[str, Any]]) -> None:
    """Every node has a type (or is int-or-string); properties and additionalProperties
    never meet; metadata is only ``type: object`` (apiextensions' structural rules)."""
    for kind, crd in crds.items():
        for path, node in _nodes(_schema(crd)):
            where = f"{kind}{path}"
            assert "type" in node or node.get("x-kubernetes-int-or-string"), where
            assert not ("properties" in node and "additionalProperties" in node), where
            for rule in node.get("x-kubernetes-validations", []):
                assert rule["rule"], where
                assert rule["message"], where
        assert _schema(crd)["properties"]["metadata"] == {"type": "object"}


def test_printer_columns_match_karpenter(crds: dict[str, dict[str, Any]]) -> None:
    def columns(kind: str, wide: bool) -> list[str]:
        return [
            c["name"]
            for c in crds[kind]["spec"]["versions"][0]["additionalPrinterColumns"]
            if bool(c.get("priority")) == wide
        ]

    assert columns("NodePool", wide=False) == ["NodeClass", "Nodes", "Ready", "Age"]
    assert columns("NodePool", wide=True) == ["Weight", "CPU", "Memory"]
    assert columns("NodeClaim", wide=False) == ["Type", "Capacity", "Zone", "Node", "Ready", "Age"]
    assert columns("NodeClaim", wide=True) == ["ImageID", "ID", "NodePool", "NodeClass", "Drifted"]
    subresources = crds["NodePool"]["spec"]["versions"][0]["subresources"]
    assert subresources["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.nodes",
    }
    # SIG Autoscaling's CapacityBuffer is in its own category, as upstream defines it.
    assert all(
        "karpenter" in c["spec"]["names"]["categories"]
        for kind, c in crds.items()
        if kind != "CapacityBuffer"
    )
    assert crds["CapacityBuffer"]["spec"]["names"]["categories"] == ["autoscaling"]


def _validate(crds: dict[str, dict[str, Any]], document: Mapping[str, Any]) -> None:
    jsonschema.Draft7Validator(_schema(crds[document["kind"]])).validate(document)


def test_seed_manifests_after_convert_validate(crds: dict[str, dict[str, Any]]) -> None:
    documents = convert_documents(
        list(yaml.safe_load_all(SEED_000_PROVISIONER + "---\n" + SEED_002_NODEPOOL))
    ).documents
    pools = [d for d in documents if d["kind"] == "NodePool"]
    assert len(pools) == 3
    for pool in pools:
        _validate(crds, pool)


def test_example_manifests_validate(crds: dict[str, dict[str, Any]]) -> None:
    checked = 0
    for path in sorted((ROOT / "examples").rglob("*.yaml")):
        # As nodewright loads them: older API versions (seed manifests) converted first.
        loaded = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        for document in convert_documents(loaded).documents:
            if document.get("kind") in crds:
                _validate(crds, document)
                checked += 1
    assert checked >= 2


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda p: p["spec"].update(weight=500), "weight"),
        (lambda p: p["spec"]["disruption"].update(consolidationPolicy="WhenUnderutilized"), "enum"),
        (lambda p: p["spec"]["template"]["spec"]["nodeClassRef"].pop("kind"), "kind"),
        (lambda p: p["spec"]["template"]["spec"].update(expireAfter="30d"), "expireAfter"),
    ],
)
def test_the_schema_rejects_what_karpenter_rejects(
    crds: dict[str, dict[str, Any]], change: Any, field: str
) -> None:
    pool = convert_documents(list(yaml.safe_load_all(SEED_000_PROVISIONER))).documents[0]
    _validate(crds, pool)
    change(pool)
    with pytest.raises(jsonschema.ValidationError):
        _validate(crds, pool)


def test_cli_prints_every_crd(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    names = [d["metadata"]["name"] for d in printed]
    # Core CRDs first, then those of the installed providers (the workspace installs them all).
    assert names[:2] == ["nodepools.karpenter.sh", "nodeclaims.karpenter.sh"]
    assert "kwoknodeclasses.karpenter.kwok.sh" in names[2:]


def test_the_chart_ships_the_generated_crds(crds: dict[str, dict[str, Any]]) -> None:
    shipped = ROOT / "charts" / "nodewright" / "crds"
    for crd in crds.values():
        file = shipped / f"{crd['metadata']['name']}.yaml"
        assert file.read_text() == dump(crd), (
            f"{file} is stale; run: nodewright crds --output-dir charts/nodewright/crds"
        )


def _host(provider: FakeProvider) -> PluginHost:
    host = PluginHost.load(entry_points=False, plugins={"fake": provider})
    assert host.errors == []
    return host


def test_a_node_class_without_a_crd_builder_gets_one_from_its_model() -> None:
    # FakeProvider declares FakeNodeClass with no `crd=`: it must not vanish from the CRDs.
    host = _host(FakeProvider())
    generated = {crd["metadata"]["name"]: crd for crd in all_crds(host)}
    crd = generated["fakenodeclasses.testing.nodewright.dev"]
    kubernetes_validate.validate(dict(crd), K8S_VERSION, strict=True)
    assert crd["spec"]["names"]["kind"] == "FakeNodeClass"
    assert "spec" in _schema(crd)["properties"]


def test_a_crd_builder_that_raises_is_one_error_naming_the_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class BrokenCrd(FakeProvider):
        @hookimpl
        def nodewright_provider_info(self) -> ProviderInfo:
            def crd() -> dict[str, Any]:
                raise KeyError("spec")

            kind = NodeClassKind(GROUP, FakeNodeClass.KIND, FakeNodeClass, crd=crd)
            return replace(super().nodewright_provider_info(), node_classes=(kind,))

    assert run_crds(_host(BrokenCrd())) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "error: the CRD of FakeNodeClass (testing.nodewright.dev) cannot be built: "
        "KeyError: 'spec'\n"
    )
