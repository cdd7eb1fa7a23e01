"""Karpenter's gated features on a live control plane (``cluster`` suite): a static NodePool,
a NodeOverlay, a CapacityBuffer and node repair, as a user turns them on with ``FEATURE_GATES``.

``nodewright run`` runs in this process under the chart's ServiceAccount (its RBAC rendered
from charts/nodewright), so the test also shows the chart grants what these controllers need:
reading NodeOverlays, CapacityBuffers and PodTemplates and writing their status. One run:

- a static NodePool with ``replicas: 2`` gets two Nodes and ``status.nodes: 2``, and keeps
  one when ``replicas`` is patched to 1;
- a NodeOverlay gives the m-family 8-CPU types one ``example.com/gpu`` card, so a pod asking
  for one runs on a Node whose NodeClaim says ``capacity-overlay-applied``;
- a CapacityBuffer of two one-CPU chunks gets Nodes of its own and reports that its virtual
  pods fit existing capacity;
- node repair removes the overlaid pod's Node once its Ready condition has been False for
  longer than the KWOK provider's policy tolerates.

Everything is deleted while nodewright still runs, so no NodeClaim is left with a finalizer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.api.capacitybuffer import CapacityBuffer
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.labels import SIMULATED_CONDITIONS_ANNOTATION
from nodewright.api.meta import find_condition
from nodewright.api.nodeoverlay import CAPACITY_OVERLAY_APPLIED_ANNOTATION, NodeOverlay
from nodewright.api.quantity import parse_quantity
from nodewright.cluster.kube import KubeCluster
from nodewright.plugin.host import PluginHost
from nodewright.service.runner import RunService, connect
from tests.kube import live
from tests.kube.live import Identity
from tests.kube.polling import eventually

pytestmark = live.LIVE

POOL_LABEL = "karpenter.sh/nodepool"
GATES = "StaticCapacity=true,NodeOverlay=true,CapacityBuffer=true,NodeRepair=true"
GPU = "example.com/gpu"
LONG_AGO = "2020-01-01T00:00:00Z"


def _manifests(tag: str, namespace: str) -> str:
    """A KWOKNodeClass, a static and a dynamic NodePool, the overlay, the pod that needs it,
    and the buffer with its PodTemplate; the pods and the buffer select the dynamic pool."""
    return f"""
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {{name: gated-{tag}}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: static-{tag}}}
spec:
  replicas: 2
  template:
    spec:
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
        - {{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["2"]}}
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: gated-{tag}}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: dynamic-{tag}}}
spec:
  template:
    spec:
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
        - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: gated-{tag}}}
  disruption: {{consolidationPolicy: WhenEmpty, consolidateAfter: 30s}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: balanced-{tag}}}
spec:
  template:
    spec:
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
        - {{key: karpenter.kwok.sh/instance-family, operator: In, values: [c]}}
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: gated-{tag}}}
  disruption: {{consolidationPolicy: Balanced, consolidateAfter: 0s}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {namespace}}}
spec:
  replicas: 12
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 0
      nodeSelector: {{{POOL_LABEL}: balanced-{tag}}}
      containers:
        - name: web
          image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
          resources: {{requests: {{cpu: "1"}}}}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {{name: gpu-{tag}}}
spec:
  requirements:
    - {{key: karpenter.kwok.sh/instance-family, operator: In, values: [m]}}
    - {{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["8"]}}
  capacity: {{{GPU}: "1"}}
---
apiVersion: v1
kind: Pod
metadata: {{name: trainer, namespace: {namespace}}}
spec:
  terminationGracePeriodSeconds: 0
  nodeSelector: {{{POOL_LABEL}: dynamic-{tag}}}
  containers:
    - name: trainer
      image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
      resources:
        requests: {{cpu: "1", {GPU}: "1"}}
        limits: {{{GPU}: "1"}}
---
apiVersion: v1
kind: PodTemplate
metadata: {{name: chunk, namespace: {namespace}}}
template:
  metadata: {{labels: {{app: headroom}}}}
  spec:
    nodeSelector: {{{POOL_LABEL}: dynamic-{tag}, karpenter.kwok.sh/instance-family: c}}
    containers:
      - name: app
        image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
        resources: {{requests: {{cpu: "1"}}}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {{name: headroom, namespace: {namespace}}}
spec:
  podTemplateRef: {{name: chunk}}
  replicas: 2
"""


@dataclasses.dataclass
class Gated:
    """What one run showed."""

    tag: str
    namespace: str
    outcome: list[object] = dataclasses.field(default_factory=list)
    static_nodes: list[Node] = dataclasses.field(default_factory=list)
    static_pool: NodePool | None = None
    static_after_scale_down: list[str] = dataclasses.field(default_factory=list)
    trainer: Pod | None = None
    trainer_node: Node | None = None
    trainer_claim: NodeClaim | None = None
    overlay: NodeOverlay | None = None
    buffer: CapacityBuffer | None = None
    buffer_nodes: list[Node] = dataclasses.field(default_factory=list)
    balanced_before: list[Node] = dataclasses.field(default_factory=list)
    balanced_after: list[Node] = dataclasses.field(default_factory=list)
    approvals: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    repaired: str = ""
    left: list[str] = dataclasses.field(default_factory=list)


def _wait(check: Callable[[], bool], what: str) -> None:
    """Wait as long as the control plane may take (``NODEWRIGHT_TEST_TIMEOUT``)."""
    eventually(check, what, live.TIMEOUT, every=0.5)


def _of_pool(admin: KubeCluster, kind: Any, pool: str) -> list[Any]:
    return [o for o in admin.list(kind, labels={POOL_LABEL: pool}) if not o.deleting]


def _explain(admin: KubeCluster, namespace: str, pool: str) -> str:
    """What a user would look at when the pod does not run: its conditions, the pool's
    NodeClaims and Nodes, and the overlays' status."""
    pod = admin.read(Pod, "trainer", namespace)
    lines = [f"pod: {pod.status.model_dump(exclude_defaults=True) if pod else None}"]
    for claim in admin.list(NodeClaim, labels={POOL_LABEL: pool}):
        lines.append(f"nodeclaim {claim.name}: {claim.status.model_dump(exclude_defaults=True)}")
    for node in admin.list(Node, labels={POOL_LABEL: pool}):
        lines.append(f"node {node.name}: allocatable {node.status.allocatable}")
    for overlay in admin.list(NodeOverlay):
        lines.append(f"overlay {overlay.name}: {overlay.status.model_dump(exclude_defaults=True)}")
    return "\n".join(lines)


def _run(admin: KubeCluster, run: Gated) -> None:
    tag, namespace = run.tag, run.namespace
    static, dynamic, balanced = f"static-{tag}", f"dynamic-{tag}", f"balanced-{tag}"

    def static_ready(count: int) -> bool:
        nodes = _of_pool(admin, Node, static)
        pool = admin.read(NodePool, static)
        return (
            len(nodes) == count
            and all(n.ready for n in nodes)
            and pool is not None
            and pool.status.nodes == count
        )

    _wait(lambda: static_ready(2), "the static pool's two Nodes are Ready")
    run.static_nodes = _of_pool(admin, Node, static)
    run.static_pool = admin.read(NodePool, static)

    def trainer_runs() -> bool:
        pod = admin.read(Pod, "trainer", namespace)
        return pod is not None and pod.status.phase == "Running"

    try:
        _wait(trainer_runs, "the pod asking for example.com/gpu runs")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{_explain(admin, namespace, dynamic)}") from None
    run.trainer = admin.read(Pod, "trainer", namespace)
    assert run.trainer is not None
    run.trainer_node = admin.read(Node, run.trainer.spec.node_name or "")
    run.trainer_claim = next(
        (
            c
            for c in _of_pool(admin, NodeClaim, dynamic)
            if c.status.node_name == run.trainer.spec.node_name
        ),
        None,
    )
    run.overlay = admin.read(NodeOverlay, f"gpu-{tag}")

    def buffer_fits() -> bool:
        buffer = admin.read(CapacityBuffer, "headroom", namespace)
        if buffer is None:
            return False
        provisioning = find_condition(buffer.status.conditions, "Provisioning")
        return provisioning is not None and provisioning.status == "True"

    _wait(buffer_fits, "the buffer's virtual pods fit existing capacity")
    run.buffer = admin.read(CapacityBuffer, "headroom", namespace)
    run.buffer_nodes = [
        n
        for n in _of_pool(admin, Node, dynamic)
        if n.metadata.labels.get("karpenter.kwok.sh/instance-family") == "c"
    ]

    live.kubectl("patch", f"nodepool/{static}", "--type=merge", "-p", '{"spec":{"replicas":1}}')
    _wait(lambda: static_ready(1), "the static pool scaled down to one Node")
    run.static_after_scale_down = [n.name for n in _of_pool(admin, Node, static)]

    # Balanced: twelve one-CPU pods, then two; replacing their big node by a small one saves
    # most of the pool's cost for all of its disruption, so the move is approved.
    def web_runs(count: int) -> bool:
        pods = admin.list(Pod, namespace, labels={"app": "web"})
        return len(pods) == count and all(p.status.phase == "Running" for p in pods)

    _wait(lambda: web_runs(12), "twelve web pods run")
    run.balanced_before = _of_pool(admin, Node, balanced)
    big = {n.name for n in run.balanced_before}
    live.kubectl("scale", "deploy/web", "-n", namespace, "--replicas=2")

    def replaced() -> bool:
        nodes = _of_pool(admin, Node, balanced)
        return len(nodes) == 1 and nodes[0].name not in big and nodes[0].ready and web_runs(2)

    _wait(replaced, "the Balanced pool's big node was replaced by a smaller one")
    run.balanced_after = _of_pool(admin, Node, balanced)
    run.approvals = [
        e
        for e in admin._api.call("GET", "/apis/events.k8s.io/v1/events").body.get("items") or []
        if e.get("reason") == "ConsolidationApproved"
        and (e.get("regarding") or {}).get("name") in big
    ]

    # The trainer's Node reports NotReady since long ago: past the KWOK policy's 10 minutes, so
    # node repair replaces it at once. The annotation tells the emulated kubelet to keep
    # reporting the condition written (a broken machine) instead of making the Node Ready.
    assert run.trainer_claim is not None
    sick = run.trainer_claim.status.node_name
    live.kubectl("annotate", f"node/{sick}", f"{SIMULATED_CONDITIONS_ANNOTATION}=Ready")
    condition = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "injected by the test",
        "lastHeartbeatTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTransitionTime": LONG_AGO,
    }
    patch = json.dumps({"status": {"conditions": [condition]}})
    live.kubectl("patch", f"node/{sick}", "--subresource=status", "--type=strategic", "-p", patch)
    claim = run.trainer_claim.name
    _wait(lambda: admin.read(NodeClaim, claim) is None, "node repair removed the NotReady node")
    run.repaired = claim


def _clean_up(admin: KubeCluster, tag: str, namespace: str) -> list[str]:
    """Delete what the run made while nodewright still runs; what is left, by name."""
    live.kubectl(
        "delete", "--ignore-not-found", "--wait=false",
        f"nodeoverlay/gpu-{tag}", f"nodepool/static-{tag}", f"nodepool/dynamic-{tag}",
        f"nodepool/balanced-{tag}", f"namespace/{namespace}",
    )  # fmt: skip
    pools = (f"static-{tag}", f"dynamic-{tag}", f"balanced-{tag}")

    def gone() -> bool:
        return not any(admin.list(NodeClaim, labels={POOL_LABEL: p}) for p in pools)

    with contextlib.suppress(AssertionError):  # reported by the test that checks it
        _wait(gone, "every NodeClaim of the run is gone")
    return [c.name for p in pools for c in admin.list(NodeClaim, labels={POOL_LABEL: p})]


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gated]:
    live.install_crds()
    tag = live.suffix()
    namespace = f"gated-{tag}"
    admin = live.connect()
    identity: Identity
    with live.chart_identity(tmp_path_factory.mktemp("identity"), f"nodewright-{tag}") as identity:
        live.kubectl("create", "namespace", namespace)
        settings = identity.run_settings(feature_gates=GATES)
        cluster = connect(settings)
        run = Gated(tag, namespace)
        service = RunService(settings, cluster, PluginHost.load(only=["kwok"]), identity=tag)
        loop = threading.Thread(target=lambda: run.outcome.append(service.run()), daemon=True)
        try:
            loop.start()
            live.apply(_manifests(tag, namespace))
            _run(admin, run)
        finally:
            run.left = _clean_up(admin, tag, namespace)
            service.request_stop()
            loop.join(60)
            admin.close()
        yield run


def test_nodewright_ran_and_stopped_cleanly(gated: Gated) -> None:
    assert gated.outcome == [0]


def test_a_static_pool_keeps_its_replicas_and_follows_a_scale_down(gated: Gated) -> None:
    assert len(gated.static_nodes) == 2
    assert {n.metadata.labels["karpenter.kwok.sh/instance-cpu"] for n in gated.static_nodes} == {
        "2"
    }
    assert gated.static_pool is not None
    assert gated.static_pool.status.nodes == 2
    assert len(gated.static_after_scale_down) == 1
    assert set(gated.static_after_scale_down) < {n.name for n in gated.static_nodes}


def test_an_overlaid_resource_gets_a_node_that_offers_it(gated: Gated) -> None:
    node, claim = gated.trainer_node, gated.trainer_claim
    assert node is not None
    assert claim is not None
    assert node.metadata.labels["karpenter.kwok.sh/instance-family"] == "m"
    assert node.metadata.labels["karpenter.kwok.sh/instance-cpu"] == "8"
    assert node.status.allocatable.get(GPU) == "1"
    assert claim.metadata.annotations.get(CAPACITY_OVERLAY_APPLIED_ANNOTATION) == "true"
    assert gated.overlay is not None
    ready = find_condition(gated.overlay.status.conditions, "Ready")
    assert ready is not None
    assert ready.status == "True"


def test_a_capacity_buffer_gets_nodes_of_its_own(gated: Gated) -> None:
    assert gated.buffer is not None
    assert gated.buffer.status.replicas == 2
    ready = find_condition(gated.buffer.status.conditions, "ReadyForProvisioning")
    assert ready is not None
    assert ready.status == "True"
    provisioning = find_condition(gated.buffer.status.conditions, "Provisioning")
    assert provisioning is not None
    assert provisioning.reason == "FitsExistingCapacity"
    # no real pod asked for a c-family node of the dynamic pool: they hold the headroom
    room = sum(parse_quantity(n.status.allocatable["cpu"]) for n in gated.buffer_nodes)
    assert room >= 2 * 1000, "room for two one-CPU chunks"


def test_balanced_consolidation_replaces_a_mostly_idle_node_and_says_why(gated: Gated) -> None:
    (before,) = gated.balanced_before
    (after,) = gated.balanced_after
    cpu = "karpenter.kwok.sh/instance-cpu"
    assert int(after.metadata.labels[cpu]) < int(before.metadata.labels[cpu])
    assert gated.approvals, "no ConsolidationApproved event on the replaced node"
    assert all("k: 2" in e["note"] for e in gated.approvals)


def test_node_repair_replaces_a_node_unhealthy_past_its_toleration(gated: Gated) -> None:
    assert gated.trainer_claim is not None
    assert gated.repaired == gated.trainer_claim.name


def test_nothing_is_left_behind(gated: Gated) -> None:
    assert gated.left == []
