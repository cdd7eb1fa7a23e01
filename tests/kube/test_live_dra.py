"""DRA allocation on a live control plane (``cluster`` suite), as a user turns it on with
``IGNORE_DRA_REQUESTS=false``: ``nodewright run`` (in this process, under the chart's
ServiceAccount rendered with ``settings.ignoreDRARequests: false``) reads the pods' claims and
the cluster's DeviceClasses and ResourceSlices, and launches a node of an instance type that
offers the GPUs they ask for (examples/dra's catalog); the KWOK provider publishes that node's
ResourceSlice, the real kube-controller-manager makes the claims from their template and the
real kube-scheduler allocates each a GPU of the node and binds the pods there.

Everything is deleted while nodewright still runs, so no NodeClaim is left with a finalizer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import DRA_DRIVERS_ANNOTATION, INSTANCE_TYPE_LABEL
from nodewright.api.resource import ResourceClaim, ResourceSlice
from nodewright.cluster.kube import KubeCluster
from nodewright.plugin.host import PluginHost
from nodewright.service.runner import RunService, connect
from tests.kube import live
from tests.kube.polling import eventually

pytestmark = [*live.LIVE, live.EMULATION]

POOL_LABEL = "karpenter.sh/nodepool"
CATALOG = Path(__file__).resolve().parents[2] / "examples" / "dra" / "gpu-catalog.yaml"
DRIVER = "gpu.example.com"


def _manifests(tag: str, namespace: str) -> str:
    return f"""
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {{name: dra-{tag}}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: dra-{tag}}}
spec:
  template:
    spec:
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: dra-{tag}}}
  disruption: {{consolidationPolicy: WhenEmpty, consolidateAfter: 30s}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu-{tag}}}
spec:
  selectors:
    - cel: {{expression: 'device.driver == "{DRIVER}"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-gpu, namespace: {namespace}}}
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly: {{deviceClassName: gpu-{tag}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: trainer, namespace: {namespace}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: trainer}}}}
  template:
    metadata: {{labels: {{app: trainer}}}}
    spec:
      terminationGracePeriodSeconds: 0
      nodeSelector: {{{POOL_LABEL}: dra-{tag}}}
      resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]
      containers:
        - name: trainer
          image: {live.PAUSE_IMAGE}
          resources: {{requests: {{cpu: "1"}}, claims: [{{name: gpu}}]}}
"""


@dataclasses.dataclass
class DraRun:
    tag: str
    namespace: str
    outcome: list[object] = dataclasses.field(default_factory=list)
    pods: list[Pod] = dataclasses.field(default_factory=list)
    nodes: list[Node] = dataclasses.field(default_factory=list)
    node_claims: list[NodeClaim] = dataclasses.field(default_factory=list)
    claims: list[ResourceClaim] = dataclasses.field(default_factory=list)
    slices: list[ResourceSlice] = dataclasses.field(default_factory=list)
    left: list[str] = dataclasses.field(default_factory=list)


def _explain(admin: KubeCluster, run: DraRun) -> str:
    lines = []
    for pod in admin.list(Pod, run.namespace):
        lines.append(f"pod {pod.name}: {pod.status.model_dump(exclude_defaults=True)}")
    for claim in admin.list(ResourceClaim, run.namespace):
        lines.append(f"claim {claim.name}: {claim.status.model_dump(exclude_defaults=True)}")
    for node_claim in admin.list(NodeClaim):
        lines.append(f"nodeclaim {node_claim.name}: {node_claim.status.conditions}")
    for node in admin.list(Node):
        lines.append(f"node {node.name}: {node.spec.taints} {node.metadata.labels}")
    for published in admin.list(ResourceSlice):
        lines.append(f"slice {published.name}: {published.spec.model_dump(exclude_defaults=True)}")
    return "\n".join(lines)


def _observe(admin: KubeCluster, run: DraRun) -> None:
    def running() -> bool:
        pods = admin.list(Pod, run.namespace)
        return len(pods) == 2 and all(p.status.phase == "Running" for p in pods)

    try:
        eventually(running, "both trainers run", live.TIMEOUT, every=0.5)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{_explain(admin, run)}") from None
    run.pods = admin.list(Pod, run.namespace)
    run.nodes = [
        n
        for n in admin.list(Node, labels={POOL_LABEL: f"dra-{run.tag}"})
        if n.name in {p.spec.node_name for p in run.pods}
    ]
    run.node_claims = admin.list(NodeClaim, labels={POOL_LABEL: f"dra-{run.tag}"})
    run.claims = admin.list(ResourceClaim, run.namespace)
    names = {n.name for n in run.nodes}
    run.slices = [s for s in admin.list(ResourceSlice) if s.spec.node_name in names]


def _clean_up(admin: KubeCluster, run: DraRun) -> list[str]:
    live.kubectl(
        "delete", "--ignore-not-found", "--wait=false", f"nodepool/dra-{run.tag}",
        f"deviceclass/gpu-{run.tag}", f"namespace/{run.namespace}",
    )  # fmt: skip
    pool = f"dra-{run.tag}"
    with contextlib.suppress(AssertionError):  # reported by the test that checks it
        eventually(
            lambda: not admin.list(NodeClaim, labels={POOL_LABEL: pool}),
            "every NodeClaim of the run is gone",
            live.TIMEOUT,
            every=0.5,
        )
    live.kubectl("delete", "--ignore-not-found", "--wait=false", f"kwoknodeclass/dra-{run.tag}")
    return [c.name for c in admin.list(NodeClaim, labels={POOL_LABEL: pool})]


@pytest.fixture(scope="module")
def dra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DraRun]:
    live.install_crds()
    tag = live.suffix()
    run = DraRun(tag, f"dra-{tag}")
    admin = live.connect()
    chart = {"ignoreDRARequests": False}
    with live.chart_identity(tmp_path_factory.mktemp("identity"), f"nodewright-{tag}", chart) as me:
        live.kubectl("create", "namespace", run.namespace)
        options = ",".join(
            o for o in (live.PROVIDER_OPTIONS, f"kwok.instance-types-file={CATALOG}") if o
        )
        settings = me.run_settings(ignore_dra_requests=False, provider_options=options)
        service = RunService(
            settings, connect(settings), PluginHost.load(only=["kwok"]), identity=tag
        )
        loop = threading.Thread(target=lambda: run.outcome.append(service.run()), daemon=True)
        try:
            loop.start()
            live.apply(_manifests(tag, run.namespace))
            _observe(admin, run)
        finally:
            run.left = _clean_up(admin, run)
            service.request_stop()
            loop.join(60)
            admin.close()
        yield run


def test_nodewright_ran_and_stopped_cleanly(dra: DraRun) -> None:
    assert dra.outcome == [0]
    assert dra.left == []


def test_the_pods_run_on_a_gpu_node_the_real_scheduler_allocated_devices_on(dra: DraRun) -> None:
    (node,) = dra.nodes
    assert node.metadata.labels[INSTANCE_TYPE_LABEL].startswith("g4-"), "two GPUs: the g4 type"
    (node_claim,) = dra.node_claims
    assert node_claim.metadata.annotations.get(DRA_DRIVERS_ANNOTATION) == DRIVER
    (published,) = dra.slices
    assert published.spec.driver == DRIVER
    assert len(dra.claims) == 2
    devices = set()
    for claim in dra.claims:
        assert claim.status.allocation is not None, claim.name
        (result,) = claim.status.allocation.devices.results
        assert result.pool == published.spec.pool.name
        devices.add(result.device)
    assert len(devices) == 2
