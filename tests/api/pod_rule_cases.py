"""Pods and workloads a real API server refuses (checked on v1.36 with ``kubectl apply
--dry-run=server``), each with the field and words of its refusal, and some it accepts. Shared
by the offline test and the live one that asks a real API server."""

from __future__ import annotations


def pod(spec: str) -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: web, namespace: default}}\nspec: {spec}\n"


def with_ports(ports: str) -> str:
    return pod(f"{{containers: [{{name: app, image: x, ports: {ports}}}]}}")


def deployment(pod_spec: str) -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n"
        "spec:\n  selector: {matchLabels: {app: web}}\n  template:\n"
        f"    metadata: {{labels: {{app: web}}}}\n    spec: {pod_spec}\n"
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
]

#: Close to a refusal, yet accepted.
ACCEPTED = [
    pod("{restartPolicy: OnFailure, containers: [{name: app, image: x}]}"),
    deployment("{restartPolicy: Always, containers: [{name: app, image: x}]}"),
    with_ports("[{containerPort: 65535, hostPort: 1, protocol: UDP}, {containerPort: 1}]"),
    with_ports("[{containerPort: 80, hostPort: 0}]"),
    spreads((ZONE, "DoNotSchedule"), (ZONE, "ScheduleAnyway"), (HOST, "DoNotSchedule")),
]
