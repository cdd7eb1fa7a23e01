"""Pods with Dynamic Resource Allocation claims, the way Karpenter handles them with
``IGNORE_DRA_REQUESTS=true`` (its default): provisioning skips them with a FailedScheduling
event, they launch no node, daemonset pods with claims add no overhead, and a node running
one is not consolidated (its pod would schedule nowhere). With ``false`` their devices are
allocated (``test_solver_dra``, ``test_simulate_dra``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodewright.service.runner import options_from
from nodewright.settings.run import RunSettings
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate
from tests.disruption.harness import Harness

SKIPPED = (
    "Failed to schedule pod, pod has Dynamic Resource Allocation requirements that are not "
    "yet supported by Karpenter"
)

CLAIMS = """
resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
"""

CONTAINER_CLAIM = """
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  containers:
    - name: app
      image: pause
      resources:
        requests: {cpu: "1"}
        claims: [{name: gpu}]
---
"""

DRA_DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: device-agent, namespace: default}
spec:
  selector: {matchLabels: {app: device-agent}}
  template:
    metadata: {labels: {app: device-agent}}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: single-gpu}]
      containers:
        - name: agent
          image: pause
          resources: {requests: {cpu: "30"}}
---
"""


def test_pods_with_claims_are_skipped_and_launch_no_node(simulate: Simulate) -> None:
    manifests = (
        node_pool()
        + KWOK_NODE_CLASS
        + deployment("gpu", 2, extra_spec=CLAIMS)
        + deployment("web", 1)
    )
    result = simulate(manifests)
    assert result.exit_code == 0
    (node,) = result.nodes()
    assert [p.split("-")[0] for p in node["pods"]] == ["default/web"]
    pending = sorted(p["name"].split("-")[0] for p in result.pending())
    assert pending == ["gpu", "gpu"]
    skipped = {e["object"] for e in result.events("FailedScheduling") if e["message"] == SKIPPED}
    assert len(skipped) == 2
    assert all(name.startswith("pod/gpu-") for name in skipped), skipped
    assert "skipping pod with Dynamic Resource Allocation requirements" in result.stdout
    assert "could not schedule pod" not in result.stdout


def test_a_container_claim_the_pod_does_not_declare_is_refused(simulate: Simulate) -> None:
    # The API server refuses such a pod (checked on v1.36), so simulate does too.
    result = simulate(node_pool() + KWOK_NODE_CLASS + CONTAINER_CLAIM)
    assert result.exit_code == 2
    assert (
        "spec.containers[0].resources.claims[0]: Not found: 'gpu': must be one of the names "
        "in pod.spec.resourceClaims: (none)"
    ) in result.stderr


def test_daemonset_pods_with_claims_add_no_overhead(simulate: Simulate) -> None:
    result = simulate(node_pool() + KWOK_NODE_CLASS + DRA_DAEMONSET + deployment("web", 1))
    assert result.exit_code == 0
    (node,) = result.nodes()
    # 30 CPUs of daemonset overhead would need a 32-CPU type; the web pod alone fits 2 CPUs.
    assert node["instanceType"] == "c-2x-amd64-linux", node


def test_false_turns_allocation_on_for_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IGNORE_DRA_REQUESTS", "false")
    assert options_from(RunSettings()).dra
    monkeypatch.delenv("IGNORE_DRA_REQUESTS")
    assert not options_from(RunSettings()).dra


def test_a_node_running_a_pod_with_claims_is_not_consolidated(tmp_path: Path) -> None:
    claims = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]}
    (tmp_path / "plain").mkdir()
    (tmp_path / "dra").mkdir()
    plain = Harness(tmp_path / "plain")
    node = plain.node("default-instance-type")
    plain.bind_pods(node, 1)
    plain.run(60)
    assert node not in plain.claim_names(), "a lone small pod's node is replaced by a cheaper one"

    harness = Harness(tmp_path / "dra")
    node = harness.node("default-instance-type")
    (pod,) = harness.bind_pods(node, 1, owner="gpu", spec=claims)
    harness.run(60)
    assert harness.claim_names() == {node}
    assert (
        f"node/{node}",
        f"Not all pods would schedule, default/{pod} => pod has Dynamic Resource Allocation "
        "requirements that are not yet supported by Karpenter",
    ) in harness.event_log("Unconsolidatable")
