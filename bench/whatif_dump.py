"""A generated EKS cluster dump for ``nodewright simulate --from-dump`` (the what-if).

    uv run --all-packages python bench/whatif_dump.py --nodes 30 --pods 300 -o dump.yaml
    uv run --all-packages nodewright simulate --from-dump dump.yaml \\
        --provider-option aws.offline=us-east-1

What a ``kubectl get nodes,pods,... -A -o yaml`` of a small EKS cluster run by Karpenter looks
like: an EC2NodeClass and one NodePool (on-demand and spot, categories c, m and r), ``nodes``
Karpenter nodes of the m5, c5 and r5 families (large to 2xlarge, three zones of us-east-1, no
NodeClaims: the loader makes them, as for a cluster whose NodeClaims were not dumped), each
running the pods of two DaemonSets, and four Deployments (``web``, ``api``, ``worker``,
``cache``) sharing the rest of the ``pods`` (DaemonSet pods included) with a
PodDisruptionBudget over ``api``. Nodes are thinly used: Deployment pods are spread over them
at random (``random.Random(seed)``) so that no node is more than about half full, which leaves
consolidation plenty to do. The same arguments give the same dump.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

import yaml

REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
CREATED = "2026-11-20T09:00:00Z"
STARTED = "2026-11-20T09:01:00Z"
#: type -> (vCPUs, memory MiB, allocatable CPU millis, allocatable memory MiB, max pods), as
#: EKS reports them for these types on AL2023.
TYPES: dict[str, tuple[int, int, int, int, int]] = {
    "m5.large": (2, 8192, 1930, 7134, 29),
    "m5.xlarge": (4, 16384, 3920, 14926, 58),
    "m5.2xlarge": (8, 32768, 7910, 30574, 58),
    "c5.large": (2, 4096, 1930, 3262, 29),
    "c5.xlarge": (4, 8192, 3920, 6903, 58),
    "c5.2xlarge": (8, 16384, 7910, 14650, 58),
    "r5.large": (2, 16384, 1930, 14926, 29),
    "r5.xlarge": (4, 32768, 3920, 30574, 58),
    "r5.2xlarge": (8, 65536, 7910, 61847, 58),
}
#: name -> (CPU millis, memory MiB) per replica, and the share of the Deployment pods.
DEPLOYMENTS: dict[str, tuple[int, int, float]] = {
    "web": (250, 512, 0.4),
    "api": (500, 1024, 0.3),
    "worker": (1000, 2048, 0.2),
    "cache": (250, 2048, 0.1),
}
#: name -> (CPU millis, memory MiB) per node.
DAEMONSETS: dict[str, tuple[int, int]] = {"kube-proxy": (100, 128), "node-exporter": (50, 64)}
#: A node takes Deployment pods until this share of its CPU or memory is requested.
THIN = 0.5


def object_meta(
    name: str,
    namespace: str | None = None,
    *,
    created: str = CREATED,
    resource_version: str | None = "1000",
    **more: Any,
) -> dict[str, Any]:
    """An object's metadata as a dump holds it: a uid made from its name, its creation time
    and (unless None) a resourceVersion; ``more`` adds fields."""
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    meta["creationTimestamp"] = created
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(more)
    return meta


def owner(kind: str, name: str, api: str = "apps/v1") -> dict[str, Any]:
    """The controller reference a workload controller sets, to ``name``'s made-up uid."""
    return {
        "apiVersion": api,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _container(cpu: int, memory: int) -> dict[str, Any]:
    return {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}},
    }


def _pod_template(name: str, cpu: int, memory: int) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [_container(cpu, memory)]},
    }


def node_class() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": object_meta("default"),
        "spec": {
            "role": "KarpenterNodeRole-bench",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
        },
    }


def node_pool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": object_meta("default"),
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand", "spot"],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-category",
                            "operator": "In",
                            "values": ["c", "m", "r"],
                        },
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ],
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
            },
        },
    }


def karpenter_labels(instance_type: str) -> dict[str, str]:
    """The labels Karpenter (and its AWS provider) put on an on-demand node of the
    ``default`` NodePool and EC2NodeClass, beside the well-known ones. The EKS dump of the AWS
    provider's tests (``providers/aws/tests/eks_dump.py``) labels its nodes with these too."""
    family, size = instance_type.split(".")
    return {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.sh/initialized": "true",
        "karpenter.sh/registered": "true",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "karpenter.k8s.aws/instance-category": family[0],
        "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-generation": family[1:],
        "karpenter.k8s.aws/instance-size": size,
    }


def node(index: int, instance_type: str, zone: str) -> dict[str, Any]:
    cpus, memory, cpu_alloc, memory_alloc, pods = TYPES[instance_type]
    name = f"ip-10-0-{index // 250}-{index % 250 + 4}.ec2.internal"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": object_meta(
            name,
            labels={
                **karpenter_labels(instance_type),
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": instance_type,
                "topology.kubernetes.io/region": REGION,
                "topology.kubernetes.io/zone": zone,
            },
        ),
        "spec": {"providerID": f"aws:///{zone}/i-{index:017x}"},
        "status": {
            "capacity": {"cpu": str(cpus), "memory": f"{memory}Mi", "pods": str(pods)},
            "allocatable": {
                "cpu": f"{cpu_alloc}m",
                "memory": f"{memory_alloc}Mi",
                "pods": str(pods),
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastTransitionTime": CREATED,
                }
            ],
        },
    }


def pod(
    name: str,
    node_name: str,
    requests: tuple[int, int],
    owner: dict[str, Any],
    labels: dict[str, str],
) -> dict[str, Any]:
    cpu, memory = requests
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": object_meta(name, "default", labels=labels, ownerReferences=[owner]),
        "spec": {"nodeName": node_name, "containers": [_container(cpu, memory)]},
        "status": {
            "phase": "Running",
            "startTime": STARTED,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": STARTED},
                {"type": "Ready", "status": "True", "lastTransitionTime": STARTED},
            ],
        },
    }


def dump(nodes: int, pods: int, seed: int = 1) -> dict[str, Any]:
    """The dump as a ``v1`` List: ``nodes`` nodes, ``pods`` pods in all."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": object_meta("default")},
        node_class(),
        node_pool(),
    ]
    made = [node(i, rng.choice(sorted(TYPES)), ZONES[i % len(ZONES)]) for i in range(nodes)]
    items.extend(made)
    # room[i] = CPU millis and memory MiB node i may still take while staying thin
    room = []
    for each in made:
        _, _, cpu_alloc, memory_alloc, _ = TYPES[each["metadata"]["labels"][_TYPE_LABEL]]
        room.append([cpu_alloc * THIN, memory_alloc * THIN])
    daemon_pods = 0
    for name, (cpu, memory) in DAEMONSETS.items():
        items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": object_meta(name, "default"),
                "spec": {
                    "selector": {"matchLabels": {"app": name}},
                    "template": _pod_template(name, cpu, memory),
                },
            }
        )
        for index, each in enumerate(made):
            items.append(
                pod(
                    f"{name}-{index:05d}",
                    each["metadata"]["name"],
                    (cpu, memory),
                    owner("DaemonSet", name),
                    {"app": name},
                )
            )
            daemon_pods += 1
    left = max(pods - daemon_pods, 0)
    counts = {name: int(left * share) for name, (_, _, share) in DEPLOYMENTS.items()}
    counts["web"] += left - sum(counts.values())
    for name, (cpu, memory, _) in DEPLOYMENTS.items():
        replica_set = f"{name}-5d8f7c9b6"
        template = _pod_template(name, cpu, memory)
        template["metadata"]["labels"]["pod-template-hash"] = "5d8f7c9b6"
        items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": object_meta(
                    name, "default", annotations={"deployment.kubernetes.io/revision": "1"}
                ),
                "spec": {
                    "replicas": counts[name],
                    "selector": {"matchLabels": {"app": name}},
                    "template": _pod_template(name, cpu, memory),
                },
            }
        )
        items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": object_meta(
                    replica_set,
                    "default",
                    labels=template["metadata"]["labels"],
                    annotations={"deployment.kubernetes.io/revision": "1"},
                    ownerReferences=[owner("Deployment", name)],
                ),
                "spec": {
                    "replicas": counts[name],
                    "selector": {"matchLabels": template["metadata"]["labels"]},
                    "template": template,
                },
            }
        )
        for replica in range(counts[name]):
            fits = [i for i, (c, m) in enumerate(room) if c >= cpu and m >= memory]
            target = rng.choice(fits) if fits else rng.randrange(len(made))
            room[target][0] -= cpu
            room[target][1] -= memory
            items.append(
                pod(
                    f"{replica_set}-{replica:05d}",
                    made[target]["metadata"]["name"],
                    (cpu, memory),
                    owner("ReplicaSet", replica_set),
                    dict(template["metadata"]["labels"]),
                )
            )
    items.append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": object_meta("api", "default"),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "api"}}},
        }
    )
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


_TYPE_LABEL = "node.kubernetes.io/instance-type"


def write(path: Path, nodes: int, pods: int, seed: int = 1) -> None:
    """Write the dump, as JSON when ``path`` ends in ``.json`` (faster to load), else YAML."""
    document = dump(nodes, pods, seed)
    if path.suffix == ".json":
        path.write_text(json.dumps(document))
    else:
        path.write_text(yaml.safe_dump(document, sort_keys=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=30)
    parser.add_argument("--pods", type=int, default=300, help="pods in all, DaemonSets' included")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", type=Path, required=True, help=".yaml or .json")
    args = parser.parse_args(argv)
    write(args.output, args.nodes, args.pods, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
