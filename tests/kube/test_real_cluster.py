"""End to end on a real API server (kwokctl, or kind with the KWOK controller): runs only
when ``NODEWRIGHT_TEST_KUBECONFIG`` names a kubeconfig. See docs/kubernetes.md.

Seed 001's shape: apply the CRDs, a KWOKNodeClass, a NodePool and a Deployment; nodewright
launches nodes, kube-scheduler binds the pods to them; delete the Deployment; the empty
nodes are consolidated away.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import ClassVar

import pytest

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.manifests import KindRegistry, load_text
from nodewright.api.meta import KubeObject
from nodewright.cluster import AlreadyExistsError
from nodewright.cluster.kube import KubeCluster
from nodewright.plugin.host import PluginHost
from nodewright.service.runner import RunService, connect
from nodewright.settings import RunSettings
from nodewright_kwok.nodeclass import KWOKNodeClass

KUBECONFIG = os.environ.get("NODEWRIGHT_TEST_KUBECONFIG", "")

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not KUBECONFIG, reason="NODEWRIGHT_TEST_KUBECONFIG is not set"),
]

#: How long nodes may take to appear / pods to bind / nodes to go on a CI runner.
TIMEOUT = float(os.environ.get("NODEWRIGHT_TEST_TIMEOUT", "300"))


class CustomResourceDefinition(KubeObject):
    API_VERSION: ClassVar[str] = "apiextensions.k8s.io/v1"
    KIND: ClassVar[str] = "CustomResourceDefinition"
    NAMESPACED: ClassVar[bool] = False


def _eventually(check: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1.0)
    raise AssertionError(f"not within {timeout:g}s: {what}")


def _apply(cluster: KubeCluster, obj: KubeObject) -> None:
    try:
        cluster.create(obj)
    except AlreadyExistsError:
        current = cluster.read(type(obj), obj.name, obj.namespace)
        assert current is not None
        replacement = obj.model_copy(deep=True)
        replacement.metadata.resource_version = current.metadata.resource_version
        cluster.update(replacement)


@pytest.fixture(scope="module")
def host() -> PluginHost:
    loaded = PluginHost.load(only=["kwok"])
    assert loaded.node_class_kinds(), "the kwok provider must be installed"
    return loaded


@pytest.fixture(scope="module")
def kube(host: PluginHost) -> Iterator[KubeCluster]:
    cluster = KubeCluster.connect(KUBECONFIG)
    try:
        from nodewright.crds_cli import all_crds
    except ImportError:  # pragma: no cover - the CRD generator is not installed
        pytest.skip("nodewright crds is not available; apply the CRDs before running")
    for crd in all_crds(host):
        _apply(cluster, CustomResourceDefinition.model_validate(crd))
    for crd in all_crds(host):
        name = crd["metadata"]["name"]

        def established(name: str = name) -> bool:
            current = cluster.read(CustomResourceDefinition, name)
            conditions = (current.model_extra or {}).get("status", {}).get("conditions", [])
            return any(
                c.get("type") == "Established" and c.get("status") == "True" for c in conditions
            )

        _eventually(established, f"CRD {name} established", timeout=60)
    yield cluster
    cluster.close()


def test_nodes_come_for_a_deployment_and_go_after_it(kube: KubeCluster, host: PluginHost) -> None:
    suffix = uuid.uuid4().hex[:6]
    pool, app = f"e2e-{suffix}", f"inflate-{suffix}"
    registry = KindRegistry()
    registry.register(KWOKNodeClass)
    manifests = f"""
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {{name: {pool}}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {pool}}}
spec:
  disruption: {{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}}
  template:
    spec:
      requirements:
        - {{key: kubernetes.io/os, operator: In, values: [linux]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
        - {{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4"]}}
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: {pool}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {app}, namespace: default}}
spec:
  replicas: 5
  selector: {{matchLabels: {{app: {app}}}}}
  template:
    metadata: {{labels: {{app: {app}}}}}
    spec:
      nodeSelector: {{karpenter.sh/nodepool: {pool}}}
      tolerations: [{{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}}]
      containers:
        - name: app
          image: registry.k8s.io/pause:3.9
          resources: {{requests: {{cpu: "1", memory: 128Mi}}}}
"""
    objects = load_text(manifests, "e2e", registry)
    settings = RunSettings(
        kubeconfig=KUBECONFIG,
        metrics_port=0,
        health_probe_port=0,
        bind_address="127.0.0.1",
        leader_election_namespace="default",
        leader_election_name=f"nodewright-e2e-{suffix}",
        provider_options="kwok.manage-nodes=false",  # the KWOK controller plays kubelet
        log_format="text",
    )
    service = RunService(settings, connect(settings), host, identity=f"e2e-{suffix}")
    service.start_endpoints()
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(service.run()), daemon=True)
    thread.start()
    try:
        for obj in objects:
            _apply(kube, obj)

        def bound() -> bool:
            pods = kube.list(Pod, "default", labels={"app": app})
            nodes = {n.name for n in kube.list(Node, labels={"karpenter.sh/nodepool": pool})}
            return len(pods) == 5 and all(p.spec.node_name in nodes for p in pods)

        _eventually(bound, "5 pods bound to nodes of the NodePool")
        claims = kube.list(NodeClaim, labels={"karpenter.sh/nodepool": pool})
        assert 2 <= len(claims) <= 5

        kube.delete(type(objects[2]), app, "default")
        _eventually(
            lambda: not kube.list(NodeClaim, labels={"karpenter.sh/nodepool": pool}),
            "the empty nodes consolidated away",
        )
        assert not kube.list(Node, labels={"karpenter.sh/nodepool": pool})
    finally:
        service.request_stop()
        thread.join(60)
        kube.delete(NodePool, pool)
        kube.delete(KWOKNodeClass, pool)
    assert outcome == [0]
