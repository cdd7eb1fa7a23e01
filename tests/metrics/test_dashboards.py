"""Every series Karpenter's published Grafana dashboards query, with the labels they query it
by, is exported after a simulation that scales up and back down.

The dashboards are the ones Karpenter's getting-started guide loads into Grafana
(aws/karpenter-provider-aws website/content/en/v1.14/getting-started/getting-started-with-
karpenter/karpenter-capacity-dashboard.json and karpenter-performance-dashboard.json), and
the controllers dashboard beside them (karpenter-controllers.json), whose series are
controller-runtime's. node_exporter's ``node_time_seconds`` and ``node_boot_time_seconds``,
which the capacity dashboard also reads, come from node_exporter, not from Karpenter; the
``karpenter_allocation_controller_*`` series of karpenter-controllers-allocation.json predate
Karpenter v1, which no longer exports them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from nodewright import metrics
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

ROOT = Path(__file__).resolve().parents[2]

NODE = ("arch", "capacity_type", "instance_type", "nodepool", "zone", "resource_type")
#: series -> the labels the dashboards select or group it by.
DASHBOARD_SERIES: dict[str, tuple[str, ...]] = {
    # capacity dashboard
    "karpenter_nodes_allocatable": NODE,
    "karpenter_nodes_total_pod_requests": NODE,
    "karpenter_nodes_total_daemon_requests": NODE,
    "karpenter_nodepools_usage": ("nodepool", "resource_type"),
    "karpenter_nodepools_limit": ("nodepool", "resource_type"),
    "karpenter_nodes_created_total": ("nodepool",),
    "karpenter_nodes_terminated_total": ("nodepool",),
    "karpenter_nodeclaims_disrupted_total": ("nodepool",),
    "karpenter_voluntary_disruption_decisions_total": ("consolidation_type", "decision"),
    "karpenter_voluntary_disruption_eligible_nodes": ("reason",),
    "karpenter_pods_state": (
        "arch",
        "capacity_type",
        "instance_type",
        "namespace",
        "node",
        "nodepool",
        "zone",
        "phase",
    ),
    # performance dashboard
    "karpenter_nodes_termination_duration_seconds": ("quantile",),
    "karpenter_pods_startup_duration_seconds": ("quantile",),
    "controller_runtime_reconcile_time_seconds_bucket": ("controller", "le"),
    "controller_runtime_reconcile_total": ("controller",),
    # controllers dashboard
    "controller_runtime_reconcile_time_seconds_count": ("controller",),
    "controller_runtime_reconcile_errors_total": ("controller",),
    "workqueue_depth": ("name",),
}
#: The other per-node and cluster series of Karpenter's node metrics controller.
NODE_SERIES = {
    "karpenter_nodes_total_pod_limits": NODE,
    "karpenter_nodes_total_daemon_limits": NODE,
    "karpenter_nodes_system_overhead": NODE,
    "karpenter_nodes_current_lifetime_seconds": (*NODE[:-1], "node_name"),
    "karpenter_cluster_utilization_percent": ("resource_type",),
    "karpenter_cluster_state_node_count": (),
}

MANIFESTS = (
    node_pool(
        weight=None,
        limits='{cpu: "1000"}',
        disruption="{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}",
        requirements="[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]",
    )
    + KWOK_NODE_CLASS
    + """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
        - name: agent
          image: agent
          resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 64Mi}}
---
"""
    + deployment("web", 12, "1", "1Gi", container="web")
)
SCENARIO = """
steps:
  - advance: 1m
  - scale: {kind: Deployment, name: web, namespace: default, replicas: 2}
  - advance: 5m
"""


def _samples() -> Iterator[Sample]:
    exposition = metrics.exposition().decode()
    for family in text_string_to_metric_families(exposition):
        yield from family.samples


def test_every_series_the_dashboards_query_is_exported(simulate: Simulate) -> None:
    result = simulate(MANIFESTS, SCENARIO)
    assert result.exit_code == 0, result.stderr
    assert result.events("DisruptionTerminating"), "the scale-down removed no node"
    samples = list(_samples())
    missing = []
    for name, labels in {**DASHBOARD_SERIES, **NODE_SERIES}.items():
        found = [s for s in samples if s.name == name and set(labels) <= set(s.labels)]
        if not found:
            missing.append(name)
    assert missing == []


def test_summaries_export_the_quantiles_the_dashboards_read(simulate: Simulate) -> None:
    simulate(MANIFESTS, SCENARIO)
    samples = list(_samples())
    for name in (
        "karpenter_pods_startup_duration_seconds",
        "karpenter_nodes_termination_duration_seconds",
    ):
        quantiles = {s.labels["quantile"] for s in samples if s.name == name}
        assert quantiles >= {"0", "0.5", "0.9", "0.99", "1"}, name


def test_node_series_describe_the_nodes_left(simulate: Simulate) -> None:
    result = simulate(MANIFESTS, SCENARIO)
    nodes = {n["name"]: n for n in result.nodes()}
    pods = result.pods()
    samples = list(_samples())
    allocatable = [
        s
        for s in samples
        if s.name == "karpenter_nodes_allocatable" and s.labels["resource_type"] == "cpu"
    ]
    assert sorted(s.labels["node_name"] for s in allocatable) == sorted(nodes)
    for sample in allocatable:
        node = nodes[sample.labels["node_name"]]
        assert sample.labels["nodepool"] == node["nodePool"]
        assert sample.labels["instance_type"] == node["instanceType"]
        assert sample.labels["zone"] == node["zone"]
        assert sample.labels["managed"] == "true"

    def value(name: str, node: str, resource: str) -> float:
        (found,) = [
            s.value
            for s in samples
            if s.name == name
            and s.labels["node_name"] == node
            and s.labels["resource_type"] == resource
        ]
        return found

    for name in nodes:
        on_node = [p for p in pods if p["node"] == name]
        daemons = [p for p in on_node if p["namespace"] == "kube-system"]
        assert value("karpenter_nodes_total_pod_requests", name, "pods") == len(on_node)
        assert value("karpenter_nodes_total_daemon_requests", name, "pods") == len(daemons)
        expected_cpu = 0.1 * len(daemons) + 1.0 * (len(on_node) - len(daemons))
        assert value("karpenter_nodes_total_pod_requests", name, "cpu") == pytest.approx(
            expected_cpu
        )
        assert value("karpenter_nodes_total_daemon_limits", name, "cpu") == pytest.approx(
            0.2 * len(daemons)
        )


def test_the_controller_picker_finds_every_controllers_series(simulate: Simulate) -> None:
    """The dashboards list controllers from ``controller_runtime_reconcile_errors_total`` (zero
    until one fails) and then select each one's reconcile and work-queue series by that name."""
    simulate(MANIFESTS, SCENARIO)
    samples = list(_samples())
    controllers = {
        s.labels["controller"]
        for s in samples
        if s.name == "controller_runtime_reconcile_errors_total"
    }
    assert {"provisioner", "metrics.node", "node.termination"} <= controllers
    for controller in controllers:
        for name, label in (
            ("controller_runtime_reconcile_total", "controller"),
            ("controller_runtime_reconcile_time_seconds_bucket", "controller"),
            ("workqueue_depth", "name"),
        ):
            assert any(s.name == name and s.labels[label] == controller for s in samples), (
                name,
                controller,
            )
