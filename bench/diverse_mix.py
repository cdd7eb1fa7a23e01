"""Manifests of the end-to-end consolidation cases (issues 26 and 32), as ``simulate`` reads them.

``diverse(scale)``: one KWOK NodePool over three zones (``WhenEmptyOrUnderutilized``,
``consolidateAfter: 0s``) and forty Deployments ``d0`` .. ``d39``. ``random.Random(7)`` draws
each one's CPU request, then its memory. By ``i % 5`` a Deployment has no constraint; a zonal
topology spread (maxSkew 1, DoNotSchedule) on its own label; the same on the hostname;
required zonal pod affinity to its own label; required hostname anti-affinity to its own
label. Replicas: 50 each (10 for anti-affinity), times ``scale``: 1,680 pods at scale 1,
5,040 at 3, 20,160 at 12.

``anti_affinity(count)`` and ``hostname_spread(count)``: one Deployment of ``count`` pods with
required hostname anti-affinity, or a DoNotSchedule hostname spread, to its own label.
"""

from __future__ import annotations

import random
from typing import Any

CPUS = ("100m", "250m", "500m", "1", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")
ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "requirements": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["spot", "on-demand"],
                    },
                    {"key": ZONE_KEY, "operator": "In", "values": list(ZONES)},
                ],
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
            }
        },
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "0s",
        },
    },
}
NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "default"},
}


def _selector(name: str) -> dict[str, Any]:
    return {"matchLabels": {"app": name}}


def _spread(name: str, key: str) -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": _selector(name),
            }
        ]
    }


def _affinity(name: str, kind: str, key: str) -> dict[str, Any]:
    term = {"labelSelector": _selector(name), "topologyKey": key}
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def deployment(
    name: str, replicas: int, cpu: str, memory: str, constraint: dict[str, Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    spec.update(constraint or {})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": _selector(name),
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def constraint(index: int, name: str) -> dict[str, Any] | None:
    """The constraint Deployment ``d<index>`` carries, by ``index % 5``."""
    kind = index % 5
    if kind == 1:
        return _spread(name, ZONE_KEY)
    if kind == 2:
        return _spread(name, HOSTNAME_KEY)
    if kind == 3:
        return _affinity(name, "podAffinity", ZONE_KEY)
    if kind == 4:
        return _affinity(name, "podAntiAffinity", HOSTNAME_KEY)
    return None


def diverse(scale: int) -> list[dict[str, Any]]:
    """The NodePool, its NodeClass and the forty Deployments at ``scale`` (1: 1,680 pods)."""
    rng = random.Random(7)
    objects: list[dict[str, Any]] = [NODEPOOL, NODECLASS]
    for index in range(40):
        name = f"d{index}"
        cpu = rng.choice(CPUS)
        memory = rng.choice(MEMORIES)
        replicas = (10 if index % 5 == 4 else 50) * scale
        objects.append(deployment(name, replicas, cpu, memory, constraint(index, name)))
    return objects


def diverse_pods(scale: int) -> int:
    return 40 // 5 * (4 * 50 + 10) * scale


def anti_affinity(count: int) -> list[dict[str, Any]]:
    name = "anti"
    return [
        NODEPOOL,
        NODECLASS,
        deployment(name, count, "100m", "128Mi", _affinity(name, "podAntiAffinity", HOSTNAME_KEY)),
    ]


def hostname_spread(count: int) -> list[dict[str, Any]]:
    name = "spread"
    return [
        NODEPOOL,
        NODECLASS,
        deployment(name, count, "250m", "256Mi", _spread(name, HOSTNAME_KEY)),
    ]
