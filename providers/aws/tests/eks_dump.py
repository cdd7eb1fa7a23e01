"""A ``kubectl get ... -A -o yaml`` dump of a small EKS cluster run by Karpenter, as the API
server lists it: server fields (uids, resourceVersions, managedFields), defaulted specs,
the pod-template-hash, controller-revision-hash and pod-template-generation values
kube-controller-manager wrote, pods with what admission injected (the service account token
volume, the not-ready and unreachable tolerations), and an EC2NodeClass whose status lists
the subnets Karpenter resolved.

The cluster (by default): 30 on-demand m5/c5/r5 nodes of one NodePool in three zones of
us-east-1 (the region has six), each with a NodeClaim; two nodes of an EKS managed node
group nodewright does not manage; four Deployments (300 pods), a StatefulSet, two
DaemonSets, a PodDisruptionBudget.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from providers.aws.tests.eks_objects import CREATED, object_metadata, suffix, uid
from providers.aws.tests.eks_workloads import (
    DAEMONSET_HASHES,
    daemon_set,
    deployments,
    stateful_set,
)
from tests.bench_modules import load_bench

#: The Karpenter labels of a node by instance type: one set for this dump and the
#: benchmarks' (``bench/whatif_dump.py``).
_karpenter_labels: Callable[[str], dict[str, str]] = load_bench("whatif_dump").karpenter_labels

REGION = "us-east-1"
#: The zones of the EC2NodeClass's subnets; us-east-1d, e and f are in the region too.
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
SUBNETS = {
    "us-east-1a": ("subnet-0a1b2c3d4e5f60001", "use1-az1"),
    "us-east-1b": ("subnet-0a1b2c3d4e5f60002", "use1-az2"),
    "us-east-1c": ("subnet-0a1b2c3d4e5f60003", "use1-az4"),
}
CLUSTER = "shop"
NODE_TYPES = {
    "m5.xlarge": ("4", "15896084Ki", "14162Mi", "58"),
    "c5.xlarge": ("4", "7792572Ki", "6758Mi", "58"),
    "r5.xlarge": ("4", "32114228Ki", "30074Mi", "58"),
    "m5.large": ("2", "7910916Ki", "6904Mi", "29"),
}


def _node_name(index: int) -> str:
    return f"ip-10-0-{index // 200}-{10 + index % 200}.ec2.internal"


def _node(
    name: str, instance_type: str, zone: str, labels: dict[str, str], instance: str
) -> dict[str, Any]:
    cpu, memory, allocatable_memory, pods = NODE_TYPES[instance_type]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": object_metadata(
            "Node",
            name,
            namespace=None,
            labels={
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": instance_type,
                "topology.kubernetes.io/region": REGION,
                "topology.kubernetes.io/zone": zone,
                "topology.k8s.aws/zone-id": SUBNETS[zone][1],
                **labels,
            },
        ),
        "spec": {"providerID": f"aws:///{zone}/{instance}"},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
            "allocatable": {
                "cpu": f"{int(cpu) * 1000 - 80}m",
                "memory": allocatable_memory,
                "pods": pods,
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": CREATED,
                    "lastTransitionTime": CREATED,
                }
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": uid(f"boot/{name}"),
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.130-139.222.amzn2023.x86_64",
                "kubeProxyVersion": "v1.32.3-eks-473151a",
                "kubeletVersion": "v1.32.3-eks-473151a",
                "machineID": hashlib.sha256(name.encode()).hexdigest()[:32],
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250414",
                "systemUUID": uid(f"system/{name}"),
            },
        },
    }


def _node_claim(name: str, node: dict[str, Any]) -> dict[str, Any]:
    labels = node["metadata"]["labels"]
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": object_metadata(
            "NodeClaim",
            name,
            namespace=None,
            labels={k: v for k, v in labels.items() if k != "kubernetes.io/hostname"},
            annotations={
                "karpenter.sh/nodepool-hash": "14392853185766043327",
                "karpenter.sh/nodepool-hash-version": "v3",
                "karpenter.k8s.aws/ec2nodeclass-hash": "6820553453516591063",
                "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
            },
            finalizers=["karpenter.sh/termination"],
            ownerReferences=[
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "name": "default",
                    "uid": uid("NodePool/None/default"),
                    "blockOwnerDeletion": True,
                }
            ],
        ),
        "spec": {
            "expireAfter": "720h",
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": [labels["node.kubernetes.io/instance-type"]],
                },
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
            ],
            "resources": {"requests": {"cpu": "1", "pods": "8"}},
        },
        "status": {
            "nodeName": node["metadata"]["name"],
            "providerID": node["spec"]["providerID"],
            "imageID": "ami-0f1e2d3c4b5a69788",
            "capacity": node["status"]["capacity"],
            "allocatable": node["status"]["allocatable"],
            "conditions": [
                {
                    "type": kind,
                    "status": "True",
                    "reason": kind,
                    "message": "",
                    "lastTransitionTime": CREATED,
                }
                for kind in ("Launched", "Registered", "Initialized", "Ready")
            ],
        },
    }


def _node_class() -> dict[str, Any]:
    discovery = {"karpenter.sh/discovery": CLUSTER}
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": object_metadata(
            "EC2NodeClass",
            "default",
            namespace=None,
            annotations={
                "karpenter.k8s.aws/ec2nodeclass-hash": "6820553453516591063",
                "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
            },
            finalizers=["karpenter.k8s.aws/termination"],
        ),
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": f"KarpenterNodeRole-{CLUSTER}",
            "subnetSelectorTerms": [{"tags": discovery}],
            "securityGroupSelectorTerms": [{"tags": discovery}],
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "required",
            },
        },
        "status": {
            "subnets": [
                {"id": subnet, "zone": zone, "zoneID": zone_id}
                for zone, (subnet, zone_id) in SUBNETS.items()
            ],
            "securityGroups": [{"id": "sg-0123456789abcdef0", "name": "eks-cluster-sg-shop"}],
            "amis": [
                {
                    "id": "ami-0f1e2d3c4b5a69788",
                    "name": "amazon-eks-node-al2023-x86_64-standard-1.32-v20260215",
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                    ],
                }
            ],
            "instanceProfile": f"{CLUSTER}_1234567890",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ready",
                    "message": "",
                    "lastTransitionTime": CREATED,
                }
            ],
        },
    }


def _node_pool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": object_metadata(
            "NodePool",
            "default",
            namespace=None,
            annotations={
                "karpenter.sh/nodepool-hash": "14392853185766043327",
                "karpenter.sh/nodepool-hash-version": "v3",
            },
        ),
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "expireAfter": "720h",
                    "requirements": [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["spot", "on-demand"],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-category",
                            "operator": "In",
                            "values": ["c", "m", "r"],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-generation",
                            "operator": "Gt",
                            "values": ["4"],
                        },
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ],
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "1m",
                "budgets": [{"nodes": "10%"}],
            },
            "limits": {"cpu": "1000"},
        },
        "status": {"resources": {"cpu": "120", "nodes": "30"}},
    }


def eks_dump(
    nodes: int = 30,
    capacity_types: tuple[str, ...] = ("spot", "on-demand"),
    *,
    share: float = 1.0,
    spread: bool = True,
) -> dict[str, Any]:
    """The dump as one ``v1`` List: ``nodes`` Karpenter nodes, the Deployments' replicas
    times ``share``, their pods spread over zones (``ScheduleAnyway``) when ``spread``;
    ``capacity_types`` are those the NodePool allows."""
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": object_metadata("Namespace", "default", namespace=None),
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        },
        _node_class(),
    ]
    pool = _node_pool()
    pool["spec"]["template"]["spec"]["requirements"][0]["values"] = list(capacity_types)
    items.append(pool)
    managed: list[str] = []
    types = ("m5.xlarge", "c5.xlarge", "r5.xlarge")
    for index in range(nodes):
        name = _node_name(index)
        instance_type, zone = types[index % 3], ZONES[index % 3]
        node = _node(
            name,
            instance_type,
            zone,
            _karpenter_labels(instance_type),
            f"i-0{hashlib.sha256(name.encode()).hexdigest()[:16]}",
        )
        items.append(_node_claim(f"default-{suffix(name)}", node))
        items.append(node)
        managed.append(name)
    system: list[str] = []
    for index, zone in enumerate(ZONES[:2]):
        name = _node_name(900 + index)
        items.append(
            _node(
                name,
                "m5.large",
                zone,
                {
                    "eks.amazonaws.com/nodegroup": "system",
                    "eks.amazonaws.com/capacityType": "ON_DEMAND",
                    "eks.amazonaws.com/nodegroup-image": "ami-0aa1bb2cc3dd4ee5f",
                },
                f"i-0{hashlib.sha256(name.encode()).hexdigest()[:16]}",
            )
        )
        system.append(name)
    items.extend(deployments(managed, share, spread))
    items.extend(stateful_set(managed))
    for daemon in DAEMONSET_HASHES:
        items.extend(daemon_set(daemon, [*managed, *system]))
    items.append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": object_metadata("PodDisruptionBudget", "web"),
            "spec": {"maxUnavailable": "10%", "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
