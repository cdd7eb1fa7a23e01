"""Every promise a scheduling result must keep, checked against the pods: each placed once,
each NodeClaim's cheapest type fits its pods, required pod anti-affinity and affinity, and
required topology spread (bench/README.md says what each check proves)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduling_cases import ZONES
from scheduling_prices import launch_options

from nodewright.api import core as api
from nodewright.api.labels import HOSTNAME_LABEL, ZONE_LABEL
from nodewright.scheduling.model import PodRequest, SchedulingResult


def selects(selector: api.LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Label-selector semantics: a missing selector selects nothing, an empty one all."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for e in selector.match_expressions:
        present = e.key in labels
        ok = {
            "In": present and labels.get(e.key) in e.values,
            "NotIn": not present or labels.get(e.key) not in e.values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(e.operator, False)
        if not ok:
            return False
    return True


def _selector_key(selector: api.LabelSelector | None) -> str:
    return "<nil>" if selector is None else selector.model_dump_json()


@dataclass
class Placement:
    """Where each pod of a result may run: the possible values of a topology key for the
    node it was placed on (one value once the NodeClaim is pinned, several before)."""

    result: SchedulingResult
    zones: frozenset[str]
    location: dict[str, tuple[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, claim in enumerate(self.result.new_node_claims):
            for pod in claim.pods:
                self.location.setdefault(pod.key, ("claim", index))
        for node_index, pods in enumerate(self.result.existing_nodes.values()):
            for pod in pods:
                self.location.setdefault(pod.key, ("node", node_index))
        self._zones: dict[int, frozenset[str]] = {}

    def domains(self, pod_key: str, topology_key: str) -> frozenset[str] | None:
        """Possible domains of the pod's node for ``topology_key``; None when unknown."""
        kind, index = self.location[pod_key]
        if topology_key == HOSTNAME_LABEL:
            return frozenset({f"{kind}-{index}"})
        if kind != "claim":
            return None
        claim = self.result.new_node_claims[index]
        if topology_key == ZONE_LABEL:
            if index not in self._zones:
                self._zones[index] = frozenset(
                    o.zone
                    for it in claim.instance_types
                    for o in it.offerings
                    if o.available and o.matches(claim.requirements)
                )
            return self._zones[index]
        requirement = claim.requirements.get(topology_key)
        if requirement is None or requirement.complement:
            return None
        return requirement.values

    def domain(self, pod_key: str, topology_key: str) -> str | None:
        """The single domain the pod will run in, or None while it could be several."""
        possible = self.domains(pod_key, topology_key)
        return next(iter(possible)) if possible is not None and len(possible) == 1 else None


@dataclass(frozen=True)
class Violation:
    """One broken promise: ``kind`` groups them in the report (placement, fit,
    anti-affinity, affinity, spread)."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def _placement_violations(
    requests: Sequence[PodRequest], result: SchedulingResult
) -> tuple[list[Violation], int]:
    placed: Counter[str] = Counter()
    for claim in result.new_node_claims:
        placed.update(p.key for p in claim.pods)
    for pods in result.existing_nodes.values():
        placed.update(p.key for p in pods)
    problems = []
    keys = {r.key for r in requests}
    for key, times in placed.items():
        if times > 1:
            problems.append(f"{key} placed {times} times")
        if key not in keys:
            problems.append(f"{key} placed but never asked for")
        if key in result.errors:
            problems.append(f"{key} both placed and reported unschedulable")
    missing = [key for key in keys if key not in placed and key not in result.errors]
    problems.extend(f"{key} neither placed nor reported" for key in sorted(missing))
    violations = [Violation("placement", problem) for problem in problems]
    unscheduled = len(keys) - len(keys & placed.keys())
    return violations, unscheduled


def _fit_violations(result: SchedulingResult) -> list[Violation]:
    violations = []
    for index, claim in enumerate(result.new_node_claims):
        options = launch_options(claim)
        if not options:
            violations.append(Violation("fit", f"NodeClaim {index} has no launchable offering"))
            continue
        price, cheapest = min(options, key=lambda option: option[0])
        allocatable = cheapest.allocatable()
        total: Counter[str] = Counter()
        for pod in claim.pods:
            total.update(pod.requests)
        short = [name for name, value in total.items() if value > allocatable.get(name, 0)]
        if short:
            violations.append(
                Violation(
                    "fit",
                    f"NodeClaim {index}: cheapest type {cheapest.name} (${price:.2f}/h) is "
                    f"short of {', '.join(sorted(short))} for its {len(claim.pods)} pods",
                )
            )
    return violations


def _term_namespaces(owner: api.Pod, term: api.PodAffinityTerm) -> frozenset[str] | None:
    """Namespaces a term selects in; None for all (a namespace selector is taken as all)."""
    if term.namespace_selector is not None:
        return None
    return frozenset(term.namespaces or [owner.namespace])


def _matching(
    pods: Sequence[api.Pod], selector: api.LabelSelector | None, namespaces: frozenset[str] | None
) -> set[str]:
    return {
        p.key
        for p in pods
        if (namespaces is None or p.namespace in namespaces)
        and selects(selector, p.metadata.labels)
    }


def _required_terms(pod: api.Pod, anti: bool) -> list[api.PodAffinityTerm]:
    affinity = pod.spec.affinity
    if affinity is None:
        return []
    block = affinity.pod_anti_affinity if anti else affinity.pod_affinity
    if block is None:
        return []
    return list(block.required_during_scheduling_ignored_during_execution)


TermGroups = dict[tuple[str, str, frozenset[str] | None], list[api.Pod]]


def _term_groups(
    pods: Sequence[api.Pod], *, anti: bool
) -> tuple[TermGroups, dict[str, api.LabelSelector | None]]:
    """The pods with a required (anti-)affinity term, grouped by the term's topology key,
    selector and namespaces, and each selector by its key."""
    groups: TermGroups = defaultdict(list)
    selectors: dict[str, api.LabelSelector | None] = {}
    for pod in pods:
        for term in _required_terms(pod, anti=anti):
            key = _selector_key(term.label_selector)
            selectors[key] = term.label_selector
            groups[(term.topology_key, key, _term_namespaces(pod, term))].append(pod)
    return groups, selectors


def _anti_affinity_violations(pods: Sequence[api.Pod], where: Placement) -> list[Violation]:
    """No pod matching a required anti-affinity term may share any possible domain with the
    term's owner (in either order of arrival, so this also covers inverse anti-affinity)."""
    groups, selectors = _term_groups(pods, anti=True)
    violations = []
    for (topology_key, selector_key, namespaces), owners in groups.items():
        matching = _matching(pods, selectors[selector_key], namespaces)
        crowd: Counter[str] = Counter()
        for key in matching:
            crowd.update(where.domains(key, topology_key) or ())
        for owner in owners:
            possible = where.domains(owner.key, topology_key)
            if possible is None:
                continue
            own = 1 if owner.key in matching else 0
            shared = sorted(d for d in possible if crowd[d] - own > 0)
            if shared:
                violations.append(
                    Violation(
                        "anti-affinity",
                        f"{owner.key} on {topology_key} shares {shared[0]} with "
                        f"{crowd[shared[0]] - own} matching pod(s)",
                    )
                )
    return violations


def _affinity_violations(pods: Sequence[api.Pod], where: Placement) -> list[Violation]:
    """A pod with required affinity runs where a matching pod runs; pods that select
    themselves may bootstrap one domain, so they must not split across new domains."""
    groups, selectors = _term_groups(pods, anti=False)
    violations = []
    for (topology_key, selector_key, namespaces), owners in groups.items():
        matching = _matching(pods, selectors[selector_key], namespaces)
        selecting = [o for o in owners if o.key in matching]
        claims = {where.location[o.key] for o in selecting}
        own_domains: set[str] = set()
        for owner in selecting:
            domain = where.domain(owner.key, topology_key)
            if domain is None and len(claims) > 1:
                violations.append(
                    Violation(
                        "affinity",
                        f"{owner.key} on {topology_key}: its node is not pinned to one domain "
                        "while its group spans several nodes",
                    )
                )
            elif domain is not None:
                own_domains.add(domain)
        owner_keys = {o.key for o in owners}
        others = {where.domain(k, topology_key) for k in matching - owner_keys} - {None}
        if len(own_domains - others) > 1:
            violations.append(
                Violation(
                    "affinity",
                    f"group {selector_key} on {topology_key} split across "
                    f"{sorted(own_domains - others)}",
                )
            )
        for owner in owners:
            if owner.key in matching:
                continue
            domain = where.domain(owner.key, topology_key)
            if domain is None or not any(where.domain(k, topology_key) == domain for k in matching):
                violations.append(
                    Violation("affinity", f"{owner.key}: no matching pod in its {topology_key}")
                )
    return violations


def _spread_violations(pods: Sequence[api.Pod], where: Placement) -> list[Violation]:
    """Required topology spread, checked in the form a finished result can prove.

    A pod that carries a constraint and matches its selector was admitted to domain d only
    if count(d) + 1 - min <= maxSkew, counting every matching pod on a node pinned to a
    domain; counts only grow, so at the end, per domain, the constrained self-matching pods
    must number at most maxSkew + (final min). For hostname the min is 0, because a new
    node is always possible. Final counts of all matching pods are not bounded by maxSkew:
    pods without the constraint may land anywhere after the last constrained one.
    """
    groups: dict[tuple[str, str, int, str], list[api.Pod]] = defaultdict(list)
    selectors: dict[str, api.LabelSelector | None] = {}
    for pod in pods:
        for c in pod.spec.topology_spread_constraints:
            if c.when_unsatisfiable != "DoNotSchedule":
                continue
            key = _selector_key(c.label_selector)
            selectors[key] = c.label_selector
            groups[(c.topology_key, key, c.max_skew, pod.namespace)].append(pod)
    violations = []
    for (topology_key, selector_key, max_skew, namespace), owners in groups.items():
        matching = _matching(pods, selectors[selector_key], frozenset({namespace}))
        counts: Counter[str] = Counter()
        for key in matching:
            domain = where.domain(key, topology_key)
            if domain is not None:
                counts[domain] += 1
        if topology_key == HOSTNAME_LABEL:
            floor = 0
        else:
            universe = where.zones if topology_key == ZONE_LABEL else set(counts)
            floor = min((counts[d] for d in universe), default=0)
        admitted: Counter[str] = Counter()
        for owner in owners:
            domain = where.domain(owner.key, topology_key)
            if domain is None:
                violations.append(
                    Violation(
                        "spread", f"{owner.key} on {topology_key}: its node is not pinned to one"
                    )
                )
            elif owner.key in matching:
                admitted[domain] += 1
        for domain, count in sorted(admitted.items()):
            if count > max_skew + floor:
                violations.append(
                    Violation(
                        "spread",
                        f"{selector_key} on {topology_key}: {count} constrained pods in "
                        f"{domain}, more than maxSkew {max_skew} + min {floor}",
                    )
                )
    return violations


def validate(
    pods: Sequence[api.Pod],
    requests: Sequence[PodRequest],
    result: SchedulingResult,
    zones: Iterable[str] = ZONES,
) -> tuple[list[Violation], int]:
    """Every broken promise in ``result`` (empty when sound) and the unscheduled count."""
    violations, unscheduled = _placement_violations(requests, result)
    violations += _fit_violations(result)
    where = Placement(result, frozenset(zones))
    placed = [p for p in pods if p.key in where.location]
    violations += _anti_affinity_violations(placed, where)
    violations += _affinity_violations(placed, where)
    violations += _spread_violations(placed, where)
    return violations, unscheduled
