"""``nodewright convert`` and simulate reading retired Karpenter versions (the seeds' manifests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.api.convert import convert_documents
from nodewright.api.convert.batch import format_seconds
from nodewright.commands import main
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment
from tests.conftest import Simulate

# Seed 000 (an AWS blog on pod affinity): the v1alpha5 Provisioner with an inline provider.
SEED_000_PROVISIONER = """
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  requirements:
    - key: "karpenter.sh/capacity-type"
      operator: In
      values: ["spot", "on-demand"]
  limits:
    resources:
      cpu: 1000
      memory: 1000Gi
  provider:
    subnetSelector:
      karpenter.sh/discovery: alpha
    securityGroupSelector:
      karpenter.sh/discovery: alpha
    tags:
      karpenter.sh/discovery: alpha
  ttlSecondsAfterEmpty: 30
"""

# Seed 002 (AKS node autoprovisioning): `kubectl get -oyaml` of a v1beta1 NodePool and the
# v1alpha2 AKSNodeClass, and the weighted pool applied later.
SEED_002_NODEPOOL = """
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  annotations:
    karpenter.sh/nodepool-hash: "12393960163388511505"
    kubernetes.io/description: General purpose NodePool for generic workloads
  creationTimestamp: "2024-01-18T10:28:20Z"
  generation: 1
  labels:
    app.kubernetes.io/managed-by: Helm
  name: default
  resourceVersion: "410732"
  uid: 6e9dcd87-dd1d-4167-aa5e-9171926d616c
spec:
  disruption:
    consolidationPolicy: WhenUnderutilized
    expireAfter: Never
  template:
    spec:
      nodeClassRef:
        name: default
      requirements:
      - key: kubernetes.io/arch
        operator: In
        values: [amd64]
      - key: karpenter.azure.com/sku-family
        operator: In
        values: [D]
---
apiVersion: karpenter.azure.com/v1alpha2
kind: AKSNodeClass
metadata:
  name: default
  resourceVersion: "1731"
spec:
  imageFamily: Ubuntu2204
  osDiskSizeGB: 128
---
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: my-node
spec:
  disruption:
    consolidationPolicy: WhenUnderutilized
    expireAfter: Never
  template:
    spec:
      nodeClassRef:
        name: default
      requirements:
      - key: karpenter.azure.com/sku-cpu
        operator: In
        values: ["8"]
  weight: 10
"""


def _convert(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    result = convert_documents(list(yaml.safe_load_all(text)))
    return result.documents, [str(w) for w in result.warnings]


def test_seed_000_provisioner_becomes_nodepool_and_ec2nodeclass() -> None:
    documents, warnings = _convert(SEED_000_PROVISIONER)
    assert documents == [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [
                            {
                                "key": "karpenter.sh/capacity-type",
                                "operator": "In",
                                "values": ["spot", "on-demand"],
                            }
                        ],
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "default",
                        },
                        "expireAfter": "Never",
                    }
                },
                "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
                "limits": {"cpu": 1000, "memory": "1000Gi"},
            },
        },
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "tags": {"karpenter.sh/discovery": "alpha"},
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "alpha"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "alpha"}}],
                "amiSelectorTerms": [{"alias": "al2@latest"}],
            },
        },
    ]
    # The instance profile came from the old controller's settings: the user must name it.
    assert warnings == [
        'Provisioner "default": spec.provider.instanceProfile: is missing (it came from the '
        "controller's settings); set spec.role or spec.instanceProfile on the EC2NodeClass"
    ]


def test_seed_002_v1beta1_nodepools_and_v1alpha2_aksnodeclass() -> None:
    documents, warnings = _convert(SEED_002_NODEPOOL)
    # Karpenter Azure's v1beta1 nodeClassRef names no kind: the only NodeClass here says it.
    assert warnings == [
        f'NodePool "{name}": spec.template.spec.nodeClassRef.kind: not set; AKSNodeClass '
        "(karpenter.azure.com) inferred from the only NodeClass kind in these manifests"
        for name in ("default", "my-node")
    ]
    default, node_class, weighted = documents
    assert default == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {
            "annotations": {
                "kubernetes.io/description": "General purpose NodePool for generic workloads"
            },
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "name": "default",
        },
        "spec": {
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
            },
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.azure.com",
                        "kind": "AKSNodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {
                            "key": "karpenter.azure.com/sku-family",
                            "operator": "In",
                            "values": ["D"],
                        },
                    ],
                    "expireAfter": "Never",
                }
            },
        },
    }
    assert node_class == {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "default"},
        "spec": {"imageFamily": "Ubuntu2204", "osDiskSizeGB": 128},
    }
    assert weighted["spec"]["weight"] == 10
    assert weighted["spec"]["template"]["spec"]["expireAfter"] == "Never"
    assert "expireAfter" not in weighted["spec"]["disruption"]


def test_awsnodetemplate_and_provisioner_fields_move_where_v1_keeps_them() -> None:
    documents, warnings = _convert(
        """
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: gpu}
spec:
  providerRef: {name: gpu-template}
  labels: {team: ml}
  annotations: {example.com/owner: ml}
  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
  startupTaints: [{key: example.com/init, effect: NoSchedule}]
  kubeletConfiguration: {maxPods: 110}
  consolidation: {enabled: true}
  ttlSecondsUntilExpired: 2592000
  weight: 50
  requirements:
    - {key: karpenter.sh/provisioner-name, operator: Exists}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: gpu-template}
spec:
  subnetSelector: {aws-ids: "subnet-1,subnet-2"}
  securityGroupSelector: {Name: my-sg}
  amiFamily: Bottlerocket
  instanceProfile: KarpenterNodeInstanceProfile
  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100Gi}}]
  launchTemplate: my-template
  context: my-context
"""
    )
    pool, node_class = documents
    assert pool["spec"] == {
        "template": {
            "metadata": {"labels": {"team": "ml"}, "annotations": {"example.com/owner": "ml"}},
            "spec": {
                "requirements": [{"key": "karpenter.sh/nodepool", "operator": "Exists"}],
                "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                "startupTaints": [{"key": "example.com/init", "effect": "NoSchedule"}],
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "gpu-template",
                },
                "expireAfter": "720h",
            },
        },
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"},
        "weight": 50,
    }
    assert node_class == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu-template"},
        "spec": {
            "instanceProfile": "KarpenterNodeInstanceProfile",
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}}],
            "subnetSelectorTerms": [{"id": "subnet-1"}, {"id": "subnet-2"}],
            "securityGroupSelectorTerms": [{"tags": {"Name": "my-sg"}}],
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "kubelet": {"maxPods": 110},
        },
    }
    assert any("spec.launchTemplate" in w for w in warnings)
    assert any('AWSNodeTemplate "gpu-template": spec.context' in w for w in warnings)
    assert any("karpenter.sh/provisioner-name" in w for w in warnings)


def test_v1beta1_nodeclaim_and_kubelet_warning() -> None:
    documents, warnings = _convert(
        """
apiVersion: karpenter.sh/v1beta1
kind: NodeClaim
metadata: {name: default-abcde}
spec:
  nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: default}
  kubelet: {maxPods: 20}
  requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
  resources: {requests: {cpu: "1"}}
"""
    )
    assert documents[0]["apiVersion"] == "karpenter.sh/v1"
    assert documents[0]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "default",
    }
    assert documents[0]["spec"]["resources"] == {"requests": {"cpu": "1"}}
    assert "kubelet" not in documents[0]["spec"]
    assert warnings == [
        'NodeClaim "default-abcde": spec.kubelet: moved to the NodeClass in v1 '
        "(EC2NodeClass/AKSNodeClass spec.kubelet); set it there"
    ]


def test_current_documents_pass_through_unchanged() -> None:
    documents = list(yaml.safe_load_all(KWOK_NODE_CLASS + deployment("web", 1)))
    documents = [d for d in documents if d]
    result = convert_documents(documents)
    assert result.converted == 0
    assert all(a is b for a, b in zip(result.documents, documents, strict=True))


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (30, "30s"), (300, "5m"), (5400, "1h30m"), (2592000, "720h")]
)
def test_durations(seconds: int, text: str) -> None:
    assert format_seconds(seconds) == text


def test_cli_prints_yaml_and_warns_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(SEED_000_PROVISIONER + "---\n" + deployment("web", 1))
    assert main(["convert", str(path)]) == 0
    out = capsys.readouterr()
    kinds = [(d["apiVersion"], d["kind"]) for d in yaml.safe_load_all(out.out) if d]
    assert kinds == [
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
        ("apps/v1", "Deployment"),
    ]
    assert f'warning: {path}:15: Provisioner "default": spec.provider.instanceProfile' in out.err


def test_cli_bad_yaml_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: [\n")
    assert main(["convert", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "bad.yaml" in err


def test_simulate_reads_a_v1beta1_nodepool(simulate: Simulate) -> None:
    old_pool = """
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: default}
spec:
  disruption: {consolidationPolicy: WhenUnderutilized, expireAfter: Never}
  template:
    spec:
      nodeClassRef: {apiVersion: karpenter.kwok.sh/v1alpha1, kind: KWOKNodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
"""
    result = simulate(old_pool + KWOK_NODE_CLASS + deployment("web", 3))
    assert result.exit_code == 0, result.stderr
    # converted with a word: one line naming the object, where it is, and what it became
    (notice,) = [line for line in result.stderr.splitlines() if "retired" in line]
    assert notice.startswith("warning: ")
    assert notice.endswith(
        'manifests.yaml:2: NodePool "default": karpenter.sh/v1beta1 is retired; read as '
        "karpenter.sh/v1 NodePool (nodewright convert writes it so)"
    )
    assert len(result.nodes()) >= 1
    assert not result.pending()
    assert {n["capacityType"] for n in result.nodes()} == {"on-demand"}


# --- refusing what cannot be converted faithfully (issue 18) ----------------------------------


def _run_convert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> tuple[int, list[dict[str, Any]], list[str], list[str]]:
    """``nodewright convert`` on one file: exit code, documents, error and warning lines
    (without the ``file:`` prefix, which every line must have)."""
    path = tmp_path / "old.yaml"
    path.write_text(text)
    code = main(["convert", str(path)])
    out = capsys.readouterr()
    lines = out.err.splitlines()
    assert all(line.split(": ", 1)[1].startswith(f"{path}") for line in lines), lines
    errors = [line.removeprefix(f"error: {path}:") for line in lines if line.startswith("error:")]
    warnings = [
        line.removeprefix(f"warning: {path}:") for line in lines if line.startswith("warning:")
    ]
    documents = [d for d in yaml.safe_load_all(out.out) if d]
    return code, documents, errors, warnings


V1BETA1_POOL = """
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: default
spec:
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 30s
  template:
    spec:
      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: default}
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: [spot]
"""


def test_convert_output_is_checked_and_a_valid_v1beta1_pool_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, documents, errors, warnings = _run_convert(tmp_path, capsys, V1BETA1_POOL)
    assert (code, errors, warnings) == (0, [], [])
    assert documents[0]["spec"]["template"]["spec"]["expireAfter"] == "720h"


def test_a_mis_indented_metadata_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = V1BETA1_POOL.replace("metadata:\n  name: default", "metadata:\nname: default")
    code, documents, errors, _ = _run_convert(tmp_path, capsys, text)
    assert code == 2
    assert documents == []
    assert errors == [
        "5: NodePool: name: unknown field 'name' at the top level; indent it under metadata",
        "4: NodePool: metadata: must be a mapping with a name, got None",
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: default}\n"
            "spec:\n  providerRef: {name: ''}\n",
            '5: Provisioner "default": spec.providerRef.name: must name an AWSNodeTemplate, '
            "got ''",
        ),
        (
            "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata:\n"
            "name: default\nspec: {subnetSelector: {a: b}, securityGroupSelector: {a: b}}\n",
            "3: AWSNodeTemplate: metadata: must be a mapping with a name, got None",
        ),
    ],
    ids=["provisioner-ref", "template-name"],
)
def test_an_ec2nodeclass_without_a_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, error: str
) -> None:
    code, documents, errors, _ = _run_convert(tmp_path, capsys, text)
    assert code == 2
    assert documents == []
    assert error in errors


def test_a_requirement_key_with_a_leading_space_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = V1BETA1_POOL.replace("- key: karpenter.sh", '- key: " karpenter.sh')
    text = text.replace("capacity-type\n", 'capacity-type"\n')
    code, _, errors, _ = _run_convert(tmp_path, capsys, text)
    assert code == 2
    assert errors == [
        '14: NodePool "default": spec.template.spec.requirements[0].key: prefix must consist '
        "of lower case letters, digits, '-' and '.', and start and end with a letter or digit, "
        "got ' karpenter.sh'"
    ]


def test_a_typo_in_a_v1beta1_field_is_refused_not_passed_beside_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = V1BETA1_POOL.replace(
        "consolidateAfter: 30s", "consolidateAfter: 30s\n    expireAftr: 24h"
    )
    code, documents, errors, _ = _run_convert(tmp_path, capsys, text)
    assert code == 2
    assert documents == []
    assert errors == [
        "10: NodePool \"default\": spec.disruption.expireAftr: unknown field 'expireAftr' in "
        "this version; did you mean 'expireAfter'?"
    ]


def test_a_nodeclassref_without_a_provider_hint_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = V1BETA1_POOL.replace(
        "{apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: default}",
        "{name: default}",
    )
    code, documents, errors, _ = _run_convert(tmp_path, capsys, text)
    assert code == 2
    assert documents == []
    assert errors == [
        '12: NodePool "default": spec.template.spec.nodeClassRef: does not say which NodeClass '
        "it names (no apiVersion and kind) and nothing in these manifests tells; add apiVersion "
        "and kind (e.g. karpenter.k8s.aws/v1beta1 EC2NodeClass), or convert it together with "
        "its NodeClass"
    ]


def test_a_nodeclassref_kind_inferred_from_requirements_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = V1BETA1_POOL.replace(
        "{apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: default}",
        "{name: default}",
    ).replace("karpenter.sh/capacity-type", "karpenter.k8s.aws/instance-family")
    code, documents, errors, warnings = _run_convert(tmp_path, capsys, text)
    assert (code, errors) == (0, [])
    assert documents[0]["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == "EC2NodeClass"
    assert warnings == [
        '12: NodePool "default": spec.template.spec.nodeClassRef.kind: not set; EC2NodeClass '
        "(karpenter.k8s.aws) inferred from the karpenter.k8s.aws labels in the requirements"
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: hello\nspec: {}\n",
            "3: NodePool: metadata: must be a mapping with a name, got 'hello'",
        ),
        (
            "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: a}\nspec: hello\n",
            "4: NodePool \"a\": spec: must be a mapping, got 'hello'",
        ),
        (
            "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: a}\n"
            "spec: {ttlSecondsAfterEmpty: soon, providerRef: {name: t}}\n",
            '4: Provisioner "a": spec.ttlSecondsAfterEmpty: must be a whole number of seconds, '
            "got 'soon'",
        ),
        (
            "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: a}\n"
            "spec: {providerRef: {name: t}, ttlSecondsAfterEmty: 30}\n",
            "4: Provisioner \"a\": spec.ttlSecondsAfterEmty: unknown field 'ttlSecondsAfterEmty' "
            "in this version; did you mean 'ttlSecondsAfterEmpty'?",
        ),
    ],
    ids=["metadata-string", "spec-string", "ttl-not-a-number", "provisioner-typo"],
)
def test_old_objects_of_the_wrong_shape_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, error: str
) -> None:
    code, documents, errors, _ = _run_convert(tmp_path, capsys, text)
    assert (code, documents, errors) == (2, [], [error])


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("kind: NodePool\nspec: " + "[" * 1000, "2:106: refused: nested more than 100 levels deep"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n"
                for p, n in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "6:8: refused: aliases expand to more than 100000 values in one document",
        ),
    ],
    ids=["nested", "alias-bomb"],
)
def test_convert_refuses_nesting_and_alias_bombs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, error: str
) -> None:
    code, documents, errors, _ = _run_convert(tmp_path, capsys, text)
    assert (code, documents, errors) == (2, [], [error])


def test_convert_passes_kinds_it_does_not_read_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n"
    code, documents, errors, warnings = _run_convert(tmp_path, capsys, service)
    assert (code, errors, warnings) == (0, [], [])
    assert documents == [yaml.safe_load(service)]
