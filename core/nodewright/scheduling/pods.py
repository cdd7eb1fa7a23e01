"""What a pod asks of a node, read from its spec, and whether one concrete node gives it.

The solver never looks at :class:`~nodewright.api.core.Pod` objects: :func:`pod_request`
turns a pod into a :class:`~nodewright.scheduling.model.PodRequest` once, so inner loops work
on plain, precomputed data. :func:`node_fit_problem` is the kube-scheduler view of one pod
against one real node, shared by the embedded binder and the solver's existing-node checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from nodewright.api import core as api
from nodewright.api.labels import (
    NODEPOOL_LABEL,
    RESTRICTED_LABEL_DOMAINS,
    RESTRICTED_LABELS,
    WELL_KNOWN_LABELS,
    normalize_label,
)
from nodewright.scheduling.model import HostPort, PodRequest
from nodewright.scheduling.requirements import (
    DOES_NOT_EXIST,
    LT,
    OPERATORS,
    Requirement,
    RequirementError,
    Requirements,
)
from nodewright.scheduling.resources import PODS, ResourceList, parse_resources
from nodewright.scheduling.selectors import LabelSelector
from nodewright.scheduling.taints import Taint, Toleration, tolerates_all
from nodewright.scheduling.topologyterm import (
    AFFINITY,
    ANTI_AFFINITY,
    HONOR,
    IGNORE,
    SPREAD,
    NodeFilter,
    TopologyTerm,
    interned,
)

DO_NOT_SCHEDULE = "DoNotSchedule"

#: One pod slot, in milli-units, charged for every pod.
ONE_POD = 1000

# -- resources ------------------------------------------------------------------------------


def _container_requests(container: api.Container) -> ResourceList:
    """A container's requests; a limit without a request counts as the request, as the API
    server's defaulting would have set it."""
    declared = {**container.resources.limits, **container.resources.requests}
    return parse_resources(declared)


def _add_into(total: ResourceList, values: Mapping[str, int]) -> None:
    for name, value in values.items():
        total[name] = total.get(name, 0) + value


def _max_into(total: ResourceList, values: Mapping[str, int]) -> None:
    for name, value in values.items():
        if value > total.get(name, 0):
            total[name] = value


def pod_requests(pod: api.Pod) -> ResourceList:
    """The resources a pod occupies on a node (upstream ``PodRequests``) plus one pod slot.

    App containers and restartable init containers (sidecars) run together, so they add up;
    each ordinary init container runs alone beside the sidecars started before it, so the pod
    needs the larger of the two. RuntimeClass overhead comes on top.
    """
    total = _pod_total(pod, _container_requests)
    _add_into(total, parse_resources(pod.spec.overhead))
    total[PODS] = total.get(PODS, 0) + ONE_POD
    return total


def pod_limits(pod: api.Pod) -> ResourceList:
    """A pod's limits as upstream ``PodLimits`` sums them, plus one pod slot (Karpenter's
    ``LimitsForPods`` counts pods too). RuntimeClass overhead is added only to resources that
    have a limit: a resource without one stays unlimited."""
    total = _pod_total(pod, lambda c: parse_resources(c.resources.limits))
    for name, value in parse_resources(pod.spec.overhead).items():
        if name in total:
            total[name] += value
    total[PODS] = total.get(PODS, 0) + ONE_POD
    return total


def _pod_total(pod: api.Pod, of: Callable[[api.Container], ResourceList]) -> ResourceList:
    total: ResourceList = {}
    for container in pod.spec.containers:
        _add_into(total, of(container))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in pod.spec.init_containers:
        values = of(container)
        if container.restart_policy == "Always":
            _add_into(total, values)
            _add_into(sidecars, values)
            _max_into(init_peak, sidecars)
        else:
            running = dict(values)
            _add_into(running, sidecars)
            _max_into(init_peak, running)
    _max_into(total, init_peak)
    return total


def has_dra_requirements(pod: api.Pod) -> bool:
    """True when the pod asks for Dynamic Resource Allocation devices: ``resourceClaims`` on
    the pod or ``resources.claims`` on any of its containers (Karpenter's
    ``HasDRARequirements``)."""
    if pod.spec.resource_claims:
        return True
    return any(c.resources.claims for c in (*pod.spec.init_containers, *pod.spec.containers))


# -- taints and tolerations -----------------------------------------------------------------


def taints_from_api(taints: Sequence[api.Taint]) -> tuple[Taint, ...]:
    """Taints of a Node, NodePool or NodeClaim as the solver's plain data."""
    return tuple(Taint(t.key, t.effect, t.value or "") for t in taints)


def pod_tolerations(pod: api.Pod) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(t.key or "", t.operator or "Equal", t.value or "", t.effect or "")
        for t in pod.spec.tolerations
    )


# -- host ports ------------------------------------------------------------------------------


def pod_host_ports(pod: api.Pod) -> tuple[HostPort, ...]:
    """Host ports of app containers and sidecars (they run for the pod's whole life)."""
    containers = [
        *pod.spec.containers,
        *(c for c in pod.spec.init_containers if c.restart_policy == "Always"),
    ]
    ports: list[HostPort] = []
    for container in containers:
        for port in container.ports:
            if not port.host_port:
                continue
            ports.append(
                HostPort(port.host_port, port.protocol or "TCP", port.host_ip or "0.0.0.0")
            )
    return tuple(ports)


# -- node requirements -----------------------------------------------------------------------


def _term_requirements(expressions: Iterable[api.NodeSelectorRequirement]) -> list[Requirement]:
    return [Requirement.of(e.key, e.operator, e.values) for e in expressions]


def _required_terms(pod: api.Pod) -> list[api.NodeSelectorTerm]:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return []
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    return list(required.node_selector_terms) if required is not None else []


def _preferred_terms(pod: api.Pod) -> list[api.PreferredSchedulingTerm]:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return []
    return list(affinity.node_affinity.preferred_during_scheduling_ignored_during_execution)


def pod_requirement_terms(pod: api.Pod) -> tuple[Requirements, ...]:
    """The nodeSelector intersected with each ORed required node-affinity term.

    A pod without required node affinity has exactly one term (its nodeSelector). Raises
    :class:`~nodewright.scheduling.requirements.RequirementError` for operators Kubernetes
    does not know; :func:`validate_pod` reports those first.
    """
    selector = Requirements.from_labels(pod.spec.node_selector)
    terms = _required_terms(pod)
    if not terms:
        return (selector,)
    return tuple(selector.add(Requirements(_term_requirements(t.match_expressions))) for t in terms)


def pod_preferred_terms(pod: api.Pod) -> tuple[tuple[int, Requirements], ...]:
    """Preferred node-affinity terms as ``(weight, requirements)``, heaviest first (stable)."""
    weighted = [
        (term.weight, Requirements(_term_requirements(term.preference.match_expressions)))
        for term in _preferred_terms(pod)
    ]
    weighted.sort(key=lambda pair: -pair[0])
    return tuple(weighted)


# -- topology --------------------------------------------------------------------------------


def _namespaces(
    pod: api.Pod,
    term: api.PodAffinityTerm,
    namespaces: Mapping[str, Mapping[str, str]] | None,
) -> frozenset[str]:
    """The pod's own namespace unless the term names namespaces or selects them."""
    if not term.namespaces and term.namespace_selector is None:
        return frozenset((pod.namespace,))
    found = set(term.namespaces)
    if term.namespace_selector is not None and namespaces is not None:
        selector = LabelSelector.from_api(term.namespace_selector)
        found.update(name for name, labels in namespaces.items() if selector.matches(labels))
    return frozenset(found)


def _affinity_term(
    pod: api.Pod,
    kind: str,
    term: api.PodAffinityTerm,
    namespaces: Mapping[str, Mapping[str, str]] | None,
) -> TopologyTerm:
    selector = term.label_selector
    if selector is not None and term.match_label_keys:
        extra = [
            api.LabelSelectorRequirement(key=k, operator="In", values=[pod.metadata.labels[k]])
            for k in term.match_label_keys
            if k in pod.metadata.labels
        ]
        selector = api.LabelSelector(
            match_labels=selector.match_labels,
            match_expressions=[*selector.match_expressions, *extra],
        )
    return interned(
        TopologyTerm(
            kind=kind,
            key=normalize_label(term.topology_key),
            selector=LabelSelector.from_api(selector),
            namespaces=_namespaces(pod, term, namespaces),
        )
    )


def _spread_term(pod: api.Pod, constraint: api.TopologySpreadConstraint) -> TopologyTerm:
    selector = constraint.label_selector
    if constraint.match_label_keys:
        base = selector or api.LabelSelector()
        extra = [
            api.LabelSelectorRequirement(key=k, operator="In", values=[pod.metadata.labels[k]])
            for k in constraint.match_label_keys
            if k in pod.metadata.labels
        ]
        selector = api.LabelSelector(
            match_labels=base.match_labels,
            match_expressions=[*base.match_expressions, *extra],
        )
    node_filter = NodeFilter(
        terms=pod_requirement_terms(pod),
        honor_affinity=(constraint.node_affinity_policy or HONOR) != IGNORE,
        honor_taints=(constraint.node_taints_policy or IGNORE) == HONOR,
        tolerations=pod_tolerations(pod),
    )
    return interned(
        TopologyTerm(
            kind=SPREAD,
            key=normalize_label(constraint.topology_key),
            selector=LabelSelector.from_api(selector),
            namespaces=frozenset((pod.namespace,)),
            max_skew=constraint.max_skew,
            min_domains=constraint.min_domains,
            node_filter=node_filter,
        )
    )


def _weighted(
    pod: api.Pod,
    kind: str,
    terms: Sequence[api.WeightedPodAffinityTerm],
    namespaces: Mapping[str, Mapping[str, str]] | None,
) -> tuple[TopologyTerm, ...]:
    ordered = sorted(terms, key=lambda t: -t.weight)
    return tuple(_affinity_term(pod, kind, t.pod_affinity_term, namespaces) for t in ordered)


def pod_topology(
    pod: api.Pod, namespaces: Mapping[str, Mapping[str, str]] | None = None
) -> tuple[
    tuple[TopologyTerm, ...],
    tuple[TopologyTerm, ...],
    tuple[TopologyTerm, ...],
    tuple[TopologyTerm, ...],
]:
    """The pod's topology terms: hard ones, preferred affinity, preferred anti-affinity and
    ScheduleAnyway spreads (preferences heaviest first).

    ``namespaces`` maps namespace names to their labels, for terms with a namespaceSelector.
    """
    hard: list[TopologyTerm] = []
    anyway: list[TopologyTerm] = []
    for constraint in pod.spec.topology_spread_constraints:
        term = _spread_term(pod, constraint)
        if constraint.when_unsatisfiable == DO_NOT_SCHEDULE:
            hard.append(term)
        else:
            anyway.append(term)
    affinity = pod.spec.affinity
    preferred: tuple[TopologyTerm, ...] = ()
    preferred_anti: tuple[TopologyTerm, ...] = ()
    if affinity is not None and affinity.pod_affinity is not None:
        rules = affinity.pod_affinity
        hard.extend(
            _affinity_term(pod, AFFINITY, t, namespaces)
            for t in rules.required_during_scheduling_ignored_during_execution
        )
        preferred = _weighted(
            pod, AFFINITY, rules.preferred_during_scheduling_ignored_during_execution, namespaces
        )
    if affinity is not None and affinity.pod_anti_affinity is not None:
        rules = affinity.pod_anti_affinity
        hard.extend(
            _affinity_term(pod, ANTI_AFFINITY, t, namespaces)
            for t in rules.required_during_scheduling_ignored_during_execution
        )
        preferred_anti = _weighted(
            pod,
            ANTI_AFFINITY,
            rules.preferred_during_scheduling_ignored_during_execution,
            namespaces,
        )
    return tuple(hard), preferred, preferred_anti, tuple(anyway)


def pod_request(
    pod: api.Pod, order: int = 0, namespaces: Mapping[str, Mapping[str, str]] | None = None
) -> PodRequest:
    """Everything the solver needs from ``pod``, computed once."""
    hard, preferred, preferred_anti, anyway = pod_topology(pod, namespaces)
    return PodRequest(
        namespace=pod.namespace,
        name=pod.name,
        uid=pod.metadata.uid or "",
        requests=pod_requests(pod),
        requirement_terms=pod_requirement_terms(pod),
        preferred_terms=pod_preferred_terms(pod),
        tolerations=pod_tolerations(pod),
        host_ports=pod_host_ports(pod),
        labels=dict(pod.metadata.labels),
        priority=pod.spec.priority or 0,
        order=order,
        topology=hard,
        preferred_affinity=preferred,
        preferred_anti_affinity=preferred_anti,
        schedule_anyway=anyway,
        dynamic_resources=has_dra_requirements(pod),
    )


# -- validation ------------------------------------------------------------------------------


def is_restricted_label(
    key: str,
    restricted_domains: frozenset[str] = RESTRICTED_LABEL_DOMAINS,
    well_known_labels: frozenset[str] = WELL_KNOWN_LABELS,
) -> bool:
    """True for labels pods and NodePools may not require (``IsRestrictedLabel``)."""
    key = normalize_label(key)
    if key in well_known_labels:
        return False
    if key in RESTRICTED_LABELS:
        return True
    domain = key.split("/", 1)[0] if "/" in key else ""
    return any(domain == d or domain.endswith("." + d) for d in restricted_domains)


def _requirement_problem(
    key: str,
    operator: str,
    values: Sequence[str],
    restricted_domains: frozenset[str],
    well_known_labels: frozenset[str],
) -> str | None:
    if is_restricted_label(key, restricted_domains, well_known_labels):
        return f"label {key} is restricted; specify a well known label or a custom label"
    if operator not in OPERATORS:
        return f"key {key} has an unsupported operator {operator} not in {', '.join(OPERATORS)}"
    try:
        requirement = Requirement.of(key, operator, values)
    except RequirementError as error:
        return str(error)
    if operator == LT and requirement.any_value() is None:
        # Nothing below the bound is a label value (they are never negative): kube-scheduler
        # places the pod on no node, and Karpenter fails naming a value for the node it sizes.
        return f"key {key} {operator} {values[0]} allows no label value"
    return None


def validate_pod(
    pod: api.Pod,
    restricted_domains: frozenset[str] = RESTRICTED_LABEL_DOMAINS,
    well_known_labels: frozenset[str] = WELL_KNOWN_LABELS,
) -> str | None:
    """Why Karpenter would not provision for ``pod`` at all, or None.

    Mirrors ``Provisioner.Validate``: a nodeSelector or node-affinity term on a restricted
    label, with ``matchFields``, or with an operator Kubernetes does not know makes the pod
    ignored, as does requiring that ``karpenter.sh/nodepool`` does not exist.
    """
    required = _required_terms(pod)
    preferred = [p.preference for p in _preferred_terms(pod)]
    for term in required:
        for expression in term.match_expressions:
            if expression.key == NODEPOOL_LABEL and expression.operator == DOES_NOT_EXIST:
                return (
                    "configured to not run on a Karpenter provisioned node via the "
                    f"{NODEPOOL_LABEL} {DOES_NOT_EXIST} requirement"
                )
    for key, value in sorted(pod.spec.node_selector.items()):
        problem = _requirement_problem(key, "In", [value], restricted_domains, well_known_labels)
        if problem is not None:
            return f"invalid nodeSelector, {problem}"
    for kind, terms in (("required", required), ("preferred", preferred)):
        for term in terms:
            if term.match_fields:
                return f"invalid {kind} node affinity, matchFields is not supported"
            for e in term.match_expressions:
                problem = _requirement_problem(
                    e.key, e.operator, e.values, restricted_domains, well_known_labels
                )
                if problem is not None:
                    return f"invalid {kind} node affinity, {problem}"
    return None


# -- one pod against one concrete node -------------------------------------------------------

AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
PORTS_TAKEN = "node(s) didn't have free ports for the requested pod ports"


def insufficient_resources(
    requests: Mapping[str, int], allocatable: Mapping[str, int], requested: Mapping[str, int]
) -> list[str]:
    """kube-scheduler's resource-fit reasons (``Too many pods``, ``Insufficient cpu``)."""
    reasons: list[str] = []
    for name in sorted(requests):
        wanted = requests[name]
        if wanted <= 0:
            continue
        if wanted > allocatable.get(name, 0) - requested.get(name, 0):
            reasons.append("Too many pods" if name == PODS else f"Insufficient {name}")
    return reasons


def ports_conflict(wanted: Sequence[HostPort], used: Sequence[HostPort]) -> bool:
    return any(w.conflicts(u) for w in wanted for u in used)


def node_fit_problem(  # noqa: PLR0917 - the binder calls it positionally
    pod: PodRequest,
    labels: Mapping[str, str],
    taints: Sequence[Taint],
    allocatable: Mapping[str, int],
    requested: Mapping[str, int],
    used_ports: Sequence[HostPort],
) -> str | None:
    """Why kube-scheduler would not place ``pod`` on this node, or None when it fits.

    Checks run in kube-scheduler's filter order: taints, node affinity, host ports, resources.
    """
    taint = tolerates_all(pod.tolerations, taints)
    if taint is not None:
        return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    if not any(term.matches_labels(labels) for term in pod.requirement_terms):
        return AFFINITY_MISMATCH
    if ports_conflict(pod.host_ports, used_ports):
        return PORTS_TAKEN
    reasons = insufficient_resources(pod.requests, allocatable, requested)
    if reasons:
        return ", ".join(reasons)
    return None
