"""The Helm chart, rendered (no helm binary is available from the package registries) with
the Go-template subset in :mod:`tests.charts.gotemplate`, and every object validated against
the Kubernetes JSON schemas (kubernetes-validate, offline)."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from nodewright.api.apps import (
    CSINode,
    DaemonSet,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
    StorageClass,
)
from nodewright.api.core import (
    Event,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
)
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.cli import load_host
from nodewright.crds_cli import all_crds
from tests.charts.gotemplate import TemplateError, render_chart

CHART = Path(__file__).resolve().parents[2] / "charts" / "nodewright"
K8S_VERSION = "1.30.0"
REQUIRED = {"settings": {"clusterName": "test-cluster"}}


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def render(overrides: Mapping[str, Any] = REQUIRED, chart: Path = CHART) -> list[dict[str, Any]]:
    """``helm template nodewright CHART -n kube-system --set ...`` as parsed objects."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    values = _merge(yaml.safe_load((chart / "values.yaml").read_text()), overrides)
    context = {
        "Values": values,
        "Release": {"Name": "nodewright", "Namespace": "kube-system", "Service": "Helm"},
        "Chart": {
            "Name": meta["name"],
            "Version": meta["version"],
            "AppVersion": meta["appVersion"],
        },
    }
    templates = {path.name: path.read_text() for path in sorted((chart / "templates").iterdir())}
    objects: list[dict[str, Any]] = []
    for name, text in render_chart(templates, context).items():
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError as error:
            raise AssertionError(f"{name} renders invalid YAML: {error}\n{text}") from error
        objects.extend(d for d in documents if d)
    return objects


def _validate(objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        if obj["apiVersion"] == "monitoring.coreos.com/v1":
            continue  # not a Kubernetes kind; checked by its own test
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def _one(objects: list[dict[str, Any]], kind: str, namespace: str | None = None) -> dict[str, Any]:
    (found,) = [
        o
        for o in objects
        if o["kind"] == kind and (namespace is None or o["metadata"].get("namespace") == namespace)
    ]
    return found


def _env(deployment: dict[str, Any]) -> dict[str, Any]:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_default_render_is_valid_and_highly_available() -> None:
    objects = render()
    _validate(objects)
    assert sorted(o["kind"] for o in objects) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "PodDisruptionBudget",
        "Role",
        "Role",
        "RoleBinding",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    deployment = _one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    env = _env(deployment)
    assert env["DISABLE_LEADER_ELECTION"] == "false"
    assert env["CLUSTER_NAME"] == "test-cluster"
    assert env["NODEWRIGHT_PLUGINS"] == "kwok"
    assert env["SYSTEM_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    # each replica names itself as the reportingInstance of its Events
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/nodewright/nodewright:0.1.0-kwok"
    assert container["args"] == ["run"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert _one(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector
    assert _one(objects, "Service")["spec"]["selector"] == selector
    assert _one(objects, "Service")["spec"]["ports"][0]["port"] == 8080


def _allowed(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in rule.get("apiGroups", [])
        and resource in rule.get("resources", [])
        and verb in rule.get("verbs", [])
        and not rule.get("resourceNames")
        for rule in rules
    )


def test_rbac_is_least_privilege_but_enough() -> None:
    objects = render()
    rules = _one(objects, "ClusterRole")["rules"]
    everything = [(g, r, v) for rule in rules for g in rule["apiGroups"]
                  for r in rule["resources"] for v in rule["verbs"]]  # fmt: skip
    assert not any("*" in item for item in everything)
    assert not any(r in ("secrets", "pods/binding", "leases") for _, r, _ in everything)
    # Every kind the controllers read is listable and watchable cluster-wide.
    read = [Pod, Node, NodeClaim, NodePool, DaemonSet, ReplicaSet, StatefulSet, Namespace,
            PodDisruptionBudget, PersistentVolume, PersistentVolumeClaim, StorageClass,
            CSINode, Event]  # fmt: skip
    for model in read:
        group = model.API_VERSION.rpartition("/")[0]
        resource = model.KIND.lower() + ("es" if model.KIND.endswith("s") else "s")
        for verb in ("get", "list", "watch"):
            assert _allowed(rules, group, resource, verb), (group, resource, verb)
    assert _allowed(rules, "storage.k8s.io", "volumeattachments", "list")
    assert _allowed(rules, "", "pods/eviction", "create")
    assert _allowed(rules, "", "pods", "delete")
    assert _allowed(rules, "karpenter.sh", "nodeclaims", "create")
    assert _allowed(rules, "karpenter.sh", "nodeclaims/status", "patch")
    assert _allowed(rules, "karpenter.kwok.sh", "kwoknodeclasses/status", "patch")
    assert _allowed(rules, "", "events", "create")
    assert not _allowed(rules, "", "nodes", "deletecollection")
    # Leader election is namespaced; updates only to nodewright's own Lease.
    role = _one(objects, "Role", "kube-system")
    assert role["metadata"]["namespace"] == "kube-system"
    assert _allowed(role["rules"], "coordination.k8s.io", "leases", "create")
    (update,) = [r for r in role["rules"] if "update" in r["verbs"]]
    assert update["resourceNames"] == ["nodewright-leader-election"]
    binding = _one(objects, "ClusterRoleBinding")
    assert binding["subjects"][0]["name"] == _one(objects, "ServiceAccount")["metadata"]["name"]


def test_the_kwok_emulation_may_write_node_and_pod_status_and_node_leases_only() -> None:
    """The default provider plays kubelet: Node and Pod status, and one Lease per Node in
    kube-node-lease (the namespace kubelets use); nothing of it without the KWOK provider."""
    objects = render()
    rules = _one(objects, "ClusterRole")["rules"]
    for resource in ("nodes/status", "pods/status"):
        for verb in ("update", "patch"):
            assert _allowed(rules, "", resource, verb), (resource, verb)
        assert not _allowed(rules, "", resource, "delete")
    leases = _one(objects, "Role", "kube-node-lease")
    assert leases["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
        }
    ]
    binding = _one(objects, "RoleBinding", "kube-node-lease")
    assert binding["roleRef"]["name"] == leases["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "nodewright", "namespace": "kube-system"}
    ]

    aws = render(_merge(REQUIRED, {"providers": {"enabled": "aws"}}))
    aws_rules = _one(aws, "ClusterRole")["rules"]
    assert not _allowed(aws_rules, "", "pods/status", "patch")
    assert not _allowed(aws_rules, "", "nodes/status", "patch")
    assert not [o for o in aws if o["metadata"].get("namespace") == "kube-node-lease"]
    both = render(_merge(REQUIRED, {"providers": {"enabled": "aws, kwok"}}))
    assert _allowed(_one(both, "ClusterRole")["rules"], "", "pods/status", "patch")


def test_aws_irsa_annotates_the_service_account() -> None:
    arn = "arn:aws:iam::123456789012:role/nodewright"
    objects = render(_merge(REQUIRED, {"aws": {"roleArn": arn}, "providers": {"enabled": "aws"}}))
    _validate(objects)
    annotations = _one(objects, "ServiceAccount")["metadata"]["annotations"]
    assert annotations == {"eks.amazonaws.com/role-arn": arn}
    deployment = _one(objects, "Deployment")
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith(":0.1.0-aws")


def test_azure_workload_identity_labels_pods_and_annotates_the_account() -> None:
    identity = {"enabled": True, "clientId": "11111111-2222", "tenantId": "3333"}
    objects = render(_merge(REQUIRED, {"azure": {"workloadIdentity": identity}}))
    _validate(objects)
    annotations = _one(objects, "ServiceAccount")["metadata"]["annotations"]
    assert annotations == {
        "azure.workload.identity/client-id": "11111111-2222",
        "azure.workload.identity/tenant-id": "3333",
    }
    labels = _one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert labels["azure.workload.identity/use"] == "true"
    with pytest.raises(TemplateError, match="clientId is required"):
        render(_merge(REQUIRED, {"azure": {"workloadIdentity": {"enabled": True}}}))


def test_cluster_name_is_required() -> None:
    with pytest.raises(TemplateError, match="clusterName is required"):
        render({})


def test_optional_pieces() -> None:
    objects = render(
        _merge(
            REQUIRED,
            {
                "metrics": {"serviceMonitor": {"enabled": True, "additionalLabels": {"a": "b"}}},
                "podDisruptionBudget": {"enabled": False},
                "settings": {"leaderElection": {"enabled": False}},
                "replicas": 1,
                "extraEnv": [{"name": "FEATURE_X", "value": "1"}],
            },
        )
    )
    _validate(objects)
    monitor = _one(objects, "ServiceMonitor")
    assert monitor["spec"]["endpoints"] == [
        {"port": "http-metrics", "path": "/metrics", "interval": "30s"}
    ]
    assert monitor["metadata"]["labels"]["a"] == "b"
    assert not [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    env = _env(_one(objects, "Deployment"))
    assert env["DISABLE_LEADER_ELECTION"] == "true"
    assert env["FEATURE_X"] == "1"


def test_the_chart_installs_the_generated_crds() -> None:
    names = sorted(p.name for p in (CHART / "crds").iterdir())
    # One file per CRD `nodewright crds` prints: the core's and every installed provider's.
    generated = sorted(f"{crd['metadata']['name']}.yaml" for crd in all_crds(load_host()))
    assert names == generated
    assert {
        "kwoknodeclasses.karpenter.kwok.sh.yaml",
        "nodeclaims.karpenter.sh.yaml",
        "nodepools.karpenter.sh.yaml",
    } <= set(names)


@pytest.mark.parametrize(
    ("template", "old", "new"),
    [
        ("deployment.yaml", "{{- end }}\n      containers:", "\n      containers:"),
        (
            "deployment.yaml",
            "replicas: {{ .Values.replicas }}",
            "replicas: {{ .Values.replicas | nope }}",
        ),
        ("pdb.yaml", "| nindent 6 }}", "| nindent 2 }}"),
        ("clusterrole.yaml", 'verbs: ["create"]', 'verb: ["create"]'),
        ("service.yaml", "port: {{ .Values.metrics.port }}", "port: {{ .Values.metrics.name }}"),
    ],
)
def test_a_broken_template_fails(tmp_path: Path, template: str, old: str, new: str) -> None:
    chart = tmp_path / "nodewright"
    shutil.copytree(CHART, chart)
    path = chart / "templates" / template
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises((TemplateError, AssertionError, kubernetes_validate.ValidationError)):
        _validate(render(chart=chart))
