"""The embedded Kubernetes with DRA: daemon pods with claims, placed by the scheduler on
their own node's devices, and node affinity by the node's name."""

from __future__ import annotations

from nodewright.api.core import Node, Pod
from nodewright.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from nodewright.cluster.memory import MemoryCluster
from nodewright.simulation.kubernetes import EmbeddedKubernetes
from tests.builders import NAMESPACE
from tests.simulation.kube_builders import (
    daemon_set,
    node,
    pod,
    pods_of,
    scheduled_message,
    settle,
)


def _gpu_world(cluster: MemoryCluster) -> None:
    """A one-GPU node whose driver published its device, a node without, and a claim
    template for one GPU."""
    cluster.create(node("gpu-1"))
    cluster.create(node("plain-1"))
    cluster.create(
        ResourceSlice.model_validate(
            {
                "metadata": {"name": "gpu-1-gpus"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": "gpu-1",
                    "pool": {"name": "gpu-1", "generation": 0, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}],
                },
            }
        )
    )
    cluster.create(
        DeviceClass.model_validate(
            {
                "metadata": {"name": "gpu"},
                "spec": {
                    "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]
                },
            }
        )
    )
    one_gpu = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
    cluster.create(
        ResourceClaimTemplate.model_validate(
            {"metadata": {"name": "one-gpu", "namespace": NAMESPACE}, "spec": {"spec": one_gpu}}
        )
    )


def test_daemon_pods_with_claims_get_their_nodes_devices_from_the_scheduler(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    _gpu_world(cluster)
    cluster.create(
        daemon_set(
            "agent", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        )
    )
    settle(kube)
    agents = pods_of(cluster, "agent")
    assert len(agents) == 2
    claims = {c.name: c for c in cluster.list(ResourceClaim)}
    assert len(claims) == 2, "a claim of its own for each daemon pod"
    (running,) = [p for p in agents if p.spec.node_name]
    (waiting,) = [p for p in agents if not p.spec.node_name]
    assert running.spec.node_name == "gpu-1"
    assert running.status.phase == "Running"
    (status,) = running.status.resource_claim_statuses or []
    allocation = claims[status.resource_claim_name or ""].status.allocation
    assert allocation is not None
    assert [(r.pool, r.device) for r in allocation.devices.results] == [("gpu-1", "gpu-0")]
    assert scheduled_message(waiting) == (
        "0/2 nodes are available: 1 cannot allocate all claims, 1 node(s) didn't match Pod's "
        "node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not "
        "helpful for scheduling."
    )
    # The waiting pod belongs to its node: it goes with it, and is not made again.
    cluster.delete(Node, "plain-1")
    settle(kube)
    assert [p.name for p in pods_of(cluster, "agent")] == [running.name]


def test_a_pod_pinned_by_node_name_field_binds_only_there(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("a"))
    cluster.create(node("b"))
    pinned = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    cluster.create(pod("to-b", affinity=pinned))
    cluster.create(
        pod(
            "to-c",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": ["c"]}
                                ]
                            }
                        ]
                    }
                }
            },
        )
    )
    settle(kube)
    placed = {p.name: p for p in cluster.list(Pod)}
    assert placed["to-b"].spec.node_name == "b"
    assert scheduled_message(placed["to-c"]) == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
