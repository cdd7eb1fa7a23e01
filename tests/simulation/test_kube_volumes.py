"""The embedded cluster's volumes: where claims bind, and how many a node may attach."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.apps import CSINode, StatefulSet, StorageClass
from nodewright.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.scheduling.volumes import BIND_COMPLETED_ANNOTATION, pod_volumes
from nodewright.simulation.kubernetes import EmbeddedKubernetes
from tests.builders import NAMESPACE, deployment, pod_template
from tests.simulation.kube_builders import (
    ZONE,
    node,
    pending_messages,
    per_zone,
    placement,
    pod,
    pods_of,
    settle,
    spread,
    unavailable,
)

EBS = "ebs.csi.aws.com"


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(SimulatedClock(), seed=5)


@pytest.fixture
def kube(cluster: MemoryCluster) -> EmbeddedKubernetes:
    return EmbeddedKubernetes(cluster, SimulatedClock())


def storage_class(
    name: str = "gp3", mode: str = "WaitForFirstConsumer", default: bool = False
) -> StorageClass:
    data: dict[str, Any] = {
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/aws-ebs",  # the in-tree name, counted as the CSI driver
        "volumeBindingMode": mode,
    }
    if default:
        data["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return StorageClass.model_validate(data)


def claim(
    name: str, storage_class: str | None = "gp3", volume: str | None = None
) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume is not None:
        spec["volumeName"] = volume
    return PersistentVolumeClaim.model_validate(
        {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}
    )


def csi_node(name: str, count: int) -> CSINode:
    return CSINode.model_validate(
        {
            "metadata": {"name": name},
            "spec": {"drivers": [{"name": EBS, "nodeID": name, "allocatable": {"count": count}}]},
        }
    )


def claim_volume(claim_name: str, name: str = "data") -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name}}


def facts_of(cluster: MemoryCluster, subject: Pod) -> list[set[str]]:
    """The zones Karpenter's volume facts allow for ``subject``, per alternative."""
    found = pod_volumes(
        subject,
        {c.key: c for c in cluster.list(PersistentVolumeClaim)},
        {v.name: v for v in cluster.list(PersistentVolume)},
        {sc.name: sc for sc in cluster.list(StorageClass)},
    )
    return [set(alternative[ZONE].values) for alternative in found.requirements]


def volume_zone(cluster: MemoryCluster, claim_name: str) -> str:
    bound = cluster.get(PersistentVolumeClaim, claim_name, NAMESPACE)
    assert bound is not None
    assert bound.status.phase == "Bound"
    assert bound.metadata.annotations[BIND_COMPLETED_ANNOTATION] == "yes"
    volume = cluster.get(PersistentVolume, bound.spec.volume_name or "")
    assert volume is not None
    assert volume.spec.node_affinity is not None
    assert volume.spec.node_affinity.required is not None
    (term,) = volume.spec.node_affinity.required.node_selector_terms
    (expression,) = term.match_expressions
    assert (expression.key, expression.operator) == (ZONE, "In")
    (zone,) = expression.values
    return zone


# -- NodeVolumeLimits -----------------------------------------------------------------------------


def test_csi_attach_limit_leaves_a_pod_pending(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class())
    cluster.create(node("n-1", "a", cpu="16"))
    cluster.create(csi_node("n-1", 2))
    for index in range(3):
        cluster.create(claim(f"data-{index}"))
        cluster.create(pod(f"db-{index}", "db", volumes=[claim_volume(f"data-{index}")]))
    settle(kube)
    assert placement(cluster, "db") == {"n-1": 2, None: 1}
    assert pending_messages(cluster, "db") == {unavailable(1, "1 node(s) exceed max volume count")}
    # Another node, without a limit of its own, takes the third.
    cluster.create(node("n-2", "a", cpu="1"))
    settle(kube)
    assert placement(cluster, "db") == {"n-1": 2, "n-2": 1}


def test_a_claim_shared_by_pods_counts_once(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class())
    cluster.create(node("n-1", "a", cpu="16"))
    cluster.create(csi_node("n-1", 1))
    cluster.create(claim("shared"))
    cluster.create(claim("own"))
    for index in range(2):
        cluster.create(pod(f"reader-{index}", "reader", volumes=[claim_volume("shared")]))
    settle(kube)
    assert placement(cluster, "reader") == {"n-1": 2}
    cluster.create(pod("writer", volumes=[claim_volume("own")]))
    settle(kube)
    assert pending_messages(cluster, "writer") == {
        unavailable(1, "1 node(s) exceed max volume count")
    }


def test_limits_are_per_driver(cluster: MemoryCluster, kube: EmbeddedKubernetes) -> None:
    cluster.create(storage_class())
    cluster.create(storage_class("files").model_copy(update={"provisioner": "efs.csi.aws.com"}))
    cluster.create(node("n-1", "a", cpu="16"))
    cluster.create(csi_node("n-1", 1))  # EBS only; EFS declares no limit
    for index in range(2):
        cluster.create(claim(f"block-{index}"))
        cluster.create(claim(f"files-{index}", storage_class="files"))
        cluster.create(pod(f"block-{index}", "block", volumes=[claim_volume(f"block-{index}")]))
        cluster.create(pod(f"files-{index}", "files", volumes=[claim_volume(f"files-{index}")]))
    settle(kube)
    assert placement(cluster, "block") == {"n-1": 1, None: 1}
    assert placement(cluster, "files") == {"n-1": 2}


# -- where claims bind ----------------------------------------------------------------------------


def test_stateful_set_claims_bind_in_the_zones_its_pods_spread_to(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class())
    for zone in "abc":
        cluster.create(node(f"{zone}-1", zone, cpu="16"))
    cluster.create(
        StatefulSet.model_validate(
            {
                "metadata": {"name": "db", "namespace": NAMESPACE},
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "db"}},
                    "template": pod_template(
                        "db", topologySpreadConstraints=[spread(ZONE, 1, "db")]
                    ),
                    "volumeClaimTemplates": [
                        {"metadata": {"name": "data"}, "spec": {"storageClassName": "gp3"}}
                    ],
                },
            }
        )
    )
    settle(kube)
    assert per_zone(cluster, "db") == {"a": 1, "b": 1, "c": 1}
    nodes = {n.name: n.metadata.labels[ZONE] for n in cluster.list(Node)}
    for placed in pods_of(cluster, "db"):
        zone = nodes[placed.spec.node_name or ""]
        assert volume_zone(cluster, f"data-{placed.name}") == zone
        # What Karpenter reads from the bound claim pins the pod to the same zone.
        assert facts_of(cluster, placed) == [{zone}]


def test_pre_bound_claim_completes_binding_and_pins_its_pod(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("a-1", "a"))
    cluster.create(node("c-1", "c"))
    cluster.create(
        PersistentVolume.model_validate(
            {
                "metadata": {"name": "restored"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "csi": {"driver": EBS, "volumeHandle": "vol-1"},
                    "nodeAffinity": {
                        "required": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": ZONE, "operator": "In", "values": ["c"]}
                                    ]
                                }
                            ]
                        }
                    },
                },
            }
        )
    )
    cluster.create(claim("data", storage_class="", volume="restored"))
    cluster.create(pod("db", volumes=[claim_volume("data")]))
    settle(kube)
    assert placement(cluster, "db") == {"c-1": 1}
    assert volume_zone(cluster, "data") == "c"


def test_claim_without_a_class_gets_the_default_class(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class("standard", default=True))
    cluster.create(node("b-1", "b"))
    cluster.create(claim("data", storage_class=None))
    cluster.create(pod("db", volumes=[claim_volume("data")]))
    settle(kube)
    assert placement(cluster, "db") == {"b-1": 1}
    assert volume_zone(cluster, "data") == "b"
    bound = cluster.get(PersistentVolumeClaim, "data", NAMESPACE)
    assert bound is not None
    assert bound.spec.storage_class_name == "standard"


# -- generic ephemeral volumes --------------------------------------------------------------------


def ephemeral(name: str = "scratch", storage_class: str = "gp3") -> dict[str, Any]:
    return {
        "name": name,
        "ephemeral": {
            "volumeClaimTemplate": {
                "metadata": {"labels": {"kind": "scratch"}},
                "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"]},
            }
        },
    }


def test_ephemeral_volume_gets_a_claim_owned_by_its_pod_in_its_nodes_zone(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class())
    cluster.create(node("b-1", "b"))
    cluster.create(deployment("web", 2, volumes=[ephemeral()]))
    settle(kube)
    pods = pods_of(cluster, "web")
    assert {p.spec.node_name for p in pods} == {"b-1"}
    for placed in pods:
        claim_name = f"{placed.name}-scratch"
        owned = cluster.get(PersistentVolumeClaim, claim_name, NAMESPACE)
        assert owned is not None
        (owner,) = owned.metadata.owner_references
        assert (owner.kind, owner.name, owner.uid, owner.controller) == (
            "Pod",
            placed.name,
            placed.metadata.uid,
            True,
        )
        assert owned.metadata.labels == {"kind": "scratch"}
        assert volume_zone(cluster, claim_name) == "b"
    # The claim goes with its pod.
    gone = pods[0]
    cluster.delete(Pod, gone.name, NAMESPACE)
    settle(kube)
    assert cluster.get(PersistentVolumeClaim, f"{gone.name}-scratch", NAMESPACE) is None
    assert len(pods_of(cluster, "web")) == 2


def test_ephemeral_volume_counts_against_the_attach_limit(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class())
    cluster.create(node("n-1", "a", cpu="16"))
    cluster.create(csi_node("n-1", 3))
    cluster.create(deployment("web", 2, volumes=[ephemeral("one"), ephemeral("two")]))
    settle(kube)
    assert placement(cluster, "web") == {"n-1": 1, None: 1}
    assert pending_messages(cluster, "web") == {unavailable(1, "1 node(s) exceed max volume count")}


def test_a_claim_of_the_ephemeral_name_not_owned_by_the_pod_blocks_it(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class())
    cluster.create(node("n-1", "a"))
    cluster.create(claim("web-0-scratch"))
    cluster.create(pod("web-0", "web", volumes=[ephemeral()]))
    settle(kube)
    assert pending_messages(cluster, "web") == {
        unavailable(
            1,
            "PVC default/web-0-scratch was not created for pod default/web-0 (pod is not owner)",
        )
    }
