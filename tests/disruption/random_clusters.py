"""Random clusters for differential tests of disruption: a KWOK cluster dump (a ``v1`` List, as
``simulate --from-dump`` reads one) drawn from a seed.

Each cluster has one to three NodePools (weights, zone and capacity-type restrictions, a
taint, disruption budgets, limits, the three consolidation policies, minValues on instance
types), up to two dozen nodes of random KWOK types carrying the running pods of up to eight
Deployments (zonal and hostname spreads, zonal affinity, hostname anti-affinity, preferred
anti-affinity, node selectors, tolerations), PodDisruptionBudgets, ``karpenter.sh/do-not-disrupt``
pods, a few pods waiting for a node (in some clusters up to a third), and sometimes a node
nodewright does not manage.
"""

from __future__ import annotations

import random
from typing import Any

ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")
CPUS = ("100m", "250m", "500m", "1", "1500m", "3")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
#: KWOK types: family letter, CPUs, GiB per CPU.
TYPES = tuple(
    (family, cpu, gib) for family, gib in (("c", 2), ("s", 4), ("m", 8)) for cpu in (1, 2, 4, 8, 16)
)
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
STARTED = "2026-11-20T09:01:00Z"


def _meta(name: str, namespace: str | None = None, **more: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(more)
    return meta


def _pool(rng: random.Random, index: int) -> dict[str, Any]:
    name = f"pool-{index}"
    requirements: list[dict[str, Any]] = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    ]
    if rng.random() < 0.4:
        zones = sorted(rng.sample(ZONES, rng.randint(1, 3)))
        requirements.append(
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": zones}
        )
    capacity = rng.choice((["on-demand"], ["spot", "on-demand"], ["spot"]))
    requirements.append({"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity})
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "requirements": requirements,
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
            }
        },
        "disruption": {
            "consolidationPolicy": rng.choice(
                ("WhenEmptyOrUnderutilized",) * 4 + ("WhenEmpty", "Balanced")
            ),
            "consolidateAfter": "0s",
            "budgets": [{"nodes": rng.choice(("10%", "1", "2", "50%", "100%", "0"))}],
        },
        "weight": rng.choice((None, 10, 50)),
    }
    if spec["weight"] is None:
        del spec["weight"]
    if index > 0 and rng.random() < 0.3:
        spec["template"]["spec"]["taints"] = [TAINT]
    if rng.random() < 0.2:
        spec["limits"] = {"cpu": str(rng.choice((16, 64, 400)))}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": _meta(name),
        "spec": spec,
    }


def _node(rng: random.Random, index: int, pool: dict[str, Any] | None) -> dict[str, Any]:
    family, cpu, gib = rng.choice(TYPES)
    name = f"node-{index:02d}"
    instance_type = f"{family}-{cpu}x-amd64-linux"
    zone = rng.choice(ZONES)
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": zone,
    }
    spec: dict[str, Any] = {}
    if pool is not None:
        requirements = pool["spec"]["template"]["spec"]["requirements"]
        capacity = next(
            r["values"] for r in requirements if r["key"] == "karpenter.sh/capacity-type"
        )
        labels.update(
            {
                "karpenter.sh/nodepool": pool["metadata"]["name"],
                "karpenter.sh/capacity-type": rng.choice(capacity),
                "karpenter.sh/initialized": "true",
                "karpenter.sh/registered": "true",
                "karpenter.kwok.sh/kwoknodeclass": "default",
            }
        )
        spec["providerID"] = f"kwok://{name}"
        if pool["spec"]["template"]["spec"].get("taints"):
            spec["taints"] = [TAINT]
    memory = cpu * gib * 1024
    annotations = {}
    if rng.random() < 0.05:
        annotations["karpenter.sh/do-not-disrupt"] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(name, labels=labels, annotations=annotations),
        "spec": spec,
        "status": {
            "capacity": {"cpu": str(cpu), "memory": f"{memory}Mi", "pods": str(16 * cpu)},
            "allocatable": {
                "cpu": f"{cpu * 1000 - 100}m",
                "memory": f"{memory - 10}Mi",
                "pods": str(16 * cpu),
            },
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def _constraint(rng: random.Random, name: str) -> dict[str, Any]:
    selector = {"matchLabels": {"app": name}}
    kind = rng.choice(
        (
            "none",
            "none",
            "zone-spread",
            "host-spread",
            "zone-affinity",
            "host-anti",
            "preferred-anti",
            "selector",
            "anyway",
        )
    )
    if kind in ("zone-spread", "host-spread", "anyway"):
        key = "kubernetes.io/hostname" if kind == "host-spread" else "topology.kubernetes.io/zone"
        return {
            "topologySpreadConstraints": [
                {
                    "maxSkew": rng.choice((1, 2)),
                    "topologyKey": key,
                    "whenUnsatisfiable": "ScheduleAnyway" if kind == "anyway" else "DoNotSchedule",
                    "labelSelector": selector,
                }
            ]
        }
    if kind == "zone-affinity":
        term = {"labelSelector": selector, "topologyKey": "topology.kubernetes.io/zone"}
        return {
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        }
    if kind == "host-anti":
        term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
        return {
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        }
    if kind == "preferred-anti":
        term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
        preferred = [{"weight": 10, "podAffinityTerm": term}]
        return {
            "affinity": {
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
            }
        }
    if kind == "selector":
        return {"nodeSelector": {"topology.kubernetes.io/zone": rng.choice(ZONES)}}
    return {}


def _pod(
    name: str,
    spec: dict[str, Any],
    labels: dict[str, str],
    owner: str,
    where: tuple[str | None, dict[str, str]],
) -> dict[str, Any]:
    """A pod of ReplicaSet ``owner``; ``where`` is its node (None: pending) and annotations."""
    node, annotations = where
    pod_spec = dict(spec)
    status: dict[str, Any]
    if node is not None:
        pod_spec["nodeName"] = node
        status = {
            "phase": "Running",
            "startTime": STARTED,
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        }
    else:
        status = {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }
    owner_ref = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": owner,
        "uid": f"uid-{owner}",
        "controller": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            name, "default", labels=labels, ownerReferences=[owner_ref], annotations=annotations
        ),
        "spec": pod_spec,
        "status": status,
    }


def _millis(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)


def cluster(seed: int) -> dict[str, Any]:
    """The dump of cluster number ``seed``."""
    rng = random.Random(seed)
    pools = [_pool(rng, i) for i in range(rng.randint(1, 3))]
    items: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("default")},
        {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": _meta("default"),
        },
        *pools,
    ]
    nodes = [
        _node(rng, i, None if rng.random() < 0.08 else rng.choice(pools))
        for i in range(rng.randint(2, 24))
    ]
    items.extend(nodes)
    room = [_millis(n["status"]["allocatable"]["cpu"]) for n in nodes]
    for index in range(rng.randint(1, 8)):
        name = f"app-{index}"
        cpu, memory = rng.choice(CPUS), rng.choice(MEMORIES)
        spec: dict[str, Any] = {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **_constraint(rng, name),
        }
        if rng.random() < 0.3:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        replicas = rng.randint(1, 12)
        owner = f"{name}-6b7f9c8d5"
        labels = {"app": name, "pod-template-hash": "6b7f9c8d5"}
        items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": _meta(
                    name, "default", annotations={"deployment.kubernetes.io/revision": "1"}
                ),
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
                },
            }
        )
        items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": _meta(
                    owner,
                    "default",
                    labels=labels,
                    annotations={"deployment.kubernetes.io/revision": "1"},
                    ownerReferences=[
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": name,
                            "uid": f"uid-{name}",
                            "controller": True,
                        }
                    ],
                ),
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": spec},
                },
            }
        )
        millis = _millis(cpu)
        for replica in range(replicas):
            roomy = [i for i, left in enumerate(room) if left >= millis]
            if rng.random() < 0.06 or not roomy:
                node = None
            else:
                target = rng.choice(roomy) if rng.random() < 0.9 else rng.randrange(len(nodes))
                room[target] -= millis
                node = nodes[target]["metadata"]["name"]
            annotations = {}
            if rng.random() < 0.04:
                annotations["karpenter.sh/do-not-disrupt"] = "true"
            items.append(_pod(f"{owner}-{replica:03d}", spec, labels, owner, (node, annotations)))
        if rng.random() < 0.3:
            items.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": _meta(name, "default"),
                    "spec": {
                        "maxUnavailable": rng.choice((0, 1)),
                        "selector": {"matchLabels": {"app": name}},
                    },
                }
            )
    _vary(random.Random(f"more-{seed}"), items)
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _vary(rng: random.Random, items: list[dict[str, Any]]) -> None:
    """Drawn apart from the rest, so the clusters stay what they were: a minValues on some
    NodePools' instance types, and in some clusters a share of the pods waiting for a node."""
    for item in items:
        if item["kind"] == "NodePool" and rng.random() < 0.3:
            item["spec"]["template"]["spec"]["requirements"].append(
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "Exists",
                    "minValues": rng.randint(2, 4),
                }
            )
    if rng.random() < 0.4:
        share = rng.choice((0.1, 0.3))
        for item in items:
            if item["kind"] == "Pod" and "nodeName" in item["spec"] and rng.random() < share:
                del item["spec"]["nodeName"]
                item["status"] = {
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                    ],
                }
