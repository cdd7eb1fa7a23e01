"""kube-scheduler's filters and scores that look at other pods: topology spread and pod
(anti-)affinity, for the embedded binder.

They follow ``k8s.io/kubernetes:pkg/scheduler/framework/plugins/podtopologyspread`` and
``interpodaffinity``. A :class:`PodTopology` indexes the cluster once per scheduling pass;
counts for each distinct constraint are built the first time a pod needs them and updated
with every pod the pass binds (:meth:`PodTopology.record`), so a pass over thousands of pods
does not rescan every pod for every pod. Within a pass counts only grow, which keeps each
spread constraint's global minimum cheap to maintain.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api.core import (
    LabelSelector,
    LabelSelectorRequirement,
    Namespace,
    Node,
    Pod,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from nodewright.scheduling.model import PodRequest
from nodewright.scheduling.pods import taints_from_api
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.selectors import label_selector_matches
from nodewright.scheduling.taints import NO_EXECUTE, NO_SCHEDULE, Taint, Toleration, tolerates_all

# kube-scheduler's reasons, as its FailedScheduling message counts them.
SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL_MISSING = f"{SPREAD_MISMATCH} (missing required label)"
AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_MISMATCH = "node(s) didn't satisfy existing pods anti-affinity rules"

DO_NOT_SCHEDULE = "DoNotSchedule"
HONOR = "Honor"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: Upstream's highest node score; each scoring plugin's share is normalised to it.
MAX_NODE_SCORE = 100.0


def _selector_key(selector: LabelSelector | None) -> str:
    return "null" if selector is None else json.dumps(selector.to_dict(), sort_keys=True)


def _with_label_keys(
    selector: LabelSelector | None,
    labels: Mapping[str, str],
    match_keys: Iterable[str],
    mismatch_keys: Iterable[str] = (),
) -> LabelSelector | None:
    """The selector narrowed by ``matchLabelKeys`` (same value) and ``mismatchLabelKeys``
    (other value), for keys the incoming pod carries; a null selector stays null."""
    extra = [
        LabelSelectorRequirement(key=key, operator=operator, values=[labels[key]])
        for keys, operator in ((match_keys, "In"), (mismatch_keys, "NotIn"))
        for key in keys
        if key in labels
    ]
    if selector is None or not extra:
        return selector
    return LabelSelector(
        match_labels=dict(selector.match_labels),
        match_expressions=[*selector.match_expressions, *extra],
    )


@dataclass(frozen=True)
class _Term:
    """A pod affinity term resolved against one pod: which namespaces and labels it selects."""

    namespaces: frozenset[str] | None  # None: every namespace
    selector: LabelSelector | None = field(compare=False)
    selector_key: str
    topology_key: str

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        return label_selector_matches(self.selector, labels)


@dataclass
class _TermCounts:
    """Per term, how many assigned pods it selects in each topology domain.

    For required affinity upstream counts only pods that match every term (``require_all``);
    for anti-affinity and preferences each term counts on its own.
    """

    terms: tuple[_Term, ...]
    require_all: bool
    counts: list[Counter[str]]

    def add(
        self, namespace: str, labels: Mapping[str, str], node_labels: Mapping[str, str]
    ) -> None:
        matched = [term.selects(namespace, labels) for term in self.terms]
        if self.require_all and not all(matched):
            return
        for index, term in enumerate(self.terms):
            value = node_labels.get(term.topology_key)
            if matched[index] and value is not None:
                self.counts[index][value] += 1

    def any_counted(self) -> bool:
        return any(self.counts)


@dataclass
class _SpreadCounts:
    """Matching pods per domain for one spread constraint, over the nodes it considers."""

    namespace: str
    selector: LabelSelector | None
    domains: dict[str, str]  # node name -> domain, for the nodes the constraint considers
    counts: Counter[str]
    #: How many domains hold each count, so the minimum survives increments cheaply.
    histogram: Counter[int]
    minimum: int

    def add(self, pod: AssignedPod) -> None:
        domain = self.domains.get(pod.node)
        if (
            domain is None
            or pod.deleting
            or pod.namespace != self.namespace
            or not label_selector_matches(self.selector, pod.labels)
        ):
            return
        before = self.counts[domain]
        self.counts[domain] = before + 1
        self.histogram[before] -= 1
        self.histogram[before + 1] += 1
        if self.histogram[before] == 0:
            del self.histogram[before]
            if before == self.minimum:
                self.minimum = min(self.histogram)


@dataclass(frozen=True)
class _Spread:
    """One of the incoming pod's spread constraints, with its shared counts."""

    max_skew: int
    topology_key: str
    min_domains: int | None
    self_match: int
    counts: _SpreadCounts

    def global_minimum(self) -> int:
        domains = len(self.counts.counts)
        if self.min_domains is not None and domains < self.min_domains:
            return 0
        return self.counts.minimum if domains else 0

    def limit(self) -> SpreadLimit:
        """The most matching pods a domain may hold now for the pod to join it."""
        return SpreadLimit(
            self.topology_key,
            self.counts.counts,
            self.max_skew + self.global_minimum() - self.self_match,
        )


@dataclass(frozen=True, slots=True)
class SpreadLimit:
    """A spread constraint frozen for one pod's pass over the nodes: a node is feasible iff
    its domain holds at most ``most`` matching pods (``count + self - min <= maxSkew``)."""

    topology_key: str
    counts: Mapping[str, int]
    most: int


@dataclass(frozen=True)
class AssignedPod:
    """What the topology checks read from a pod bound to a node."""

    namespace: str
    labels: Mapping[str, str]
    node: str
    deleting: bool


class PodTopology:
    """Where pods run, indexed for the spread and pod-affinity checks of one pass."""

    def __init__(
        self,
        nodes: Sequence[Node],
        assigned: Iterable[AssignedPod],
        repelling: Iterable[tuple[Pod, str]],
        namespaces: Iterable[Namespace],
        pod_namespaces: Iterable[str],
    ) -> None:
        """``assigned``: the pods bound to nodes that have not finished; ``repelling``: those
        of them with required pod anti-affinity, with their nodes; ``pod_namespaces``: the
        namespaces of every pod that has not finished (a namespace with pods has labels even
        without its object). Pods bound to nodes not in ``nodes`` are left out."""
        self._node_labels: dict[str, Mapping[str, str]] = {
            node.name: node.metadata.labels for node in nodes
        }
        self._node_taints: dict[str, tuple[Taint, ...]] = {
            node.name: tuple(
                t
                for t in taints_from_api(node.spec.taints)
                if t.effect in (NO_SCHEDULE, NO_EXECUTE)
            )
            for node in nodes
        }
        node_labels = self._node_labels
        self._assigned: list[AssignedPod] = [pod for pod in assigned if pod.node in node_labels]
        #: Assigned pods with required anti-affinity, and their nodes.
        self._anti_affinity_pods: list[tuple[Pod, str]] = [
            (pod, node) for pod, node in repelling if node in node_labels
        ]
        self._namespace_labels: dict[str, Mapping[str, str]] = {}
        for namespace in namespaces:
            self._namespace_labels[namespace.name] = {
                **namespace.metadata.labels,
                NAMESPACE_NAME_LABEL: namespace.name,
            }
        for name in pod_namespaces:
            self._namespace_labels.setdefault(name, {NAMESPACE_NAME_LABEL: name})
        self._spreads: dict[tuple[object, ...], _SpreadCounts] = {}
        self._terms: dict[tuple[object, ...], _TermCounts] = {}
        #: Required anti-affinity of assigned pods: term -> pods per domain.
        self._holders: dict[_Term, Counter[str]] | None = None
        self._repelled: dict[tuple[object, ...], dict[str, frozenset[str]]] = {}
        self._version = 0

    def _add_assigned(self, pod: Pod, node_name: str) -> AssignedPod:
        assigned = AssignedPod(pod.namespace, pod.metadata.labels, node_name, pod.deleting)
        self._assigned.append(assigned)
        if _required_terms(pod, anti=True):
            self._anti_affinity_pods.append((pod, node_name))
        return assigned

    # -- the incoming pod ------------------------------------------------------------------

    def constraints(self, pod: Pod, request: PodRequest) -> PodConstraints | None:
        """What the pod's placement must respect beyond its own node fit; None for nothing."""
        repelled = self._repelled_from(pod)
        spec = pod.spec
        affinity = spec.affinity
        if not (
            spec.topology_spread_constraints
            or repelled
            or (affinity and (affinity.pod_affinity or affinity.pod_anti_affinity))
        ):
            return None
        hard = [
            c for c in spec.topology_spread_constraints if c.when_unsatisfiable == DO_NOT_SCHEDULE
        ]
        soft = [
            c for c in spec.topology_spread_constraints if c.when_unsatisfiable != DO_NOT_SCHEDULE
        ]
        return PodConstraints(
            spreads=tuple(self._spread(pod, request, c, hard) for c in hard),
            preferred_spreads=tuple(self._spread(pod, request, c, soft) for c in soft),
            affinity=self._term_counts(pod, _required_terms(pod, anti=False), require_all=True),
            self_affine=all(
                term.selects(pod.namespace, pod.metadata.labels)
                for term in self._resolve(pod, _required_terms(pod, anti=False))
            ),
            anti_affinity=self._term_counts(
                pod, _required_terms(pod, anti=True), require_all=False
            ),
            repelled=repelled,
            preferred=tuple(
                (weight, self._term_counts(pod, [term], require_all=False))
                for weight, term in _preferred_terms(pod)
            ),
        )

    def _spread(
        self,
        pod: Pod,
        request: PodRequest,
        constraint: TopologySpreadConstraint,
        siblings: Sequence[TopologySpreadConstraint],
    ) -> _Spread:
        selector = _with_label_keys(
            constraint.label_selector, pod.metadata.labels, constraint.match_label_keys
        )
        honor_affinity = (constraint.node_affinity_policy or HONOR) == HONOR
        honor_taints = constraint.node_taints_policy == HONOR
        # Upstream counts only nodes that carry every key the pod's constraints of this kind use.
        keys = frozenset(c.topology_key for c in siblings)
        terms = request.requirement_terms if honor_affinity else None
        tolerations = request.tolerations if honor_taints else None
        group: tuple[object, ...] = (pod.namespace, constraint.topology_key, keys)
        group += (_selector_key(selector), terms, tolerations)
        counts = self._spreads.get(group)
        if counts is None:
            nodes = self._spread_nodes(constraint.topology_key, keys, terms, tolerations)
            counts = self._count_spread(pod.namespace, selector, nodes)
            self._spreads[group] = counts
        return _Spread(
            max_skew=constraint.max_skew,
            topology_key=constraint.topology_key,
            min_domains=constraint.min_domains,
            self_match=1 if label_selector_matches(selector, pod.metadata.labels) else 0,
            counts=counts,
        )

    def _spread_nodes(
        self,
        key: str,
        keys: frozenset[str],
        terms: tuple[Requirements, ...] | None,
        tolerations: tuple[Toleration, ...] | None,
    ) -> dict[str, str]:
        """Node name -> domain, for the nodes a constraint considers.

        A node counts when it carries every key, matches the pod's node requirements
        (``nodeAffinityPolicy: Honor``, the default) and, with ``nodeTaintsPolicy: Honor``,
        has no taint the pod does not tolerate.
        """
        domains: dict[str, str] = {}
        for name, labels in self._node_labels.items():
            if not all(k in labels for k in keys):
                continue
            if terms is not None and not any(term.matches_labels(labels) for term in terms):
                continue
            if tolerations is not None and tolerates_all(tolerations, self._node_taints[name]):
                continue
            domains[name] = labels[key]
        return domains

    def _count_spread(
        self, namespace: str, selector: LabelSelector | None, domains: dict[str, str]
    ) -> _SpreadCounts:
        counts: Counter[str] = Counter(dict.fromkeys(domains.values(), 0))
        for assigned in self._assigned:
            if (
                assigned.namespace == namespace
                and not assigned.deleting
                and assigned.node in domains
                and label_selector_matches(selector, assigned.labels)
            ):
                counts[domains[assigned.node]] += 1
        histogram = Counter(counts.values())
        minimum = min(histogram) if histogram else 0
        return _SpreadCounts(namespace, selector, domains, counts, histogram, minimum)

    def _resolve(self, pod: Pod, terms: Sequence[PodAffinityTerm]) -> tuple[_Term, ...]:
        return tuple(self._resolve_term(pod, term) for term in terms)

    def _resolve_term(self, pod: Pod, term: PodAffinityTerm) -> _Term:
        """The term as seen from ``pod``: namespaces default to the pod's own."""
        names: set[str] = set(term.namespaces)
        namespaces: frozenset[str] | None
        selector = term.namespace_selector
        if selector is not None and not selector.match_labels and not selector.match_expressions:
            namespaces = None
        else:
            if selector is not None:
                names |= {
                    ns
                    for ns, labels in self._namespace_labels.items()
                    if label_selector_matches(selector, labels)
                }
            elif not names:
                names.add(pod.namespace)
            namespaces = frozenset(names)
        label_selector = _with_label_keys(
            term.label_selector,
            pod.metadata.labels,
            term.match_label_keys,
            term.mismatch_label_keys,
        )
        return _Term(namespaces, label_selector, _selector_key(label_selector), term.topology_key)

    def _term_counts(
        self, pod: Pod, terms: Sequence[PodAffinityTerm], *, require_all: bool
    ) -> _TermCounts | None:
        if not terms:
            return None
        resolved = self._resolve(pod, terms)
        group = (resolved, require_all)
        counts = self._terms.get(group)
        if counts is None:
            counts = _TermCounts(resolved, require_all, [Counter() for _ in resolved])
            for assigned in self._assigned:
                counts.add(assigned.namespace, assigned.labels, self._node_labels[assigned.node])
            self._terms[group] = counts
        return counts

    def _repelled_from(self, pod: Pod) -> dict[str, frozenset[str]]:
        """Domains whose pods' required anti-affinity selects ``pod``: key -> values."""
        holders = self._anti_affinity_holders()
        if not holders:
            return {}
        cache_key = (self._version, pod.namespace, tuple(sorted(pod.metadata.labels.items())))
        cached = self._repelled.get(cache_key)
        if cached is not None:
            return cached
        repelled: dict[str, set[str]] = {}
        for term, domains in holders.items():
            if term.selects(pod.namespace, pod.metadata.labels):
                repelled.setdefault(term.topology_key, set()).update(domains)
        result = {key: frozenset(values) for key, values in repelled.items()}
        self._repelled[cache_key] = result
        return result

    def _anti_affinity_holders(self) -> dict[_Term, Counter[str]]:
        if self._holders is None:
            self._holders = {}
            for pod, node_name in self._anti_affinity_pods:
                self._add_holder(pod, node_name)
        return self._holders

    def _add_holder(self, pod: Pod, node_name: str) -> None:
        assert self._holders is not None
        node_labels = self._node_labels[node_name]
        for term in self._resolve(pod, _required_terms(pod, anti=True)):
            value = node_labels.get(term.topology_key)
            if value is not None:
                self._holders.setdefault(term, Counter())[value] += 1

    # -- binding ---------------------------------------------------------------------------

    def record(self, pod: Pod, node_name: str) -> None:
        """Count a pod the pass just bound in every constraint it may now affect."""
        if node_name not in self._node_labels:
            return
        assigned = self._add_assigned(pod, node_name)
        node_labels = self._node_labels[node_name]
        for counts in self._spreads.values():
            counts.add(assigned)
        for term_counts in self._terms.values():
            term_counts.add(assigned.namespace, assigned.labels, node_labels)
        if self._holders is not None and _required_terms(pod, anti=True):
            self._add_holder(pod, node_name)
            self._version += 1


def has_required_terms(pod: Pod, *, anti: bool) -> bool:
    """The pod states required pod affinity (anti: anti-affinity)."""
    return bool(_required_terms(pod, anti=anti))


def _required_terms(pod: Pod, *, anti: bool) -> list[PodAffinityTerm]:
    affinity = pod.spec.affinity
    if affinity is None:
        return []
    rules = affinity.pod_anti_affinity if anti else affinity.pod_affinity
    return list(rules.required_during_scheduling_ignored_during_execution) if rules else []


def _preferred_terms(pod: Pod) -> list[tuple[int, PodAffinityTerm]]:
    """Preferred terms as ``(weight, term)``; anti-affinity weights are negative."""
    affinity = pod.spec.affinity
    if affinity is None:
        return []
    weighted: list[tuple[int, PodAffinityTerm]] = []
    for rules, sign in ((affinity.pod_affinity, 1), (affinity.pod_anti_affinity, -1)):
        if rules is not None:
            weighted.extend(
                (sign * w.weight, w.pod_affinity_term)
                for w in rules.preferred_during_scheduling_ignored_during_execution
            )
    return weighted


@dataclass(frozen=True)
class PodConstraints:
    """One pending pod's spread and pod-affinity rules, bound to the pass's live counts."""

    spreads: tuple[_Spread, ...]
    preferred_spreads: tuple[_Spread, ...]
    affinity: _TermCounts | None
    self_affine: bool
    anti_affinity: _TermCounts | None
    repelled: Mapping[str, frozenset[str]]
    preferred: tuple[tuple[int, _TermCounts | None], ...]

    @property
    def has_preferences(self) -> bool:
        return bool(self.preferred_spreads or self.preferred)

    @property
    def lasting(self) -> bool:
        """Whether a node these constraints reject stays rejected for the rest of a pass, for
        every pod of the same namespace, labels and rules: only anti-affinity rejects (its
        counts only grow as pods are bound), and nothing but the node's fit scores."""
        return not (self.spreads or self.affinity is not None or self.has_preferences)

    def limits(self) -> tuple[SpreadLimit, ...]:
        """Each spread's limit now; take once per pod, not once per node."""
        return tuple(spread.limit() for spread in self.spreads)

    def problem(self, labels: Mapping[str, str], limits: Sequence[SpreadLimit]) -> str | None:
        """Why kube-scheduler's PodTopologySpread or InterPodAffinity filter rejects the node."""
        for limit in limits:
            value = labels.get(limit.topology_key)
            if value is None:
                return SPREAD_LABEL_MISSING
            if limit.counts.get(value, 0) > limit.most:
                return SPREAD_MISMATCH
        if self.affinity is not None and not self._affinity_satisfied(labels):
            return AFFINITY_MISMATCH
        if self.anti_affinity is not None:
            for term, counts in zip(
                self.anti_affinity.terms, self.anti_affinity.counts, strict=True
            ):
                value = labels.get(term.topology_key)
                if value is not None and counts.get(value, 0) > 0:
                    return ANTI_AFFINITY_MISMATCH
        for key, values in self.repelled.items():
            if labels.get(key) in values:
                return EXISTING_ANTI_AFFINITY_MISMATCH
        return None

    def _affinity_satisfied(self, labels: Mapping[str, str]) -> bool:
        assert self.affinity is not None
        found = True
        for term, counts in zip(self.affinity.terms, self.affinity.counts, strict=True):
            value = labels.get(term.topology_key)
            if value is None:
                return False  # the node must carry every topology key
            if counts.get(value, 0) <= 0:
                found = False
        # The first of a group of pods that attract each other may go anywhere.
        return found or (not self.affinity.any_counted() and self.self_affine)

    def raw_scores(self, labels: Mapping[str, str]) -> tuple[float | None, float]:
        """Unnormalised preferences: pods matching ScheduleAnyway spreads in the node's
        domains (None when the node lacks a key), and the weighted preferred (anti-)affinity."""
        spread: float | None = 0.0
        for constraint in self.preferred_spreads:
            value = labels.get(constraint.topology_key)
            if value is None:
                spread = None
                break
            spread = (spread or 0.0) + constraint.counts.counts.get(value, 0)
        affinity = 0.0
        for weight, counts in self.preferred:
            if counts is None:
                continue
            (term,) = counts.terms
            value = labels.get(term.topology_key)
            if value is not None:
                affinity += weight * counts.counts[0].get(value, 0)
        return spread, affinity


def normalised_preferences(raw: Sequence[tuple[float | None, float]]) -> list[float]:
    """Each node's preference score, as upstream normalises PodTopologySpread (fewer matching
    pods scores higher) and InterPodAffinity (min-max), both with weight 2."""
    spreads = [s for s, _ in raw if s is not None]
    high_spread = max(spreads, default=0.0)
    low_spread = min(spreads, default=0.0)
    affinities = [a for _, a in raw]
    high_affinity, low_affinity = max(affinities, default=0.0), min(affinities, default=0.0)
    scores: list[float] = []
    for spread, affinity in raw:
        if spread is None:
            spread_score = 0.0
        elif high_spread == 0:
            spread_score = MAX_NODE_SCORE
        else:
            spread_score = MAX_NODE_SCORE * (high_spread + low_spread - spread) / high_spread
        affinity_score = 0.0
        if high_affinity > low_affinity:
            affinity_score = (
                MAX_NODE_SCORE * (affinity - low_affinity) / (high_affinity - low_affinity)
            )
        scores.append(2 * spread_score + 2 * affinity_score)
    return scores
