"""``nodewright simulate --from-cluster`` against a real control plane (``cluster`` suite).

Three KWOK Nodes of a ``WhenEmpty`` NodePool are made with kubectl, as another Karpenter would
have left them (no NodeClaims); a Deployment pinned to the first runs two pods, a bare pod runs
on the second, the third is empty. The what-if must project the empty node's removal and a
price lower by exactly its price, leave the others, send nothing but GETs, and leave the
cluster as it was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.cluster.kube.transport import Answer, Transport
from nodewright.commands import main
from nodewright.testing.manifests import deployment
from tests.kube import live
from tests.kube.polling import eventually

pytestmark = live.LIVE

KWOK_LABELS = {
    "karpenter.kwok.sh/kwoknodeclass": "{pool}",
    "karpenter.kwok.sh/instance-family": "c",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "karpenter.sh/capacity-type": "on-demand",
    "karpenter.sh/registered": "true",
    "karpenter.sh/initialized": "true",
}
#: The KWOK catalog's on-demand prices of the types used.
PRICES = {"c-4x-amd64-linux": 0.108589934592, "c-8x-amd64-linux": 0.217179869184}


def _node(name: str, pool: str, instance_type: str, zone: str, cpu: int) -> dict[str, Any]:
    labels = {k: v.format(pool=pool) for k, v in KWOK_LABELS.items()}
    labels |= {
        "karpenter.sh/nodepool": pool,
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": zone,
        "kubernetes.io/hostname": name,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {"providerID": f"kwok://{name}"},
    }


def _node_status(cpu: int) -> dict[str, Any]:
    resources = {"cpu": str(cpu), "memory": f"{cpu * 2}Gi", "pods": "110"}
    return {
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kwok",
                    "lastHeartbeatTime": "2030-01-01T00:00:00Z",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
    }


#: The node lifecycle controller taints Nodes no kubelet reports for; the pods stay. (A pod
#: tolerating every taint would tolerate karpenter.sh/disrupted too, and so would not count
#: on its node, as in Karpenter.)
TOLERATIONS = (
    "[{key: node.kubernetes.io/not-ready, operator: Exists},"
    " {key: node.kubernetes.io/unreachable, operator: Exists}]"
)


def _manifests(pool: str, namespace: str) -> str:
    """A Deployment of two pods pinned to node a and a bare pod bound to node b."""
    return live.run_manifests(
        pool,
        "[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]",
        f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {namespace}}}
---
"""
        + deployment(
            "web",
            2,
            memory=None,
            namespace=namespace,
            extra_spec=f"nodeSelector: {{kubernetes.io/hostname: {pool}-a}}\n"
            f"tolerations: {TOLERATIONS}",
        )
        + f"""
apiVersion: v1
kind: Pod
metadata: {{name: lone, namespace: {namespace}}}
spec:
  nodeName: {pool}-b
  tolerations: {TOLERATIONS}
  containers:
    - {{name: app, image: pause, resources: {{requests: {{cpu: "1"}}}}}}
""",
    )


@pytest.fixture(scope="module")
def cluster_with_an_empty_node() -> Iterator[str]:
    live.install_crds()
    pool = f"wi-{live.suffix()}"
    namespace = pool
    nodes = [
        (f"{pool}-a", "c-4x-amd64-linux", "test-zone-a", 4),
        (f"{pool}-b", "c-4x-amd64-linux", "test-zone-b", 4),
        (f"{pool}-c", "c-8x-amd64-linux", "test-zone-a", 8),
    ]
    for name, instance_type, zone, cpu in nodes:
        live.apply(json.dumps(_node(name, pool, instance_type, zone, cpu)))
        live.kubectl(
            "patch",
            "node",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps(_node_status(cpu)),
        )
    live.apply(_manifests(pool, namespace))

    def placed() -> bool:
        out = live.kubectl("get", "pods", "-n", namespace, "-o", "json")
        pods = json.loads(out)["items"]
        return len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods)

    eventually(placed, "the Deployment's pods bound to node a", 60, live.POLL)
    try:
        yield pool
    finally:
        live.kubectl("delete", "namespace", namespace, "--wait=false", "--ignore-not-found")
        live.kubectl("delete", "nodepool", pool, "--ignore-not-found")
        live.kubectl("delete", "kwoknodeclass", pool, "--ignore-not-found")
        for name, *_ in nodes:
            live.kubectl("delete", "node", name, "--ignore-not-found", "--wait=false")


@pytest.fixture
def methods(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every HTTP method nodewright sends, watches included."""
    sent: list[str] = []
    call, stream = Transport.call, Transport.stream

    def logged_call(self: Transport, method: str, *args: Any, **kwargs: Any) -> Answer:
        sent.append(method)
        return call(self, method, *args, **kwargs)

    def logged_stream(self: Transport, *args: Any, **kwargs: Any) -> Any:
        sent.append("WATCH")
        return stream(self, *args, **kwargs)

    monkeypatch.setattr(Transport, "call", logged_call)
    monkeypatch.setattr(Transport, "stream", logged_stream)
    return sent


def test_the_what_if_of_a_live_cluster_removes_its_empty_node_and_writes_nothing(
    cluster_with_an_empty_node: str,
    methods: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pool = cluster_with_an_empty_node
    before = live.kubectl("get", "nodes,pods", "-A", "-o", "name")
    report = tmp_path / "report.json"
    try:
        code = main(
            ["simulate", "--from-cluster", "--kubeconfig", live.KUBECONFIG, "--json", str(report)]
        )
    finally:
        logging.getLogger("nodewright").handlers.clear()
    out = capsys.readouterr()
    assert code == 0, out.err
    assert set(methods) == {"GET"}, "a snapshot only lists"

    what_if = json.loads(report.read_text())["whatIf"]
    mine = {f"{pool}-a", f"{pool}-b", f"{pool}-c"}
    current = {n["name"]: n for n in what_if["currentNodes"] if n["name"] in mine}
    assert {name: n["managed"] for name, n in current.items()} == dict.fromkeys(mine, True)
    assert {name: n["pricePerHour"] for name, n in current.items()} == {
        f"{pool}-a": pytest.approx(PRICES["c-4x-amd64-linux"]),
        f"{pool}-b": pytest.approx(PRICES["c-4x-amd64-linux"]),
        f"{pool}-c": pytest.approx(PRICES["c-8x-amd64-linux"]),
    }
    changes = [(c["name"], c["action"], c["reason"]) for c in what_if["changes"]]
    assert [c for c in changes if c[0] in mine] == [(f"{pool}-c", "removed", "Empty")]
    projected = {n["name"] for n in what_if["projectedNodes"]}
    assert mine - projected == {f"{pool}-c"}
    pods = json.loads(report.read_text())["pods"]
    web = [p for p in pods if p["namespace"] == pool and p["name"].startswith("web-")]
    assert sorted(p["node"] for p in web) == [f"{pool}-a", f"{pool}-a"], "no pod was rolled"
    # the pods are the real cluster's, of the ReplicaSet kube-controller-manager named
    real = live.kubectl("get", "pods", "-n", pool, "-o", "name").split()
    assert sorted(f"pod/{p['name']}" for p in web) == sorted(n for n in real if "/web-" in n)
    assert "What-if for cluster https://" in out.out
    # the real cluster is as it was
    assert live.kubectl("get", "nodes,pods", "-A", "-o", "name") == before
    claims = yaml.safe_load(live.kubectl("get", "nodeclaims", "-o", "yaml"))["items"]
    assert not [c for c in claims if c["metadata"]["name"] in mine], "no NodeClaim was made"
