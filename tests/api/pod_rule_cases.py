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

#: (manifest, field, words of the refusal): its one problem
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


def resources(requests: str = "", limits: str = "") -> str:
    """A container's ``resources`` with these requests and limits (YAML flow mappings)."""
    listed = ", ".join(
        f"{side}: {{{values}}}"
        for side, values in (("requests", requests), ("limits", limits))
        if values
    )
    return f"{{containers: [{{name: app, image: x, resources: {{{listed}}}}}]}}"


GPU = "example.com/gpu"
HUGE = "hugepages-2Mi"
MUST_EQUAL = f"must be equal to {GPU} limit of 2"
NEEDS_LIMIT = "Required value: Limit must be set for non overcommitable resources"
NOT_STANDARD = "must be a standard resource type or fully qualified"
NOT_FOR_CONTAINERS = "must be a standard resource for containers"
NOT_EXTENDED = "doesn't follow extended resource name standard"
C0 = "spec.containers[0].resources"
T0 = "spec.template.spec.containers[0].resources"
#: apimachinery's words for a malformed qualified name's name part and prefix.
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
PREFIX_PART = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
TWO_SLASHES = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
    "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with "
    "an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)


def malformed(name: str, *words: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A pod asking for resource ``name`` (request and limit), and the server's ``words``
    about the name, each said of both."""
    quoted = f'"{name}"'
    return (
        pod(resources(f"{quoted}: 1", f"{quoted}: 1")),
        tuple(
            (f"{C0}.{side}[{name}]", f"Invalid value: {quoted}: {each}")
            for side in ("limits", "requests")
            for each in words
        ),
    )


#: (manifest, every (field, words) the API server reports of it): resource names and
#: quantities. A Pod's unset requests take its limits before the server validates it (a
#: template's do not), so a Pod's limit may be reported twice.
REFUSED_SEVERAL: list[tuple[str, tuple[tuple[str, str], ...]]] = [
    (
        pod(resources(f"{GPU}: 500m", f"{GPU}: 500m")),
        (
            (f"{C0}.limits[{GPU}]", 'Invalid value: "500m": must be an integer'),
            (f"{C0}.requests[{GPU}]", 'Invalid value: "500m": must be an integer'),
        ),
    ),
    (
        pod(resources(limits=f"{GPU}: 1.5")),
        (
            (f"{C0}.limits[{GPU}]", 'Invalid value: "1500m": must be an integer'),
            (f"{C0}.requests[{GPU}]", 'Invalid value: "1500m": must be an integer'),
        ),
    ),
    (
        deployment(resources(limits=f"{GPU}: 1.5")),
        ((f"{T0}.limits[{GPU}]", 'Invalid value: "1500m": must be an integer'),),
    ),
    (
        pod(
            "{initContainers: [{name: i, image: x, resources: {limits: {example.com/gpu: 1.5}}}], "
            "containers: [{name: app, image: x}]}"
        ),
        (
            (f"spec.initContainers[0].resources.limits[{GPU}]", "must be an integer"),
            (f"spec.initContainers[0].resources.requests[{GPU}]", "must be an integer"),
        ),
    ),
    (pod(resources(f"{GPU}: 1")), ((f"{C0}.limits", NEEDS_LIMIT),)),
    (
        deployment(resources(f"{GPU}: 1, example.com/fpga: 1")),
        ((f"{T0}.limits", NEEDS_LIMIT),),
    ),
    (
        pod(resources(f"{GPU}: 1", f"{GPU}: 2")),
        ((f"{C0}.requests", f'Invalid value: "1": {MUST_EQUAL}'),),
    ),
    (
        pod(resources(f"{HUGE}: 2Mi", f"{HUGE}: 2Mi")),
        ((C0, "Forbidden: HugePages require cpu or memory"),),
    ),
    (
        deployment(resources("hugepages-1Gi: 1Gi")),
        ((f"{T0}.limits", NEEDS_LIMIT), (T0, "Forbidden: HugePages require cpu or memory")),
    ),
    (
        pod(resources(f"{HUGE}: 2Mi, cpu: 1", f"{HUGE}: 4Mi")),
        ((f"{C0}.requests", f'Invalid value: "2Mi": must be equal to {HUGE} limit of 4Mi'),),
    ),
    (
        pod(resources(f"{HUGE}: 3Mi, cpu: 1", f"{HUGE}: 3Mi")),
        (
            (
                f"{C0}.limits[{HUGE}]",
                f'Invalid value: "3Mi": 3Mi is not positive integer multiple of {HUGE}',
            ),
            (
                f"{C0}.requests[{HUGE}]",
                f'Invalid value: "3Mi": 3Mi is not positive integer multiple of {HUGE}',
            ),
        ),
    ),
    (
        pod(resources("gpu: 1")),
        (
            (f"{C0}.requests[gpu]", f'Invalid value: "gpu": {NOT_STANDARD}'),
            (f"{C0}.requests[gpu]", f'Invalid value: "gpu": {NOT_FOR_CONTAINERS}'),
        ),
    ),
    (
        deployment(resources(limits="gpu: 1")),
        (
            (f"{T0}.limits[gpu]", f'Invalid value: "gpu": {NOT_STANDARD}'),
            (f"{T0}.limits[gpu]", f'Invalid value: "gpu": {NOT_FOR_CONTAINERS}'),
        ),
    ),
    (
        pod(resources("pods: 1")),
        ((f"{C0}.requests[pods]", f'Invalid value: "pods": {NOT_FOR_CONTAINERS}'),),
    ),
    (
        pod(resources("requests.example.com/foo: 1", "requests.example.com/foo: 1")),
        (
            (f"{C0}.limits[requests.example.com/foo]", NOT_EXTENDED),
            (f"{C0}.requests[requests.example.com/foo]", NOT_EXTENDED),
        ),
    ),
    malformed("bad name!", NAME_PART, NOT_FOR_CONTAINERS),
    malformed("-gpu", NAME_PART, NOT_FOR_CONTAINERS),
    malformed("example.com/bad name", NAME_PART, NOT_EXTENDED),
    malformed("Example_.com/gpu", PREFIX_PART, NOT_EXTENDED),
    malformed("a/b/c", TWO_SLASHES, NOT_EXTENDED),
    malformed("/gpu", "prefix part must be non-empty", NOT_EXTENDED),
    malformed("example.com/", "name part must be non-empty", NAME_PART, NOT_EXTENDED),
    malformed(f"example.com/{'a' * 64}", "name part must be no more than 63 bytes", NOT_EXTENDED),
    (
        pod(resources("cpu: 2000m, memory: 1.5Gi", "cpu: 1500m, memory: 1Gi")),
        (
            (
                f"{C0}.requests",
                'Invalid value: "2": must be less than or equal to cpu limit of 1500m',
            ),
            (
                f"{C0}.requests",
                'Invalid value: "1536Mi": must be less than or equal to memory limit of 1Gi',
            ),
        ),
    ),
    (
        deployment(resources(f"{GPU}: -1", f"{GPU}: -1")),
        (
            (f"{T0}.limits[{GPU}]", 'Invalid value: "-1": must be greater than or equal to 0'),
            (f"{T0}.requests[{GPU}]", 'Invalid value: "-1": must be greater than or equal to 0'),
        ),
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
    pod(resources(limits=f"{GPU}: 1")),
    deployment(resources(limits=f"{GPU}: 1")),
    pod(resources("cpu: 500m, memory: 1Gi, nvidia.com/gpu: 1", "nvidia.com/gpu: 1")),
    pod(resources(f"{GPU}: 1.5k", f"{GPU}: 1.5k")),
    pod(resources(f"{HUGE}: 2Mi, cpu: 1", f"{HUGE}: 2Mi")),
    pod(resources(f"{HUGE}: 4Mi", f"{HUGE}: 4Mi, memory: 1Gi")),
    pod(resources(f"{HUGE}: 0, memory: 1", f"{HUGE}: 0")),
    pod(resources("kubernetes.io/foo: 500m")),
    pod(resources("cpu: 1, memory: 1Gi", "cpu: 2, memory: 2Gi")),
]
