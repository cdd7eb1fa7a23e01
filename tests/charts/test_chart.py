"""The main chart, rendered for every combination of values users will use (no helm binary is
available here: see :mod:`tests.charts.helm`), each object validated against the Kubernetes
schemas (kubernetes-validate, offline), and what the controller is told (its environment)
accepted by the controller's own settings loader and providers."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from nodewright.commands.crds import all_crds
from nodewright.commands.host import load_host
from nodewright.settings.run import load_settings, parse_provider_options
from tests.charts.gotemplate import TemplateError
from tests.charts.helm import CHART, REQUIRED, ValuesError, merge, render

K8S_VERSION = "1.30.0"
KARPENTER_VALUES = Path(__file__).with_name("karpenter-values.yaml")

#: ServiceMonitor is not a Kubernetes kind: the fields the chart may set, checked by hand.
SERVICE_MONITOR_ENDPOINT = {
    "port",
    "path",
    "interval",
    "scrapeTimeout",
    "relabelings",
    "metricRelabelings",
    "honorLabels",
    "scheme",
    "tlsConfig",
}


def validate(objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        if obj["apiVersion"] == "monitoring.coreos.com/v1":
            assert set(obj["spec"]) <= {"namespaceSelector", "selector", "endpoints", "sampleLimit"}
            for endpoint in obj["spec"]["endpoints"]:
                assert set(endpoint) <= SERVICE_MONITOR_ENDPOINT, endpoint
            continue
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (found,) = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    return found


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = one(objects, "Deployment")["spec"]["template"]["spec"][
        "containers"
    ]
    return containers[0]


def env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(objects)["env"]}


def with_required(values: Mapping[str, Any]) -> dict[str, Any]:
    return merge(dict(REQUIRED), values)


#: kube-scheduler's default spreads, as a user pastes them from its KubeSchedulerConfiguration
DEFAULT_SPREAD = {
    "podTopologySpread": {
        "defaultConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ]
    }
}

#: Values files users will write: each renders valid objects the controller accepts.
COMBINATIONS: dict[str, dict[str, Any]] = {
    "defaults (KWOK)": {},
    "aws with IRSA and interruption": {
        "providers": {"enabled": "aws"},
        "aws": {"roleArn": "arn:aws:iam::123456789012:role/nodewright"},
        "settings": {
            "interruptionQueue": "nodewright-interruption",
            "clusterEndpoint": "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
            "clusterCABundle": "LS0tLS1CRUdJTg==",
            "featureGates": {"spotToSpotConsolidation": True},
        },
    },
    "aws on EKS Pod Identity, one replica": {
        "providers": {"enabled": "aws"},
        "replicas": 1,
        "podDisruptionBudget": {"enabled": False},
        "settings": {"leaderElection": {"enabled": False}},
    },
    "azure with workload identity": {
        "providers": {
            "enabled": "azure",
            "options": "azure.resource-group=rg,azure.location=westeurope",
        },
        "azure": {"workloadIdentity": {"enabled": True, "clientId": "1111", "tenantId": "2222"}},
        "settings": {"clusterEndpoint": "https://my-aks.hcp.westeurope.azmk8s.io:443"},
    },
    "aws and kwok together": {"providers": {"enabled": "kwok, aws"}},
    "default topology spread": {"settings": {"schedulerConfig": DEFAULT_SPREAD}},
    "monitoring": {
        "serviceMonitor": {
            "enabled": True,
            "additionalLabels": {"release": "prometheus"},
            "endpointConfig": {"interval": "15s", "scrapeTimeout": "10s"},
            "metricRelabelings": [
                {"action": "drop", "regex": "go_.*", "sourceLabels": ["__name__"]}
            ],
            "sampleLimit": 50000,
        },
        "service": {"annotations": {"prometheus.io/scrape": "true"}},
    },
    "host network, debug logs as text to a file": {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "logLevel": "debug",
        "logFormat": "text",
        "logOutputPaths": ["stdout", "/tmp/nodewright.log"],
    },
    "everything customised": {
        "nameOverride": "autoscaler",
        "fullnameOverride": "nw",
        "additionalLabels": {"team": "platform"},
        "additionalAnnotations": {"owner": "platform"},
        "imagePullPolicy": "Always",
        "imagePullSecrets": [{"name": "registry"}],
        "serviceAccount": {"create": False, "name": "existing-account"},
        "additionalClusterRoleRules": [
            {"apiGroups": ["example.com"], "resources": ["widgetnodeclasses"], "verbs": ["get"]}
        ],
        "podLabels": {"a": "b"},
        "podAnnotations": {"c": "d"},
        "podDisruptionBudget": {"name": "nw-pdb", "maxUnavailable": "50%"},
        "terminationGracePeriodSeconds": 120,
        "dnsConfig": {"options": [{"name": "ndots", "value": "1"}]},
        "initContainers": [{"name": "wait", "image": "busybox:1.36", "command": ["true"]}],
        "nodeSelector": {"role": "system"},
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone"},
                    }
                ]
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 2,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"x": "y"}},
            }
        ],
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "system"}],
        "extraVolumes": [{"name": "ca", "configMap": {"name": "corporate-ca"}}],
        "controller": {
            "containerName": "nodewright",
            "image": {
                "repository": "registry.example.com/nw",
                "tag": "custom",
                "digest": "sha256:" + "a" * 64,
            },
            "env": [{"name": "KUBE_CLIENT_QPS", "value": "50"}],
            "envFrom": [{"configMapRef": {"name": "nodewright-env"}}],
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
            "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/ssl/corporate"}],
            "sidecarContainer": [{"name": "proxy", "image": "envoyproxy/envoy:v1.31.0"}],
            "sidecarVolumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            "metrics": {"port": 9090},
            "healthProbe": {"port": 9091},
        },
        "settings": {
            "batchMaxDuration": "30s",
            "batchIdleDuration": "2s",
            "preferencePolicy": "Ignore",
            "minValuesPolicy": "BestEffort",
            "leaderElection": {"leaseName": "nw-leader"},
        },
    },
}


@pytest.mark.parametrize("values", COMBINATIONS.values(), ids=COMBINATIONS.keys())
def test_every_combination_renders_valid_objects_the_controller_accepts(
    values: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = render(with_required(values))
    validate(objects)
    # What the controller is told, as `nodewright run` reads it from its environment.
    for name, value in env(objects).items():
        if isinstance(value, str):
            monkeypatch.setenv(name, value)
    settings = load_settings({})
    enabled = str(env(objects)["NODEWRIGHT_PLUGINS"]).split(",")
    assert enabled == sorted(set(enabled))
    options = settings.providers
    assert set(options) <= set(enabled)
    if "aws" in options:
        from nodewright_aws.options import parse_settings

        parse_settings(options["aws"])
    if "azure" in options:
        from nodewright_azure.options import OPTIONS as AZURE_OPTIONS

        assert set(options["azure"]) <= set(AZURE_OPTIONS)


def test_default_render() -> None:
    objects = render()
    assert sorted(o["kind"] for o in objects) == [
        "ClusterRole",
        "ClusterRole",
        "ClusterRole",
        "ClusterRoleBinding",
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
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    variables = env(objects)
    assert variables["DISABLE_LEADER_ELECTION"] == "false"
    assert variables["CLUSTER_NAME"] == "test-cluster"
    assert variables["NODEWRIGHT_PLUGINS"] == "kwok"
    assert variables["LOG_OUTPUT_PATHS"] == "stdout"
    assert variables["SYSTEM_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    # each replica names itself as the reportingInstance of its Events
    assert variables["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    controller = container(objects)
    assert controller["image"] == "ghcr.io/nodewright/nodewright:0.1.0-kwok"
    assert controller["args"] == ["run"]
    assert controller["readinessProbe"]["httpGet"]["path"] == "/readyz"
    security = controller["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["runAsUser"] == security["runAsGroup"] == 65532
    # ... and /tmp is writable: an emptyDir
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "tmp", "mountPath": "/tmp"} in controller["volumeMounts"]
    assert {"name": "tmp", "emptyDir": {}} in pod["volumes"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert one(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector
    assert one(objects, "Service")["spec"]["selector"] == selector
    assert one(objects, "Service")["spec"]["ports"][0]["port"] == 8080
    # one replica per node and spread over zones: the terms select the controller's pods
    (anti,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": selector},
    }
    assert pod["topologySpreadConstraints"][0]["labelSelector"] == {"matchLabels": selector}


def test_the_endpoints_listen_on_the_pod_and_only_the_node_address_on_its_network() -> None:
    assert env(render())["BIND_ADDRESS"] == "0.0.0.0"
    on_host = env(render(with_required({"hostNetwork": True})))
    assert on_host["BIND_ADDRESS"] == {"fieldRef": {"fieldPath": "status.podIP"}}


def test_the_image_tag_follows_the_providers_as_bin_build_tags_images() -> None:
    def image(providers: str) -> str:
        return str(container(render(with_required({"providers": {"enabled": providers}})))["image"])

    assert image("aws") == "ghcr.io/nodewright/nodewright:0.1.0-aws"
    assert image(" kwok,aws ") == "ghcr.io/nodewright/nodewright:0.1.0-aws-kwok"
    build = (CHART.parents[1] / "bin" / "build").read_text()
    assert "sort -u | paste -sd- -" in build  # bin/build sorts and joins the same way
    digest = "sha256:" + "b" * 64
    pinned = container(render(with_required({"controller": {"image": {"digest": digest}}})))
    assert pinned["image"] == f"ghcr.io/nodewright/nodewright:0.1.0-kwok@{digest}"


def test_a_karpenter_values_file_means_the_same() -> None:
    """Karpenter's defaults, then what a Karpenter user typically sets, at Karpenter's paths."""
    karpenter = yaml.safe_load(KARPENTER_VALUES.read_text())
    validate(render(merge(karpenter, REQUIRED)))
    user = merge(
        karpenter,
        {
            "logLevel": "debug",
            "serviceMonitor": {"enabled": True},
            "controller": {
                "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
                "env": [{"name": "AWS_REGION", "value": "eu-west-1"}],
            },
            "settings": {
                "clusterName": "prod",
                "interruptionQueue": "Karpenter-prod",
                "featureGates": {"spotToSpotConsolidation": True},
            },
            "providers": {"enabled": "aws"},
        },
    )
    objects = render(user)
    validate(objects)
    variables = env(objects)
    assert variables["LOG_LEVEL"] == "debug"
    assert variables["AWS_REGION"] == "eu-west-1"
    assert one(objects, "ServiceMonitor")["spec"]["endpoints"][0]["port"] == "http-metrics"
    assert container(objects)["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
    gates = dict(g.split("=") for g in str(variables["FEATURE_GATES"]).split(","))
    assert gates["SpotToSpotConsolidation"] == "true"
    assert gates["ReservedCapacity"] == "true"
    options = parse_provider_options(str(variables["PROVIDER_OPTIONS"]).split(","))
    assert options["aws"]["interruption-queue"] == "Karpenter-prod"
    assert options["aws"]["vm-memory-overhead-percent"] == "0.075"
    assert one(objects, "PodDisruptionBudget")["metadata"]["name"] == "karpenter"


def test_names_follow_karpenters_rules() -> None:
    def names(release: str, values: Mapping[str, Any] | None = None) -> str:
        objects = render(with_required(values or {}), release=release)
        return str(one(objects, "Deployment")["metadata"]["name"])

    assert names("nodewright") == "nodewright"
    assert names("nodewright-prod") == "nodewright-prod"
    assert names("autoscaler") == "autoscaler-nodewright"
    assert names("x", {"fullnameOverride": "nw"}) == "nw"
    objects = render(with_required({"serviceAccount": {"create": False}}))
    assert not [o for o in objects if o["kind"] == "ServiceAccount"]
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "default"


def test_customised_values_land_where_karpenters_chart_puts_them() -> None:
    objects = render(with_required(COMBINATIONS["everything customised"]))
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    controller = container(objects)
    assert deployment["metadata"]["name"] == "nw"
    assert deployment["metadata"]["labels"]["team"] == "platform"
    assert all(o["metadata"]["annotations"]["owner"] == "platform" for o in objects)
    assert controller["name"] == "nodewright"
    assert controller["image"] == "registry.example.com/nw:custom@sha256:" + "a" * 64
    assert controller["imagePullPolicy"] == "Always"
    assert controller["envFrom"] == [{"configMapRef": {"name": "nodewright-env"}}]
    assert controller["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert controller["ports"][0]["containerPort"] == 9090
    assert env(objects)["HEALTH_PROBE_PORT"] == "9091"
    assert [m["name"] for m in controller["volumeMounts"]] == ["tmp", "ca"]
    assert [c["name"] for c in pod["containers"]] == ["nodewright", "proxy"]
    assert [m["mountPath"] for m in pod["containers"][1]["volumeMounts"]] == [
        "/etc/ssl/corporate",
        "/tmp",
    ]
    assert pod["serviceAccountName"] == "existing-account"
    assert pod["terminationGracePeriodSeconds"] == 120
    assert pod["initContainers"][0]["name"] == "wait"
    (term,) = pod["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["labelSelector"] == {
        "matchLabels": {
            "app.kubernetes.io/name": "autoscaler",
            "app.kubernetes.io/instance": "nodewright",
        }
    }
    assert pod["topologySpreadConstraints"][0]["labelSelector"] == {"matchLabels": {"x": "y"}}
    assert one(objects, "PodDisruptionBudget")["metadata"]["name"] == "nw-pdb"
    assert env(objects)["LEADER_ELECTION_NAME"] == "nw-leader"
    assert one(objects, "Role", "nw")["rules"][1]["resourceNames"] == ["nw-leader"]


def test_aws_irsa_annotates_the_service_account() -> None:
    objects = render(with_required(COMBINATIONS["aws with IRSA and interruption"]))
    annotations = one(objects, "ServiceAccount")["metadata"]["annotations"]
    assert annotations == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/nodewright"
    }
    options = parse_provider_options(str(env(objects)["PROVIDER_OPTIONS"]).split(","))
    assert options["aws"]["cluster-endpoint"] == "https://ABC.gr7.eu-west-1.eks.amazonaws.com"
    assert options["aws"]["cluster-ca-bundle"] == "LS0tLS1CRUdJTg=="


def test_azure_workload_identity_labels_pods_and_annotates_the_account() -> None:
    objects = render(with_required(COMBINATIONS["azure with workload identity"]))
    annotations = one(objects, "ServiceAccount")["metadata"]["annotations"]
    assert annotations == {
        "azure.workload.identity/client-id": "1111",
        "azure.workload.identity/tenant-id": "2222",
    }
    labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert labels["azure.workload.identity/use"] == "true"
    options = parse_provider_options(str(env(objects)["PROVIDER_OPTIONS"]).split(","))
    assert options["azure"] == {
        "cluster-endpoint": "https://my-aks.hcp.westeurope.azmk8s.io:443",
        "resource-group": "rg",
        "location": "westeurope",
    }
    with pytest.raises(TemplateError, match="clientId is required"):
        render(with_required({"azure": {"workloadIdentity": {"enabled": True}}}))


def test_default_spreads_reach_the_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    variables = env(render(with_required(COMBINATIONS["default topology spread"])))
    monkeypatch.setenv("SCHEDULER_CONFIG", str(variables["SCHEDULER_CONFIG"]))
    (spread,) = load_settings({}).default_spread
    assert (spread.topology_key, spread.max_skew, spread.when_unsatisfiable) == (
        "topology.kubernetes.io/zone",
        1,
        "ScheduleAnyway",
    )
    # none configured: the variable is left out and pods get only their own spreads
    assert "SCHEDULER_CONFIG" not in env(render(with_required({})))
    with pytest.raises(ValuesError, match=r"settings\.schedulerConfig: Additional properties"):
        render(with_required({"settings": {"schedulerConfig": {"podTopologySpreads": {}}}}))


def test_cluster_name_is_required() -> None:
    with pytest.raises(TemplateError, match="clusterName is required"):
        render({})


def test_monitoring_and_single_replica_pieces() -> None:
    objects = render(with_required(COMBINATIONS["monitoring"]))
    monitor = one(objects, "ServiceMonitor")
    assert monitor["spec"]["endpoints"] == [
        {
            "port": "http-metrics",
            "path": "/metrics",
            "interval": "15s",
            "scrapeTimeout": "10s",
            "metricRelabelings": [
                {"action": "drop", "regex": "go_.*", "sourceLabels": ["__name__"]}
            ],
        }
    ]
    assert monitor["spec"]["sampleLimit"] == 50000
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert one(objects, "Service")["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    single = render(with_required(COMBINATIONS["aws on EKS Pod Identity, one replica"]))
    assert not [o for o in single if o["kind"] == "PodDisruptionBudget"]
    assert env(single)["DISABLE_LEADER_ELECTION"] == "true"


def test_the_chart_installs_the_generated_crds() -> None:
    names = sorted(p.name for p in (CHART / "crds").iterdir())
    # Helm installs crds/ whole: the core's CRDs and every provider's the project ships.
    generated = sorted(f"{crd['metadata']['name']}.yaml" for crd in all_crds(load_host()))
    assert names == generated


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
        ("clusterrole-core.yaml", 'verbs: ["create"]', 'verb: ["create"]'),
        (
            "service.yaml",
            "port: {{ .Values.controller.metrics.port }}",
            "port: {{ .Values.controller.metrics.nope }}",
        ),
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
        validate(render(chart=chart))
