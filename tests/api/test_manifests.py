"""Loading manifests: kinds, versions, line numbers, field paths, directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest

from nodewright.api.apps import Deployment
from nodewright.api.core import Pod
from nodewright.api.karpenter import NodeClass, NodePool
from nodewright.api.manifests.documents import parse_documents
from nodewright.api.manifests.errors import ManifestError, ManifestErrors
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_paths, load_text, parse_object
from nodewright.api.validation import validate_node_pool

NODE_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.kwok.sh
        kind: KWOKNodeClass
        name: default
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot"]
"""


class FakeNodeClass(NodeClass):
    API_VERSION: ClassVar[str] = "karpenter.example.com/v1"
    KIND: ClassVar[str] = "FakeNodeClass"


def errors_of(raised: pytest.ExceptionInfo[ManifestError | ManifestErrors]) -> list[ManifestError]:
    return raised.value.errors


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- registry -------------------------------------------------------------------------------


def test_registry_serves_the_core_kinds() -> None:
    registry = KindRegistry()
    assert registry.lookup("karpenter.sh/v1", "NodePool") is NodePool
    assert registry.lookup("apps/v1", "Deployment") is Deployment
    assert registry.lookup("v1", "Pod") is Pod
    assert {kind for _, kind in registry.kinds()} == {
        "Namespace", "Pod", "Node", "PersistentVolumeClaim", "PersistentVolume", "Deployment",
        "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "PodDisruptionBudget", "StorageClass",
        "CSINode", "NodePool", "NodeClaim", "NodeOverlay", "Service", "DeviceClass",
        "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice",
        "PodTemplate", "CapacityBuffer",
    }  # fmt: skip
    assert registry.lookup("karpenter.sh/v1beta1", "NodePool") is None


def test_registry_takes_provider_kinds_and_extra_versions() -> None:
    registry = KindRegistry()
    registry.register(FakeNodeClass, extra_versions=["v1beta1", "legacy.example.com/v1"])
    assert registry.lookup("karpenter.example.com/v1", "FakeNodeClass") is FakeNodeClass
    assert registry.lookup("karpenter.example.com/v1beta1", "FakeNodeClass") is FakeNodeClass
    assert registry.lookup("legacy.example.com/v1", "FakeNodeClass") is FakeNodeClass
    obj = parse_object(
        {"apiVersion": "karpenter.example.com/v1beta1", "kind": "FakeNodeClass",
         "metadata": {"name": "n"}},
        registry,
        "inline",
    )  # fmt: skip
    assert isinstance(obj, FakeNodeClass)
    assert obj.api_version == "karpenter.example.com/v1beta1"


def test_registry_refuses_two_models_for_one_kind() -> None:
    class OtherNodePool(NodeClass):
        API_VERSION: ClassVar[str] = "karpenter.sh/v1"
        KIND: ClassVar[str] = "NodePool"

    with pytest.raises(ValueError, match="already served by NodePool"):
        KindRegistry().register(OtherNodePool)


# --- documents --------------------------------------------------------------------------------


def test_parse_documents_skips_empty_documents() -> None:
    text = "---\n" + NODE_POOL + "---\n---\n# only a comment\n---\n" + NODE_POOL
    documents = parse_documents(text, "pools.yaml")
    assert [d["kind"] for d in documents] == ["NodePool", "NodePool"]


def test_malformed_yaml_names_file_line_and_column() -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n   labels: {}\n"
    with pytest.raises(ManifestError) as raised:
        parse_documents(text, "pods.yaml")
    assert raised.value.source == "pods.yaml:5:10"
    assert str(raised.value).startswith("pods.yaml:5:10: malformed YAML: ")


def test_duplicate_keys_are_an_error() -> None:
    with pytest.raises(ManifestError, match="duplicate key 'name'") as raised:
        parse_documents("metadata:\n  name: a\n  name: b\n", "dup.yaml")
    assert raised.value.source == "dup.yaml:3:3"


def test_merge_keys_may_be_overridden() -> None:
    text = "base: &base {a: 1, b: 2}\nmerged:\n  <<: *base\n  b: 3\n"
    assert parse_documents(text, "m.yaml")[0]["merged"] == {"a": 1, "b": 3}


def test_a_document_that_is_not_a_mapping_is_an_error() -> None:
    with pytest.raises(ManifestError, match="document is a list") as raised:
        parse_documents("apiVersion: v1\n---\n- a\n- b\n", "x.yaml")
    assert raised.value.source == "x.yaml:3"


# --- objects ----------------------------------------------------------------------------------


def test_a_node_pool_manifest_becomes_a_model_with_karpenter_defaults() -> None:
    (pool,) = load_text(NODE_POOL, "pool.yaml", KindRegistry())
    assert isinstance(pool, NodePool)
    assert pool.name == "default"
    assert pool.spec.template.spec.requirements[0].values == ["spot"]
    assert pool.spec.disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert validate_node_pool(pool) == []


def test_typo_in_a_node_pool_spec_names_the_field_and_suggests_the_fix() -> None:
    text = (
        NODE_POOL + "  disruption:\n    consolidationPolicy: WhenEmpty\n    consolidateAftr: 5m\n"
    )
    with pytest.raises(ManifestErrors) as raised:
        load_text(text, "pool.yaml", KindRegistry())
    (error,) = errors_of(raised)
    assert error.kind == "NodePool"
    assert error.name == "default"
    assert error.field == "spec.disruption.consolidateAftr"
    assert error.source == "pool.yaml:18"
    assert "unknown field 'consolidateAftr'" in error.message
    assert "did you mean 'consolidateAfter'" in error.message


def test_every_field_problem_in_an_object_is_reported_with_its_path_and_line() -> None:
    text = NODE_POOL.replace("operator: In", "operatr: In") + "  weight: heavy\n"
    with pytest.raises(ManifestErrors) as raised:
        load_text(text, "pool.yaml", KindRegistry())
    found = {(e.field, e.source) for e in errors_of(raised)}
    assert found == {
        ("spec.template.spec.requirements[0].operator", "pool.yaml:13"),
        ("spec.template.spec.requirements[0].operatr", "pool.yaml:14"),
        ("spec.weight", "pool.yaml:16"),
    }
    weight = next(e for e in errors_of(raised) if e.field == "spec.weight")
    assert str(weight) == (
        'pool.yaml:16: NodePool "default": spec.weight: must be a valid integer, '
        "unable to parse string as an integer, got 'heavy'"
    )


def test_map_keys_render_in_brackets() -> None:
    document = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {"template": {"metadata": {"labels": {"example.com/team": ["a"]}}}},
    }
    with pytest.raises(ManifestError) as raised:
        parse_object(document, KindRegistry(), "inline")
    assert raised.value.field == "spec.template.metadata.labels[example.com/team]"
    assert raised.value.source == "inline"


def test_union_fields_get_one_error() -> None:
    document = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": [1]},
    }
    with pytest.raises(ManifestError) as raised:
        parse_object(document, KindRegistry(), "pdb.yaml")
    assert raised.value.field == "spec.minAvailable"
    assert raised.value.message == "must be an integer or a string, got [1]"


def test_retired_api_version_says_what_to_use() -> None:
    # v1beta1 and v1alpha5 are converted (nodewright.api.convert); older ones are refused.
    text = NODE_POOL.replace("karpenter.sh/v1", "karpenter.sh/v1alpha4")
    with pytest.raises(ManifestErrors) as raised:
        load_text(text, "pool.yaml", KindRegistry())
    (error,) = errors_of(raised)
    assert "apiVersion karpenter.sh/v1alpha4 is not served" in error.message
    assert "use karpenter.sh/v1" in error.message
    assert error.source == "pool.yaml:2"


def test_retired_kind_says_what_replaced_it() -> None:
    document = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner",
                "metadata": {"name": "default"}}  # fmt: skip
    with pytest.raises(ManifestError, match=r"use NodePool \(karpenter.sh/v1\)"):
        parse_object(document, KindRegistry(), "old.yaml")


def test_unknown_kind_lists_what_is_supported() -> None:
    document = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    with pytest.raises(ManifestError) as raised:
        parse_object(document, KindRegistry(), "w.yaml")
    assert raised.value.kind == "Widget"
    assert "unknown kind Widget (apiVersion example.com/v1)" in raised.value.message
    assert "NodePool" in raised.value.message


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"kind": "Pod", "metadata": {"name": "p"}}, "apiVersion"),
        ({"apiVersion": "v1", "metadata": {"name": "p"}}, "kind"),
    ],
)
def test_missing_api_version_or_kind(document: dict[str, object], field: str) -> None:
    with pytest.raises(ManifestError, match=f"{field} is missing") as raised:
        parse_object(document, KindRegistry(), "x.yaml")
    assert raised.value.field == field


def test_list_kind_is_flattened() -> None:
    text = """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Namespace
    metadata: {name: team-a}
  - apiVersion: v1
    kind: List
    items:
      - apiVersion: v1
        kind: Pod
        metadata: {name: web, namespace: team-a}
        spec: {containers: [{name: web}]}
"""
    objects = load_text(text, "list.yaml", KindRegistry())
    assert [(o.kind, o.name) for o in objects] == [("Namespace", "team-a"), ("Pod", "web")]


def test_typed_lists_are_flattened() -> None:
    item = "\n".join(f"    {line}" for line in NODE_POOL.splitlines())
    text = "apiVersion: karpenter.sh/v1\nkind: NodePoolList\nitems:\n  -\n" + item + "\n"
    (pool,) = load_text(text, "pools.yaml", KindRegistry())
    assert isinstance(pool, NodePool)
    assert pool.name == "default"


def test_list_item_errors_carry_their_own_line() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Gadget\n"
    with pytest.raises(ManifestErrors) as raised:
        load_text(text, "list.yaml", KindRegistry())
    assert [e.source for e in errors_of(raised)] == ["list.yaml:5"]


def test_round_trip_keeps_camel_case() -> None:
    (pool,) = load_text(NODE_POOL, "pool.yaml", KindRegistry())
    again = NodePool.model_validate(pool.to_dict())
    assert again == pool
    spec = pool.to_dict()["spec"]
    assert spec["template"]["spec"]["nodeClassRef"]["kind"] == "KWOKNodeClass"
    assert "node_class_ref" not in json.dumps(spec)


# --- files and directories --------------------------------------------------------------------


def test_load_paths_reads_directories_recursively_in_name_order(tmp_path: Path) -> None:
    write(tmp_path, "b/pool.yaml", NODE_POOL.replace("name: default", "name: second"))
    write(tmp_path, "a.yml", NODE_POOL.replace("name: default", "name: first"))
    write(tmp_path, "c.json", json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "third"}}, indent="\t"))  # fmt: skip
    write(tmp_path, "notes.txt", "not a manifest")
    objects = load_paths([tmp_path], KindRegistry())
    assert [o.name for o in objects] == ["first", "second", "third"]


def test_load_paths_collects_problems_from_every_file(tmp_path: Path) -> None:
    good = write(tmp_path, "good.yaml", NODE_POOL)
    broken = write(tmp_path, "broken.yaml", "kind: [\n")
    typo = write(tmp_path, "typo.yaml", NODE_POOL + "  wieght: 10\n")
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ManifestErrors) as raised:
        load_paths([good, broken, typo, missing], KindRegistry())
    errors = errors_of(raised)
    assert [e.source.split(":")[0] for e in errors] == [str(broken), str(typo), str(missing)]
    assert "malformed YAML" in errors[0].message
    assert errors[1].field == "spec.wieght"
    assert "did you mean 'weight'" in errors[1].message
    assert errors[2].message == "no such file or directory"
    report = str(raised.value)
    assert report.splitlines()[0] == "3 problems in manifests:"
    assert str(missing) in report


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '{\n\t"kind": "Pod",\n\t"apiVersion" "v1"\n}\n')
    with pytest.raises(ManifestErrors) as raised:
        load_paths([path], KindRegistry())
    (error,) = errors_of(raised)
    assert error.source == f"{path}:3:15"
    assert "malformed JSON" in error.message
