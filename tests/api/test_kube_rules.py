"""What a real API server refuses, refused at load time with file, line, object and field:
the schema of the built-in kinds (unknown fields, types, quantities anywhere) and the object
rules (names, labels, selectors, resources)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from nodewright.api.fielderror import FieldError
from nodewright.api.karpenter import NodePool
from nodewright.api.kubeschema import kubernetes_version
from nodewright.api.manifests.errors import ManifestError, ManifestErrors
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_manifests, load_text
from nodewright.api.meta import KubeObject
from nodewright.api.validation import validate_node_pool

ROOT = Path(__file__).resolve().parents[2]


def problems(text: str) -> list[str]:
    """Each problem as ``line: field: message`` (the file is ``m.yaml``)."""
    with pytest.raises((ManifestError, ManifestErrors)) as raised:
        load_text(text, "m.yaml", KindRegistry())
    found = raised.value
    assert isinstance(found, (ManifestError, ManifestErrors))
    errors = found.errors if isinstance(found, ManifestErrors) else [found]
    return [f"{e.source.removeprefix('m.yaml:')}: {e.field}: {e.message}" for e in errors]


def pod(metadata: str = "{name: web}", spec: str = "{containers: [{name: app}]}") -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {metadata}\nspec: {spec}\n"


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          resources:
            requests: {cpu: "1", memory: 1Gi}
"""


def test_the_schema_table_matches_the_kubernetes_schema() -> None:
    spec = importlib.util.spec_from_file_location(
        "generate_kube_schema", ROOT / "scripts" / "generate_kube_schema.py"
    )
    assert spec is not None
    assert spec.loader is not None
    generator: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    table = generator.build_table(generator.schema_definitions(), generator.KINDS)
    committed = json.loads((ROOT / "core/nodewright/api/kubeschema.json").read_text())
    assert committed == table, "run: uv run --frozen python scripts/generate_kube_schema.py"
    assert kubernetes_version() == generator.KUBERNETES_VERSION


def test_a_valid_pod_and_deployment_load() -> None:
    objects = load_text(pod() + "---\n" + DEPLOYMENT, "m.yaml", KindRegistry())
    assert [o.kind for o in objects] == ["Pod", "Deployment"]


def test_unknown_top_level_field_in_a_pod() -> None:
    assert problems(pod() + "spce: {}\n") == ["5: spce: unknown field 'spce'; did you mean 'spec'?"]


def test_unknown_field_deep_in_a_pod_template() -> None:
    text = DEPLOYMENT.replace("requests:", "request:")
    assert problems(text) == [
        "13: spec.template.spec.containers[0].resources.request: "
        "unknown field 'request'; did you mean 'requests'?"
    ]


def test_a_mis_indented_name_gets_a_hint() -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata:\nname: web\nspec: {containers: [{name: a}]}\n"
    assert problems(text) == [
        "4: name: unknown field 'name' at the top level; indent it under metadata",
        "3: metadata.name: required field is missing (or set generateName)",
    ]


def test_cpu_lots_in_a_deployment_template_is_refused_at_load_time() -> None:
    text = DEPLOYMENT.replace('cpu: "1"', "cpu: lots")
    assert problems(text) == [
        "13: spec.template.spec.containers[0].resources.requests[cpu]: "
        "must be a quantity such as '500m', '2' or '4Gi', got 'lots'"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (pod("{}"), ["3: metadata.name: required field is missing (or set generateName)"]),
        (
            DEPLOYMENT.replace("metadata: {name: web}", "metadata: {namespace: default}"),
            ["3: metadata.name: required field is missing (or set generateName)"],
        ),
    ],
    ids=["pod", "deployment"],
)
def test_an_object_without_a_name(text: str, expected: list[str]) -> None:
    assert problems(text) == expected


def test_generate_name_is_enough() -> None:
    (loaded,) = load_text(pod("{generateName: web-}"), "m.yaml", KindRegistry())
    assert loaded.metadata.generate_name == "web-"


def test_a_pod_named_upper_case() -> None:
    assert problems(pod("{name: UPPER_case!}")) == [
        "3: metadata.name: must consist of lower case letters, digits, '-' and '.', and start "
        "and end with a letter or digit, got 'UPPER_case!'"
    ]


def test_a_nul_byte_in_a_label_key() -> None:
    (problem,) = problems(pod('{name: web, labels: {"te\\0am": a}}'))
    assert problem.startswith("3: metadata.labels[te\x00am]: key name part must consist of")
    assert problem.endswith("got 'te\\x00am'")


def test_label_names_and_values_over_63_characters() -> None:
    long = "a" * 64
    assert problems(pod(f"{{name: web, labels: {{{long}: x, team: {long}}}}}")) == [
        f"3: metadata.labels[{long}]: key name part must be at most 63 characters, got 64 in "
        "'aaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaa' (64 characters)",
        "3: metadata.labels[team]: value must be at most 63 characters, got 64 in "
        "'aaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaa' (64 characters)",
    ]


def test_kind_and_api_version_must_be_strings() -> None:
    assert problems("apiVersion: v1\nkind: {a: 1}\nmetadata: {name: x}\n") == [
        "2: kind: must be a string, got {'a': 1}"
    ]
    assert problems("apiVersion: [v1]\nkind: Pod\nmetadata: {name: x}\n") == [
        "1: apiVersion: must be a string, got ['v1']"
    ]


@pytest.mark.parametrize("field", ["metadata", "spec"])
def test_metadata_or_spec_that_is_not_a_mapping(field: str) -> None:
    text = pod().replace(f"{field}: {{", f"{field}: hello\nx{field}: {{")
    assert f"{3 if field == 'metadata' else 4}: {field}: must be a mapping, got 'hello'" in (
        problems(text)
    )
    pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec: [1]\n"
    assert problems(pool) == ["4: spec: must be a mapping, got [1]"]


def test_wrong_types_follow_the_schema() -> None:
    text = DEPLOYMENT.replace("replicas: 3", 'replicas: "3"').replace(
        "labels: {app: web}}", "labels: {app: 1.0}}"
    )
    assert problems(text) == [
        "5: spec.replicas: must be an integer, got '3'",
        "8: spec.template.metadata.labels[app]: must be a string, got 1.0",
    ]


def test_a_request_above_its_limit_and_a_negative_request() -> None:
    text = DEPLOYMENT.replace(
        'requests: {cpu: "1", memory: 1Gi}',
        'requests: {cpu: "2", memory: -1Gi}\n            limits: {cpu: "1"}',
    )
    assert problems(text) == [
        "13: spec.template.spec.containers[0].resources.requests[memory]: Invalid value: "
        '"-1Gi": must be greater than or equal to 0',
        "13: spec.template.spec.containers[0].resources.requests: Invalid value: "
        '"2": must be less than or equal to cpu limit of 1',
    ]


def test_selectors_tolerations_and_spread_follow_the_api_rules() -> None:
    spec = """
      containers: [{name: app}]
      nodeSelector: {"bad key": x}
      tolerations: [{key: a, operator: Equals, effect: NoSchedule}]
      topologySpreadConstraints:
        - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: Never}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: zone, operator: in, values: [a]}]
"""
    text = DEPLOYMENT.split("    spec:\n", maxsplit=1)[0] + "    spec:" + spec
    found = problems(text)
    assert [p.split(": ")[1] for p in found] == [
        "spec.template.spec.nodeSelector[bad key]",
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].operator",
        "spec.template.spec.tolerations[0].operator",
        "spec.template.spec.topologySpreadConstraints[0].maxSkew",
        "spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable",
    ]


def test_a_selector_that_does_not_match_the_template() -> None:
    text = DEPLOYMENT.replace(
        "selector: {matchLabels: {app: web}}", "selector: {matchLabels: {app: api}}"
    )
    assert problems(text) == [
        "8: spec.template.metadata.labels: selector does not match template labels: the pods "
        "would lack {'app': 'api'}"
    ]


def test_a_huge_quantity_exponent_is_an_error_not_a_hang() -> None:
    text = DEPLOYMENT.replace('cpu: "1"', 'cpu: "1e999999999"')
    (problem,) = problems(text)
    assert "must be a quantity" in problem


def test_null_fields_read_as_absent() -> None:
    (loaded,) = load_text(
        pod("{name: web, labels: null}", "{containers: [{name: app}], nodeSelector: null}"),
        "m.yaml",
        KindRegistry(),
    )
    assert loaded.metadata.labels == {}


def test_semantic_node_pool_errors_carry_file_and_line(tmp_path: Path) -> None:
    file = tmp_path / "pool.yaml"
    file.write_text(
        """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: Inn, values: [spot]}
      expireAfter: 30d
  limits: {cpu: lots}
"""
    )

    def rules(obj: KubeObject) -> list[FieldError]:
        return validate_node_pool(obj) if isinstance(obj, NodePool) else []

    result = load_manifests([file], KindRegistry(), rules=rules)
    assert [str(e) for e in result.errors] == [
        f'{file}:9: NodePool "default": spec.template.spec.requirements[0].operator: must be '
        "one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte, got 'Inn'",
        f'{file}:10: NodePool "default": spec.template.spec.expireAfter: must be a duration '
        "in hours, minutes and seconds (e.g. 720h, 1h30m) or Never, got '30d'",
        f"{file}:11: NodePool \"default\": spec.limits[cpu]: 'lots' is not a quantity "
        "(expected a number with an optional suffix such as '500m', '2', '4Gi' or '1e3')",
    ]


def test_error_lines_stay_short_for_huge_values() -> None:
    huge = "x" * 200_000
    found = problems(pod(f"{{name: {huge}, labels: {{{huge}: {huge}}}}}"))
    assert found
    assert all(len(p) < 600 for p in found), [len(p) for p in found]
