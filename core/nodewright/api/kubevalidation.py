"""The Kubernetes API server's own rules for the objects nodewright reads from manifests.

A real API server refuses a pod named ``UPPER_case!``, a label key with a NUL byte in it, a
label value of 64 characters, a selector operator it does not know or a request larger than
its limit; ``nodewright simulate`` refuses them too, with the same field paths, instead of
simulating a cluster that could not exist. The shape of an object (unknown fields, value
types, quantities) is checked before this, by :mod:`nodewright.api.kubeschema`; these are the
rules that need more than the shape.

Each problem is a :class:`~nodewright.api.fielderror.FieldError` naming the field by its
camelCase path (``spec.template.spec.containers[0].resources.requests[cpu]``).
"""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.api.apps import (
    DaemonSet,
    Deployment,
    DeploymentStrategy,
    Job,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
)
from nodewright.api.containerresources import check_container_resources, check_resource_list
from nodewright.api.core import (
    LABEL_SELECTOR_OPERATORS,
    NODE_SELECTOR_OPERATORS,
    TAINT_EFFECTS,
    Affinity,
    Container,
    LabelSelector,
    Namespace,
    Node,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PodSpec,
    PodTemplateSpec,
)
from nodewright.api.excerpt import excerpt
from nodewright.api.fielderror import FieldError, FieldErrors, invalid_value, unsupported_value
from nodewright.api.meta import KubeObject, ObjectMeta
from nodewright.api.names import (
    dns_label_problems,
    dns_subdomain_problems,
    label_value_problems,
    qualified_name_problems,
)
from nodewright.api.resourcevalidation import check_pod_claims, check_resource_object

#: The API server's limit on all of an object's annotations together (keys and values).
MAX_ANNOTATIONS_BYTES = 256 * 1024

TOLERATION_OPERATORS = ("Equal", "Exists")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES = ("Honor", "Ignore")
WEIGHT_RANGE = (1, 100)
RESTART_POLICIES = ("Always", "OnFailure", "Never")
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
PORT_RANGE = (1, 65535)
DEPLOYMENT_STRATEGIES = ("Recreate", "RollingUpdate")
POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")

#: Kinds whose names are DNS labels (at most 63 characters, no dots); others are subdomains.
_LABEL_NAMED_KINDS = frozenset({Namespace.KIND})


def validate_object(obj: KubeObject) -> list[FieldError]:
    """Every rule of the API server's validation for ``obj``'s kind that ``obj`` breaks."""
    report = FieldErrors(
        obj.kind or type(obj).KIND, obj.metadata.name or obj.metadata.generate_name or ""
    )
    _check_metadata(report, "metadata", obj.metadata, type(obj), top_level=True)
    if isinstance(obj, Pod):
        _check_pod_spec(report, "spec", obj.spec, defaulted=True)
    elif isinstance(obj, Deployment | ReplicaSet | StatefulSet):
        _check_replicas(report, "spec.replicas", obj.spec.replicas)
        _check_workload(report, obj.spec.selector, obj.spec.template, required_selector=True)
        if isinstance(obj, Deployment):
            _check_deployment_strategy(report, obj.spec.strategy)
        elif isinstance(obj, StatefulSet):
            policy = obj.spec.pod_management_policy
            if policy is not None and policy not in POD_MANAGEMENT_POLICIES:
                report.add(
                    "spec.podManagementPolicy",
                    invalid_value(policy, "must be 'OrderedReady' or 'Parallel'"),
                )
    elif isinstance(obj, DaemonSet):
        _check_workload(report, obj.spec.selector, obj.spec.template, required_selector=True)
    elif isinstance(obj, Job):
        _check_replicas(report, "spec.parallelism", obj.spec.parallelism)
        if obj.spec.completions is not None:
            _check_replicas(report, "spec.completions", obj.spec.completions)
        _check_template(report, "spec.template", obj.spec.template)
        if obj.spec.template.spec.restart_policy not in JOB_RESTART_POLICIES:
            # unset is Always: a Job's pods must be allowed to end
            report.add(
                "spec.template.spec.restartPolicy",
                'Required value: valid values: "OnFailure", "Never"',
            )
    elif isinstance(obj, PodDisruptionBudget):
        _check_disruption_budget(report, obj)
    elif isinstance(obj, Node):
        _check_node(report, obj)
    else:
        check_resource_object(report, obj)
    return report.errors


# --- metadata ----------------------------------------------------------------------------------


def _check_metadata(
    report: FieldErrors, path: str, meta: ObjectMeta, kind: type[KubeObject], top_level: bool
) -> None:
    if top_level:
        name_rules = (
            dns_label_problems if kind.KIND in _LABEL_NAMED_KINDS else (dns_subdomain_problems)
        )
        if meta.name:
            report.add_all(f"{path}.name", name_rules(meta.name))
        elif meta.generate_name:
            prefix = meta.generate_name.rstrip("-") or "x"
            report.add_all(f"{path}.generateName", name_rules(prefix))
        else:
            report.add(f"{path}.name", "required field is missing (or set generateName)")
        if meta.namespace and kind.NAMESPACED:
            report.add_all(f"{path}.namespace", dns_label_problems(meta.namespace))
    check_labels(report, f"{path}.labels", meta.labels)
    size = 0
    for key, value in meta.annotations.items():
        report.add_all(
            f"{path}.annotations[{key}]", (f"key {p}" for p in qualified_name_problems(key))
        )
        size += len(key) + len(value)
    if size > MAX_ANNOTATIONS_BYTES:
        report.add(
            f"{path}.annotations",
            f"may hold at most {MAX_ANNOTATIONS_BYTES} characters in all, got {size}",
        )


def check_labels(report: FieldErrors, path: str, labels: Mapping[str, str]) -> None:
    for key, value in labels.items():
        key_path = f"{path}[{key}]"
        report.add_all(key_path, (f"key {p}" for p in qualified_name_problems(key)))
        report.add_all(key_path, (f"value {p}" for p in label_value_problems(value)))


def _check_label_selector(report: FieldErrors, path: str, selector: LabelSelector) -> None:
    check_labels(report, f"{path}.matchLabels", selector.match_labels)
    for index, expression in enumerate(selector.match_expressions):
        where = f"{path}.matchExpressions[{index}]"
        report.add_all(f"{where}.key", qualified_name_problems(expression.key))
        _check_operator_values(
            report, where, expression.operator, expression.values, LABEL_SELECTOR_OPERATORS
        )


def _check_operator_values(
    report: FieldErrors, path: str, operator: str, values: list[str], operators: tuple[str, ...]
) -> None:
    if operator not in operators:
        report.add(
            f"{path}.operator", f"must be one of {', '.join(operators)}, got {excerpt(operator)}"
        )
        return
    if operator in ("In", "NotIn") and not values:
        report.add(f"{path}.values", f"must not be empty for operator {operator}")
    elif operator in ("Exists", "DoesNotExist") and values:
        report.add(f"{path}.values", f"must be empty for operator {operator}")
    elif operator in ("Gt", "Lt"):
        if len(values) != 1 or not values[0].lstrip("-").isdigit():
            report.add(
                f"{path}.values",
                f"operator {operator} needs exactly one integer value, got {excerpt(values)}",
            )
        return
    for index, value in enumerate(values):
        report.add_all(f"{path}.values[{index}]", label_value_problems(value))


# --- workloads and pods ------------------------------------------------------------------------


def _check_replicas(report: FieldErrors, path: str, value: int) -> None:
    if value < 0:
        report.add(path, f"must be greater than or equal to 0, got {value}")


def _check_workload(
    report: FieldErrors,
    selector: LabelSelector,
    template: PodTemplateSpec,
    *,
    required_selector: bool,
) -> None:
    if required_selector and not (selector.match_labels or selector.match_expressions):
        report.add("spec.selector", "required field is missing (matchLabels or matchExpressions)")
    else:
        _check_label_selector(report, "spec.selector", selector)
        labels = template.metadata.labels
        unmatched = {
            key: value for key, value in selector.match_labels.items() if labels.get(key) != value
        }
        if unmatched:
            report.add(
                "spec.template.metadata.labels",
                "selector does not match template labels: the pods would lack "
                f"{excerpt(unmatched)}",
            )
    _check_template(report, "spec.template", template)
    policy = template.spec.restart_policy
    if policy is not None and policy in RESTART_POLICIES and policy != "Always":
        # Their controllers restart what ends; only a Job's pods may end for good.
        report.add("spec.template.spec.restartPolicy", unsupported_value(policy, ("Always",)))


def _check_template(report: FieldErrors, path: str, template: PodTemplateSpec) -> None:
    check_labels(report, f"{path}.metadata.labels", template.metadata.labels)
    _check_pod_spec(report, f"{path}.spec", template.spec)


def _check_pod_spec(
    report: FieldErrors, path: str, spec: PodSpec, *, defaulted: bool = False
) -> None:
    """``defaulted`` for a Pod's own spec: the API server gives a Pod's containers their
    limits as requests where they set none before validating it, never a template's."""
    if not spec.containers:
        report.add(f"{path}.containers", "must have at least one container")
    names: dict[str, str] = {}
    for list_name, containers in (
        ("containers", spec.containers),
        ("initContainers", spec.init_containers),
    ):
        for index, container in enumerate(containers):
            where = f"{path}.{list_name}[{index}]"
            _check_container(report, where, container, defaulted=defaulted)
            first = names.get(container.name)
            if first is not None and container.name:
                report.add(
                    f"{where}.name", f"duplicate name {excerpt(container.name)}; {first} has it"
                )
            names.setdefault(container.name, where)
    if spec.restart_policy is not None and spec.restart_policy not in RESTART_POLICIES:
        report.add(
            f"{path}.restartPolicy", unsupported_value(spec.restart_policy, RESTART_POLICIES)
        )
    check_resource_list(report, f"{path}.overhead", spec.overhead)
    check_pod_claims(report, path, spec)
    check_labels(report, f"{path}.nodeSelector", spec.node_selector)
    if spec.affinity is not None:
        _check_affinity(report, f"{path}.affinity", spec.affinity)
    for index, toleration in enumerate(spec.tolerations):
        where = f"{path}.tolerations[{index}]"
        if toleration.key:
            report.add_all(f"{where}.key", qualified_name_problems(toleration.key))
        operator = toleration.operator or "Equal"
        if operator not in TOLERATION_OPERATORS:
            report.add(
                f"{where}.operator",
                f"must be one of {', '.join(TOLERATION_OPERATORS)}, got {excerpt(operator)}",
            )
        elif operator == "Exists" and toleration.value:
            report.add(f"{where}.value", "must be empty when operator is Exists")
        elif operator == "Equal" and not toleration.key:
            report.add(f"{where}.operator", "must be Exists when key is empty")
        if toleration.effect and toleration.effect not in TAINT_EFFECTS:
            report.add(
                f"{where}.effect",
                f"must be one of {', '.join(TAINT_EFFECTS)}, got {excerpt(toleration.effect)}",
            )
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            report.add(f"{where}.tolerationSeconds", "may be set only when effect is NoExecute")
    for index, constraint in enumerate(spec.topology_spread_constraints):
        where = f"{path}.topologySpreadConstraints[{index}]"
        if constraint.max_skew <= 0:
            report.add(f"{where}.maxSkew", f"must be greater than 0, got {constraint.max_skew}")
        report.add_all(f"{where}.topologyKey", qualified_name_problems(constraint.topology_key))
        if constraint.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            report.add(
                f"{where}.whenUnsatisfiable",
                f"must be one of {', '.join(WHEN_UNSATISFIABLE)}, "
                f"got {excerpt(constraint.when_unsatisfiable)}",
            )
        if constraint.min_domains is not None:
            if constraint.min_domains <= 0:
                report.add(
                    f"{where}.minDomains", f"must be greater than 0, got {constraint.min_domains}"
                )
            elif constraint.when_unsatisfiable != "DoNotSchedule":
                report.add(
                    f"{where}.minDomains", "may be set only when whenUnsatisfiable is DoNotSchedule"
                )
        for policy_name, policy in (
            ("nodeAffinityPolicy", constraint.node_affinity_policy),
            ("nodeTaintsPolicy", constraint.node_taints_policy),
        ):
            if policy is not None and policy not in INCLUSION_POLICIES:
                report.add(
                    f"{where}.{policy_name}",
                    f"must be one of {', '.join(INCLUSION_POLICIES)}, got {excerpt(policy)}",
                )
        if constraint.label_selector is not None:
            _check_label_selector(report, f"{where}.labelSelector", constraint.label_selector)
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if any(
            (later.topology_key, later.when_unsatisfiable) == pair
            for later in spec.topology_spread_constraints[index + 1 :]
        ):
            # kube-scheduler keys a pod's spreads by this pair: the API server refuses a repeat
            report.add(
                f"{where}.{{topologyKey, whenUnsatisfiable}}",
                f'Duplicate value: "{{{pair[0]}, {pair[1]}}}"',
            )


def _check_container(
    report: FieldErrors, path: str, container: Container, *, defaulted: bool
) -> None:
    if not container.name:
        report.add(f"{path}.name", "required field is missing")
    else:
        report.add_all(f"{path}.name", dns_label_problems(container.name))
    check_container_resources(report, f"{path}.resources", container.resources, defaulted=defaulted)
    for index, port in enumerate(container.ports):
        where = f"{path}.ports[{index}]"
        if port.container_port == 0:
            report.add(f"{where}.containerPort", "Required value")
        else:
            _check_port_number(report, f"{where}.containerPort", port.container_port)
        if port.host_port:
            _check_port_number(report, f"{where}.hostPort", port.host_port)
        if port.protocol not in PORT_PROTOCOLS:
            report.add(f"{where}.protocol", unsupported_value(port.protocol, PORT_PROTOCOLS))


def _check_port_number(report: FieldErrors, path: str, port: int) -> None:
    low, high = PORT_RANGE
    if not low <= port <= high:
        report.add(path, f"Invalid value: {port}: must be between {low} and {high}, inclusive")


def _check_affinity(report: FieldErrors, path: str, affinity: Affinity) -> None:
    node = affinity.node_affinity
    if node is not None:
        required = node.required_during_scheduling_ignored_during_execution
        where = f"{path}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        if required is not None:
            if not required.node_selector_terms:
                report.add(f"{where}.nodeSelectorTerms", "must have at least one term")
            for index, term in enumerate(required.node_selector_terms):
                _check_node_selector_term(report, f"{where}.nodeSelectorTerms[{index}]", term)
        preferred = node.preferred_during_scheduling_ignored_during_execution
        where = f"{path}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        for index, weighted in enumerate(preferred):
            _check_weight(report, f"{where}[{index}].weight", weighted.weight)
            _check_node_selector_term(report, f"{where}[{index}].preference", weighted.preference)
    for field_name, pod_affinity in (
        ("podAffinity", affinity.pod_affinity),
        ("podAntiAffinity", affinity.pod_anti_affinity),
    ):
        if pod_affinity is None:
            continue
        base = f"{path}.{field_name}"
        for index, affinity_term in enumerate(
            pod_affinity.required_during_scheduling_ignored_during_execution
        ):
            _check_pod_affinity_term(
                report,
                f"{base}.requiredDuringSchedulingIgnoredDuringExecution[{index}]",
                affinity_term,
            )
        for index, weighted_term in enumerate(
            pod_affinity.preferred_during_scheduling_ignored_during_execution
        ):
            where = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{index}]"
            _check_weight(report, f"{where}.weight", weighted_term.weight)
            _check_pod_affinity_term(
                report, f"{where}.podAffinityTerm", weighted_term.pod_affinity_term
            )


def _check_node_selector_term(report: FieldErrors, path: str, term: NodeSelectorTerm) -> None:
    for index, expression in enumerate(term.match_expressions):
        where = f"{path}.matchExpressions[{index}]"
        report.add_all(f"{where}.key", qualified_name_problems(expression.key))
        _check_operator_values(
            report, where, expression.operator, expression.values, NODE_SELECTOR_OPERATORS
        )
    for index, field_expression in enumerate(term.match_fields):
        where = f"{path}.matchFields[{index}]"
        if field_expression.key != "metadata.name":
            report.add(
                f"{where}.key", f"must be metadata.name, got {excerpt(field_expression.key)}"
            )
        _check_operator_values(
            report, where, field_expression.operator, field_expression.values, ("In", "NotIn")
        )


def _check_pod_affinity_term(report: FieldErrors, path: str, term: PodAffinityTerm) -> None:
    report.add_all(f"{path}.topologyKey", qualified_name_problems(term.topology_key))
    if term.label_selector is not None:
        _check_label_selector(report, f"{path}.labelSelector", term.label_selector)
    if term.namespace_selector is not None:
        _check_label_selector(report, f"{path}.namespaceSelector", term.namespace_selector)


def _check_weight(report: FieldErrors, path: str, weight: int) -> None:
    low, high = WEIGHT_RANGE
    if not low <= weight <= high:
        report.add(path, f"must be between {low} and {high}, got {weight}")


# --- other kinds -------------------------------------------------------------------------------


def _check_deployment_strategy(report: FieldErrors, strategy: DeploymentStrategy | None) -> None:
    if strategy is None:
        return
    kind = strategy.type or "RollingUpdate"
    if kind not in DEPLOYMENT_STRATEGIES:
        report.add("spec.strategy", unsupported_value(kind, DEPLOYMENT_STRATEGIES))
        return
    rolling = strategy.rolling_update
    if rolling is None:
        return
    if kind == "Recreate":
        report.add(
            "spec.strategy.rollingUpdate",
            "Forbidden: may not be specified when strategy `type` is 'Recreate'",
        )
    elif _is_zero(rolling.max_surge) and _is_zero(rolling.max_unavailable):
        report.add(
            "spec.strategy.rollingUpdate.maxUnavailable",
            invalid_value(rolling.max_unavailable, "may not be 0 when `maxSurge` is 0"),
        )


def _is_zero(value: int | str | None) -> bool:
    """An explicit 0 or 0% (unset is the default 25%)."""
    return value is not None and str(value).strip() in ("0", "0%")


def _check_disruption_budget(report: FieldErrors, budget: PodDisruptionBudget) -> None:
    spec = budget.spec
    policy = spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        report.add(
            "spec.unhealthyPodEvictionPolicy",
            unsupported_value(policy, UNHEALTHY_POD_EVICTION_POLICIES),
        )
    if spec.min_available is not None and spec.max_unavailable is not None:
        report.add("spec", "minAvailable and maxUnavailable cannot both be set")
    for name, value in (
        ("minAvailable", spec.min_available),
        ("maxUnavailable", spec.max_unavailable),
    ):
        if isinstance(value, int) and value < 0:
            report.add(f"spec.{name}", f"must be greater than or equal to 0, got {value}")
        elif isinstance(value, str):
            number = value.removesuffix("%")
            if not (value.endswith("%") and number.isdigit() and int(number) <= 100):
                report.add(
                    f"spec.{name}",
                    f"must be a whole number or a percentage from 0% to 100%, got {excerpt(value)}",
                )
    if spec.selector is not None:
        _check_label_selector(report, "spec.selector", spec.selector)


def _check_node(report: FieldErrors, node: Node) -> None:
    for index, taint in enumerate(node.spec.taints):
        where = f"spec.taints[{index}]"
        report.add_all(f"{where}.key", qualified_name_problems(taint.key))
        if taint.value:
            report.add_all(f"{where}.value", label_value_problems(taint.value))
        if taint.effect not in TAINT_EFFECTS:
            report.add(
                f"{where}.effect",
                f"must be one of {', '.join(TAINT_EFFECTS)}, got {excerpt(taint.effect)}",
            )
    check_resource_list(report, "status.capacity", node.status.capacity)
    check_resource_list(report, "status.allocatable", node.status.allocatable)
