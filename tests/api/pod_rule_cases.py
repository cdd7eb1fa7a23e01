"""Pods, workloads and disruption budgets a real API server refuses (checked on v1.36 with
``kubectl apply --dry-run=server``), each with the field and words of its refusal, and some it
accepts. Shared by the offline test and the live one that asks a real API server."""

from __future__ import annotations


def pod(spec: str) -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: web, namespace: default}}\nspec: {spec}\n"


def with_ports(ports: str) -> str:
    return pod(f"{{containers: [{{name: app, image: x, ports: {ports}}}]}}")


CONTAINER = "{containers: [{name: app, image: x}]}"


def deployment(pod_spec: str = CONTAINER, spec: str = "", kind: str = "Deployment") -> str:
    return (
        f"apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: web, namespace: default}}\n"
        f"spec:\n{spec}  selector: {{matchLabels: {{app: web}}}}\n  template:\n"
        f"    metadata: {{labels: {{app: web}}}}\n    spec: {pod_spec}\n"
    )


def job(pod_spec: str) -> str:
    return (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: default}\n"
        f"spec:\n  template:\n    spec: {pod_spec}\n"
    )


def budget(policy: str) -> str:
    return (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        "metadata: {name: p, namespace: default}\n"
        f"spec: {{minAvailable: 1, selector: {{matchLabels: {{app: web}}}}, "
        f"unhealthyPodEvictionPolicy: {policy}}}\n"
    )


def spreads(*pairs: tuple[str, str]) -> str:
    listed = ", ".join(
        f"{{maxSkew: 1, topologyKey: {key}, whenUnsatisfiable: {when}}}" for key, when in pairs
    )
    return pod(f"{{containers: [{{name: app, image: x}}], topologySpreadConstraints: [{listed}]}}")


ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

#: (manifest, field, words of the refusal)
REFUSED = [
    (
        pod("{restartPolicy: Sometimes, containers: [{name: app, image: x}]}"),
        "spec.restartPolicy",
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    ),
    (
        deployment("{restartPolicy: Never, containers: [{name: app, image: x}]}"),
        "spec.template.spec.restartPolicy",
        'Unsupported value: "Never": supported values: "Always"',
    ),
    (
        with_ports("[{containerPort: 70000}]"),
        "spec.containers[0].ports[0].containerPort",
        "Invalid value: 70000: must be between 1 and 65535, inclusive",
    ),
    (
        with_ports("[{containerPort: 0}]"),
        "spec.containers[0].ports[0].containerPort",
        "Required value",
    ),
    (
        with_ports("[{containerPort: 80, hostPort: 70000}]"),
        "spec.containers[0].ports[0].hostPort",
        "Invalid value: 70000: must be between 1 and 65535, inclusive",
    ),
    (
        with_ports("[{containerPort: 80, protocol: HTTP}]"),
        "spec.containers[0].ports[0].protocol",
        'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
    ),
    (
        spreads((ZONE, "DoNotSchedule"), (HOST, "DoNotSchedule"), (ZONE, "DoNotSchedule")),
        "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
        f'Duplicate value: "{{{ZONE}, DoNotSchedule}}"',
    ),
    (
        deployment(spec="  strategy: {type: Rolling}\n"),
        "spec.strategy",
        'supported values: "Recreate", "RollingUpdate"',
    ),
    (
        deployment(spec="  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}\n"),
        "spec.strategy.rollingUpdate.maxUnavailable",
        "Invalid value: 0: may not be 0 when `maxSurge` is 0",
    ),
    (
        deployment(spec="  strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}\n"),
        "spec.strategy.rollingUpdate",
        "Forbidden: may not be specified when strategy `type` is 'Recreate'",
    ),
    (
        deployment(spec="  podManagementPolicy: Sometimes\n", kind="StatefulSet"),
        "spec.podManagementPolicy",
        "Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'",
    ),
    (
        job("{restartPolicy: Always, containers: [{name: app, image: x}]}"),
        "spec.template.spec.restartPolicy",
        'Required value: valid values: "OnFailure", "Never"',
    ),
    (
        job(CONTAINER),
        "spec.template.spec.restartPolicy",
        'Required value: valid values: "OnFailure", "Never"',
    ),
    (
        budget("Never"),
        "spec.unhealthyPodEvictionPolicy",
        'Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"',
    ),
]

#: Close to a refusal, yet accepted.
ACCEPTED = [
    pod("{restartPolicy: OnFailure, containers: [{name: app, image: x}]}"),
    deployment("{restartPolicy: Always, containers: [{name: app, image: x}]}"),
    with_ports("[{containerPort: 65535, hostPort: 1, protocol: UDP}, {containerPort: 1}]"),
    with_ports("[{containerPort: 80, hostPort: 0}]"),
    spreads((ZONE, "DoNotSchedule"), (ZONE, "ScheduleAnyway"), (HOST, "DoNotSchedule")),
    deployment(spec="  strategy: {type: Recreate}\n"),
    deployment(spec="  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}\n"),
    deployment(spec="  podManagementPolicy: Parallel\n", kind="StatefulSet"),
    job("{restartPolicy: OnFailure, containers: [{name: app, image: x}]}"),
    budget("AlwaysAllow"),
]
