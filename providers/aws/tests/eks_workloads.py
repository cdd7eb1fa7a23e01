"""The workloads of the EKS dump (:mod:`providers.aws.tests.eks_dump`): Deployments with
their ReplicaSets (a current one named by the pod-template-hash the real cluster computed, and a
retired one), a StatefulSet and DaemonSets with their controller-revision-hash values, and the
pods as the API server lists them, with what admission added."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from providers.aws.tests.eks_objects import CREATED, controller_owner, object_metadata, suffix


@dataclass(frozen=True)
class Workload:
    name: str
    replicas: int
    cpu: str
    memory: str
    #: The pod-template-hash of its current ReplicaSet, as a real cluster wrote it.
    template_hash: str


#: The Deployments, with the pod-template-hash each ReplicaSet carries in the real cluster.
DEPLOYMENTS = (
    Workload("web", 120, "100m", "256Mi", "7c5ddbdf54"),
    Workload("api", 80, "250m", "512Mi", "6fnrn4lpg4"),
    Workload("worker", 60, "500m", "1Gi", "85b9d6cf7d"),
    Workload("cache", 40, "200m", "1Gi", "5d4f8b9c6x"),
)
#: A retired ReplicaSet of ``web`` (an older template, scaled to 0), as rollouts leave them.
OLD_WEB_HASH = "54c8b7f9d6"
STATEFULSET_REVISION = "db-6b9f7c8d5f"
DAEMONSET_HASHES = {"node-agent": "6c8f9b5d47", "log-shipper": "78d5b4c9f6"}


def _container(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/{name}:1.4.2",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def _template(
    labels: dict[str, str], cpu: str, memory: str, name: str, *, spread: bool = True
) -> dict[str, Any]:
    """A pod template as the API server returns it: every defaulted field written."""
    template: dict[str, Any] = {
        "metadata": {"labels": dict(labels)},
        "spec": {
            "containers": [_container(name, cpu, memory)],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": labels["app"]}},
                }
            ],
        },
    }
    if not spread:
        del template["spec"]["topologySpreadConstraints"]
    return template


def _pod(
    name: str,
    template: dict[str, Any],
    owner: dict[str, Any],
    *,
    node: str,
    extra_labels: dict[str, str],
    generate_name: str | None,
) -> dict[str, Any]:
    """A running pod from ``template`` as the server lists it, admission's additions included."""
    spec = {
        **template["spec"],
        "nodeName": node,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "tolerations": [
            *template["spec"].get("tolerations", []),
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
        ],
        "volumes": [
            {
                "name": f"kube-api-access-{suffix(name)}",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                    ],
                },
            }
        ],
    }
    container = dict(spec["containers"][0])
    container["volumeMounts"] = [
        {
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "name": f"kube-api-access-{suffix(name)}",
            "readOnly": True,
        }
    ]
    spec["containers"] = [container]
    metadata = object_metadata(
        "Pod",
        name,
        labels={**template["metadata"]["labels"], **extra_labels},
        ownerReferences=[owner],
    )
    if generate_name:
        metadata["generateName"] = generate_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {
            "phase": "Running",
            "qosClass": "Burstable",
            "hostIP": "10.0.1.10",
            "podIP": "10.0.1.200",
            "startTime": CREATED,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": CREATED},
                {"type": "Initialized", "status": "True", "lastTransitionTime": CREATED},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": CREATED},
                {"type": "Ready", "status": "True", "lastTransitionTime": CREATED},
            ],
        },
    }


def deployments(nodes: list[str], share: float, spread: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    slot = 0
    for each in DEPLOYMENTS:
        workload = replace(each, replicas=max(1, round(each.replicas * share)))
        labels = {"app": workload.name}
        template = _template(labels, workload.cpu, workload.memory, workload.name, spread=spread)
        items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": object_metadata(
                    "Deployment",
                    workload.name,
                    generation=3,
                    annotations={"deployment.kubernetes.io/revision": "2"},
                ),
                "spec": {
                    "replicas": workload.replicas,
                    "progressDeadlineSeconds": 600,
                    "revisionHistoryLimit": 10,
                    "selector": {"matchLabels": labels},
                    "strategy": {
                        "type": "RollingUpdate",
                        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                    },
                    "template": template,
                },
            }
        )
        hashes = [workload.template_hash]
        if workload.name == "web":
            hashes.append(OLD_WEB_HASH)
        for template_hash in hashes:
            current = template_hash == workload.template_hash
            rs_name = f"{workload.name}-{template_hash}"
            rs_template = _template(
                {**labels, "pod-template-hash": template_hash},
                workload.cpu,
                workload.memory if current else "128Mi",
                workload.name,
                spread=spread,
            )
            items.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": object_metadata(
                        "ReplicaSet",
                        rs_name,
                        labels={**labels, "pod-template-hash": template_hash},
                        annotations={
                            "deployment.kubernetes.io/desired-replicas": str(workload.replicas),
                            "deployment.kubernetes.io/max-replicas": str(workload.replicas + 30),
                            "deployment.kubernetes.io/revision": "2" if current else "1",
                        },
                        ownerReferences=[controller_owner("apps/v1", "Deployment", workload.name)],
                    ),
                    "spec": {
                        "replicas": workload.replicas if current else 0,
                        "selector": {"matchLabels": {**labels, "pod-template-hash": template_hash}},
                        "template": rs_template,
                    },
                }
            )
            if not current:
                continue
            owner = controller_owner("apps/v1", "ReplicaSet", rs_name)
            for replica in range(workload.replicas):
                name = f"{rs_name}-{suffix(f'{rs_name}/{replica}')}"
                node = nodes[slot % len(nodes)]
                slot += 1
                items.append(
                    _pod(
                        name,
                        rs_template,
                        owner,
                        node=node,
                        extra_labels={},
                        generate_name=f"{rs_name}-",
                    )
                )
    return items


def stateful_set(nodes: list[str]) -> list[dict[str, Any]]:
    labels = {"app": "db"}
    template = _template(labels, "500m", "2Gi", "db", spread=False)
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": object_metadata("StatefulSet", "db", generation=2),
            "spec": {
                "replicas": 3,
                "serviceName": "db",
                "podManagementPolicy": "OrderedReady",
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": labels},
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"partition": 0},
                },
                "template": template,
            },
            "status": {
                "replicas": 3,
                "readyReplicas": 3,
                "currentRevision": STATEFULSET_REVISION,
                "updateRevision": STATEFULSET_REVISION,
                "observedGeneration": 2,
            },
        }
    ]
    owner = controller_owner("apps/v1", "StatefulSet", "db")
    for ordinal in range(3):
        name = f"db-{ordinal}"
        items.append(
            _pod(
                name,
                template,
                owner,
                node=nodes[(ordinal * 7 + 1) % len(nodes)],
                extra_labels={
                    "controller-revision-hash": STATEFULSET_REVISION,
                    "statefulset.kubernetes.io/pod-name": name,
                    "apps.kubernetes.io/pod-index": str(ordinal),
                },
                generate_name=None,
            )
        )
    return items


def daemon_set(name: str, nodes: list[str]) -> list[dict[str, Any]]:
    labels = {"app": name}
    template = _template(labels, "50m", "64Mi", name, spread=False)
    template["spec"]["tolerations"] = [{"operator": "Exists"}]
    revision = DAEMONSET_HASHES[name]
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": object_metadata(
                "DaemonSet",
                name,
                generation=1,
                annotations={"deprecated.daemonset.template.generation": "1"},
            ),
            "spec": {
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": labels},
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                },
                "template": template,
            },
        }
    ]
    owner = controller_owner("apps/v1", "DaemonSet", name)
    for node in nodes:
        pod_name = f"{name}-{suffix(f'{name}/{node}')}"
        items.append(
            _pod(
                pod_name,
                template,
                owner,
                node=node,
                extra_labels={"controller-revision-hash": revision, "pod-template-generation": "1"},
                generate_name=f"{name}-",
            )
        )
    return items
