"""Shared devices and GPU partitions end to end in a simulation with the KWOK provider
(``examples/dra-shared``): pods that each ask a share of an accelerator fill its capacity
before another node is launched, notebooks on GPU quarters fill a GPU's counters, and
kube-scheduler writes each share's consumed capacity into its claim."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from nodewright.api.core import Node, Pod
from nodewright.api.labels import INSTANCE_TYPE_LABEL
from nodewright.api.manifests.loading import load_paths
from nodewright.api.resource import ResourceClaim
from nodewright.controllers.options import Options
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import kind_registry
from nodewright.simulation.runner import Simulation
from tests.conftest import Simulate
from tests.dra.builders import NO_INSTANCE_TYPE_FOR_ALLOCATION, example_manifests

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-shared"
CATALOG = {"kwok": {"instance-types-file": str(EXAMPLE / "catalog.yaml")}}


def _simulation() -> Simulation:
    host = PluginHost.load(only=["kwok"])
    simulation = Simulation(host, Options(dra=True), provider_options=CATALOG)
    simulation.apply(load_paths([EXAMPLE / "manifests"], kind_registry(host)))
    simulation.settle()
    return simulation


def test_shares_fill_an_accelerator_and_quarters_fill_a_gpu_before_another_node() -> None:
    simulation = _simulation()
    nodes = {n.name: n.metadata.labels[INSTANCE_TYPE_LABEL] for n in simulation.cluster.list(Node)}
    pods = simulation.cluster.list(Pod)
    assert all(p.spec.node_name for p in pods)
    per_node = Counter((nodes[p.spec.node_name or ""], p.name.split("-")[0]) for p in pods)
    # 3 x 8Gi on 16Gi accelerators: two nodes (2 + 1); 5 quarters of 40Gi GPUs: 4 + 1.
    assert sorted(per_node.items()) == [
        (("m-8x-amd64-linux", "notebook"), 5),
        (("s-8x-amd64-linux", "inference"), 3),
    ]
    assert sorted(Counter(nodes.values()).items()) == [
        ("m-8x-amd64-linux", 2),
        ("s-8x-amd64-linux", 2),
    ]
    by_node: dict[str, list[tuple[str, dict[str, str] | None]]] = {}
    share_ids = set()
    for claim in simulation.cluster.list(ResourceClaim):
        assert claim.status.allocation is not None, claim.name
        (result,) = claim.status.allocation.devices.results
        by_node.setdefault(result.pool.split("/")[0], []).append(
            (result.device, result.consumed_capacity)
        )
        if result.share_id is not None:
            share_ids.add(result.share_id)
    held = sorted(str(sorted(devices, key=str)) for devices in by_node.values())
    assert held == sorted(
        str(devices)
        for devices in (
            [("accel-0", {"memory": "8Gi"}), ("accel-0", {"memory": "8Gi"})],
            [("accel-0", {"memory": "8Gi"})],
            [(f"quarter-{i}", None) for i in range(4)],
            [("quarter-0", None)],
        )
    )
    assert len(share_ids) == 3, "each share of an accelerator has an ID of its own"


TOO_BIG = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: big-share, namespace: default}
spec:
  devices:
    requests:
      - name: accel
        exactly: {deviceClassName: accel.example.com, capacity: {requests: {memory: 20Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: big-model, namespace: default}
spec:
  resourceClaims: [{name: accel, resourceClaimName: big-share}]
  containers:
    - name: app
      image: pause
      resources: {requests: {cpu: "1"}, claims: [{name: accel}]}
"""


def test_a_share_larger_than_any_accelerator_is_the_pods_failed_scheduling(
    simulate: Simulate,
) -> None:
    manifests = example_manifests(EXAMPLE)
    result = simulate(
        manifests.replace("replicas: 3", "replicas: 0").replace("replicas: 5", "replicas: 0")
        + TOO_BIG,
        None,
        "--no-ignore-dra-requests",
        "--provider-option",
        f"kwok.instance-types-file={EXAMPLE / 'catalog.yaml'}",
    )
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    messages = {e["message"] for e in result.events("FailedScheduling")}
    assert NO_INSTANCE_TYPE_FOR_ALLOCATION in messages, messages
