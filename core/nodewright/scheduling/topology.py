"""Topology spread, pod affinity and pod anti-affinity, counted the way Karpenter counts them.

Each distinct constraint a pod states (a :class:`TopologyTerm`) becomes one :class:`TopologyGroup`
per solve, shared by every pod that states it. A group knows its domains (the values of its
topology key that NodePools, instance types and nodes can have) and how many selected pods
each domain holds. Before a pod is placed on a node or NodeClaim the group answers which
domains the pod may use there (:meth:`Topology.requirements`); after it is placed the group
counts it (:meth:`Topology.record`). The rules follow Karpenter's ``topologygroup.go``:

* **spread**: a domain is eligible when ``count + selfMatch - globalMin <= maxSkew``; the least
  loaded eligible domain is chosen; hostname domains always have a global minimum of zero
  (a new node can always be made);
* **pod affinity**: domains that already hold a selected pod; a pod that selects itself may
  start anywhere while no such domain exists;
* **pod anti-affinity**: domains holding no selected pod. A NodeClaim not yet pinned to one
  domain blocks every domain it could still land in. Required anti-affinity also works
  backwards ("inverse" groups): pods it selects must avoid the owner's domains.

Ties are broken by domain name, so a solve is deterministic (Karpenter's are random).
Everything here is pure and belongs to one solve.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api.labels import HOSTNAME_LABEL
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.taints import Taint
from nodewright.scheduling.topologyterm import (
    AFFINITY,
    ANTI_AFFINITY,
    HONOR,
    IGNORE,
    SPREAD,
    UNBOUNDED_SKEW,
    NodeFilter,
    TopologyTerm,
)

__all__ = [
    "AFFINITY",
    "ANTI_AFFINITY",
    "HONOR",
    "IGNORE",
    "SPREAD",
    "UNBOUNDED_SKEW",
    "DomainSource",
    "NodeFilter",
    "NodeLabels",
    "PlacedPod",
    "PodTopology",
    "Topology",
    "TopologyGroup",
    "TopologyTerm",
    "fallback_domains",
    "term_domains",
]


@dataclass(frozen=True)
class PlacedPod:
    """A pod already running on a node, as topology counting sees it."""

    namespace: str
    labels: Mapping[str, str]
    node_name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[Taint, ...] = ()
    #: Its required anti-affinity terms: they keep pods they select out of its domain.
    anti_affinity: tuple[TopologyTerm, ...] = ()
    #: How many pods on the node it stands for: replicas alike in namespace, labels and
    #: anti-affinity count as one entry, so counting costs follow nodes, not pods.
    count: int = 1
    #: ``node_labels`` as requirements, when the caller keeps them from pass to pass.
    node_requirements: Requirements | None = None
    #: ``labels`` as sorted pairs, when the caller has them: pods alike in namespace and
    #: labels are asked about a selector once (:class:`~.topologybase.TopologyBase`).
    label_key: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class DomainSource:
    """Where one NodePool can put nodes: per topology key, the values its nodes may take."""

    domains: Mapping[str, frozenset[str]]
    taints: tuple[Taint, ...] = ()
    #: Per key, the domains it reaches only through fallback offerings (Azure's regional
    #: VMs, zone ``0``): a spread fills them last among equally loaded domains.
    fallback: Mapping[str, frozenset[str]] = field(default_factory=dict)


# -- one constraint during one solve ----------------------------------------------------------


class TopologyGroup:
    """A :class:`TopologyTerm` with its domains and per-domain counts."""

    __slots__ = (
        "counts",
        "empty",
        "epoch",
        "fallback",
        "hostname",
        "key",
        "kind",
        "monotonic",
        "nonempty",
        "term",
    )

    def __init__(
        self, term: TopologyTerm, domains: Iterable[str], fallback: Iterable[str] = ()
    ) -> None:
        self.term = term
        #: Domains a spread picks last among equally loaded ones (see DomainSource.fallback).
        self.fallback = frozenset(fallback)
        self.kind = term.kind
        self.key = term.key
        self.hostname = term.key == HOSTNAME_LABEL
        #: True when a domain this group turned away stays turned away: anti-affinity only
        #: ever fills domains, and a hostname spread's floor is always zero.
        self.monotonic = term.kind == ANTI_AFFINITY or (term.kind == SPREAD and self.hostname)
        self.counts: dict[str, int] = dict.fromkeys(domains, 0)
        self.empty: set[str] = set(self.counts)
        self.nonempty = 0
        #: Grows whenever a domain this group refused may have become acceptable: for spreads
        #: on every count (the floor may rise), for affinity when a domain gets its first pod.
        self.epoch = 0

    @classmethod
    def counted(
        cls,
        term: TopologyTerm,
        counts: dict[str, int],
        empty: set[str],
        fallback: frozenset[str] = frozenset(),
    ) -> TopologyGroup:
        """A group that starts from ``counts`` (every domain present, with its pods) and
        ``empty`` (those of them without a pod), both taken over."""
        group = cls(term, (), fallback)
        group.counts = counts
        group.empty = empty
        group.nonempty = len(counts) - len(empty)
        return group

    def register(self, domain: str) -> None:
        if domain not in self.counts:
            self.counts[domain] = 0
            self.empty.add(domain)

    def record(self, domains: Iterable[str], pods: int = 1) -> None:
        """Count ``pods`` more pods in each of ``domains``."""
        for domain in domains:
            count = self.counts.get(domain, 0)
            if count == 0:
                self.nonempty += 1
                self.empty.discard(domain)
                if self.kind == AFFINITY:
                    self.epoch += 1
            self.counts[domain] = count + pods
            if self.kind == SPREAD:
                self.epoch += 1

    # -- which domains a pod may use --------------------------------------------------------

    def allowed(
        self,
        selects_pod: bool,
        pod_domains: Requirement | None,
        node_domains: Requirement | None,
        hostname: str | None,
    ) -> list[str]:
        """Domains the pod may use on a node whose key is ``node_domains`` (None: any).

        For hostname groups ``hostname`` is the candidate's one domain.
        """
        if self.kind == SPREAD:
            return self._spread(selects_pod, pod_domains, node_domains, hostname)
        if self.kind == AFFINITY:
            return self._affinity(selects_pod, pod_domains, node_domains, hostname)
        return self._anti_affinity(pod_domains, node_domains, hostname)

    def valid_domains(self, selects_pod: bool, pod_domains: Requirement | None) -> list[str]:
        """Every domain the pod could go to now, whatever the node (Karpenter's valid domains):
        a spread allows each domain within its skew, not only the emptiest of them."""
        if self.kind != SPREAD:
            return self.allowed(selects_pod, pod_domains, None, None)
        own = 1 if selects_pod else 0
        minimum = self._min_count(pod_domains)
        return [
            domain
            for domain, count in sorted(self.counts.items())
            if count + own - minimum <= self.term.max_skew
        ]

    def _candidates(self, node_domains: Requirement | None) -> list[str]:
        if node_domains is not None and not node_domains.complement:
            return sorted(d for d in node_domains.values if d in self.counts)
        if node_domains is None:
            return sorted(self.counts)
        return sorted(d for d in self.counts if node_domains.has(d))

    def _min_count(self, pod_domains: Requirement | None) -> int:
        if self.hostname:
            return 0
        counts = [
            count
            for domain, count in self.counts.items()
            if pod_domains is None or pod_domains.has(domain)
        ]
        minimum = min(counts) if counts else UNBOUNDED_SKEW
        if self.term.min_domains is not None and len(counts) < self.term.min_domains:
            minimum = 0
        return minimum

    def _spread(
        self,
        selects_pod: bool,
        pod_domains: Requirement | None,
        node_domains: Requirement | None,
        hostname: str | None,
    ) -> list[str]:
        own = 1 if selects_pod else 0
        if hostname is not None:
            count = self.counts.get(hostname, 0) + own
            return [hostname] if count <= self.term.max_skew else []
        minimum = self._min_count(pod_domains)
        best: str | None = None
        best_rank = (UNBOUNDED_SKEW, True)
        fallback = self.fallback
        for domain in self._candidates(node_domains):
            count = self.counts[domain] + own
            if count - minimum > self.term.max_skew:
                continue
            rank = (count, domain in fallback)
            if rank < best_rank:
                best, best_rank = domain, rank
        return [best] if best is not None else []

    def _any_selected_in(self, pod_domains: Requirement | None) -> bool:
        if self.nonempty == 0:
            return False
        return any(
            count > 0 and (pod_domains is None or pod_domains.has(domain))
            for domain, count in self.counts.items()
        )

    def _affinity(
        self,
        selects_pod: bool,
        pod_domains: Requirement | None,
        node_domains: Requirement | None,
        hostname: str | None,
    ) -> list[str]:
        if hostname is not None:
            if pod_domains is not None and not pod_domains.has(hostname):
                return []
            if self.counts.get(hostname, 0) > 0:
                return [hostname]
            if selects_pod and not self._any_selected_in(pod_domains):
                return [hostname]
            return []
        options = [
            domain
            for domain in self._candidates(node_domains)
            if self.counts[domain] > 0 and (pod_domains is None or pod_domains.has(domain))
        ]
        if options or not selects_pod or self._any_selected_in(pod_domains):
            return options
        # Bootstrap: the first selected pod may start anywhere; prefer the node's own domain.
        for domain in self._candidates(node_domains):
            if pod_domains is None or pod_domains.has(domain):
                options.append(domain)
                break
        for domain in sorted(self.counts):
            if pod_domains is None or pod_domains.has(domain):
                if domain not in options:
                    options.append(domain)
                break
        return options

    def _anti_affinity(
        self,
        pod_domains: Requirement | None,
        node_domains: Requirement | None,
        hostname: str | None,
    ) -> list[str]:
        if hostname is not None:
            return [hostname] if self.counts.get(hostname, 0) == 0 else []
        if not self.empty:
            return []
        return [
            domain
            for domain in sorted(self.empty)
            if (node_domains is None or node_domains.has(domain))
            and (pod_domains is None or pod_domains.has(domain))
        ]

    def describe(self, pod_domains: Requirement | None, node_domains: Requirement | None) -> str:
        """Karpenter's ``unsatisfiable topology constraint`` message."""
        shown = sorted(self.counts.items())
        text = ", ".join(f"{k}={v}" for k, v in shown[:25])
        if len(shown) > 25:
            text += f" and {len(shown) - 25} other(s)"
        pod = str(pod_domains) if pod_domains is not None else f"{self.key} Exists"
        node = str(node_domains) if node_domains is not None else f"{self.key} Exists"
        return (
            f"unsatisfiable topology constraint for {self.kind}, key={self.key} "
            f"(counts = {{{text}}}, podDomains = {pod}, nodeDomains = {node})"
        )


# -- every constraint of one solve ------------------------------------------------------------

#: A pod as selectors see it: its namespace and sorted labels.
_PodKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass
class PodTopology:
    """The groups that matter for one pod at its current relaxation."""

    #: Groups that decide where the pod may go: its own terms plus inverse groups
    #: that select it; and whether each selects the pod itself.
    constraining: list[TopologyGroup] = field(default_factory=list)
    selects: list[bool] = field(default_factory=list)
    #: Groups that count the pod once it is placed (they select it), and inverse groups it
    #: owns (they record where it went).
    counting: list[TopologyGroup] = field(default_factory=list)
    owned_inverse: list[TopologyGroup] = field(default_factory=list)
    #: True when any constraining group is not monotonic (its answer can turn from no to yes).
    volatile: bool = False


def term_domains(sources: Sequence[DomainSource], term: TopologyTerm) -> set[str]:
    """The domains of ``term``'s key the NodePools can put nodes in (those whose taints the
    term's node filter does not tolerate left out, when it honors taints)."""
    found: set[str] = set()
    honor_taints = term.node_filter is not None and term.node_filter.honor_taints
    for source in sources:
        values = source.domains.get(term.key)
        if not values:
            continue
        if (
            honor_taints
            and term.node_filter is not None
            and not term.node_filter.tolerated(source.taints)
        ):
            continue
        found |= values
    return found


def fallback_domains(
    sources: Sequence[DomainSource], term: TopologyTerm, domains: set[str]
) -> set[str]:
    """Of ``domains``, those every pool reaches only through fallback offerings."""
    fallback = set(domains)
    for source in sources:
        values = source.domains.get(term.key)
        if values:
            fallback -= values - source.fallback.get(term.key, frozenset())
    return fallback


class NodeLabels:
    """Each node's labels as requirements, built once per node (the running pods bring
    those the caller keeps from pass to pass)."""

    def __init__(self, placed: Sequence[PlacedPod]) -> None:
        self._requirements: dict[str, Requirements] = {
            pod.node_name: pod.node_requirements
            for pod in placed
            if pod.node_requirements is not None
        }

    def of(self, node_name: str, labels: Mapping[str, str]) -> Requirements:
        found = self._requirements.get(node_name)
        if found is None:
            found = self._requirements[node_name] = Requirements.from_labels(labels)
        return found


class Topology:
    """Every topology constraint of one solve, with its counts."""

    def __init__(
        self,
        terms: Iterable[TopologyTerm],
        inverse_terms: Iterable[TopologyTerm],
        sources: Sequence[DomainSource],
        nodes: Iterable[tuple[str, Mapping[str, str], tuple[Taint, ...]]],
        placed: Sequence[PlacedPod],
    ) -> None:
        self._sources = sources
        node_list = list(nodes)
        #: Each node's labels as requirements, built once for every group's node filter.
        self._labels = NodeLabels(placed)
        self.groups: dict[TopologyTerm, TopologyGroup] = {}
        self.inverse: dict[TopologyTerm, TopologyGroup] = {}
        for term in terms:
            if term not in self.groups:
                self.groups[term] = self._new_group(term, node_list, placed)
        for pod in placed:
            for term in pod.anti_affinity:
                group = self._inverse_group(term)
                domain = pod.node_labels.get(term.key)
                if domain is not None:
                    group.record((domain,), pod.count)
        for term in inverse_terms:
            self._inverse_group(term)
        for name, labels, _ in node_list:
            self.register_hostname(labels.get(HOSTNAME_LABEL, name))
        self._selecting: dict[_PodKey, list[TopologyGroup]] = {}
        self._selected_by_inverse: dict[_PodKey, list[TopologyGroup]] = {}

    def _new_group(
        self,
        term: TopologyTerm,
        nodes: Sequence[tuple[str, Mapping[str, str], tuple[Taint, ...]]],
        placed: Sequence[PlacedPod],
    ) -> TopologyGroup:
        domains = term_domains(self._sources, term)
        group = TopologyGroup(term, domains, fallback_domains(self._sources, term, domains))
        node_filter = term.node_filter
        for name, labels, taints in nodes:
            domain = labels.get(term.key)
            if domain is None:
                continue
            if node_filter is None or node_filter.matches(
                taints, self._labels.of(name, labels), allow_undefined=False
            ):
                group.register(domain)
        for pod in placed:
            if not term.selects(pod.namespace, pod.labels):
                continue
            domain = pod.node_labels.get(term.key)
            if domain is None and group.hostname:
                domain = pod.node_name
            if domain is None:
                continue
            if node_filter is not None and not node_filter.matches(
                pod.node_taints,
                self._labels.of(pod.node_name, pod.node_labels),
                allow_undefined=False,
            ):
                continue
            group.record((domain,), pod.count)
        return group

    def _inverse_group(self, term: TopologyTerm) -> TopologyGroup:
        group = self.inverse.get(term)
        if group is None:
            group = TopologyGroup(term, term_domains(self._sources, term))
            self.inverse[term] = group
        return group

    @classmethod
    def assembled(
        cls,
        groups: dict[TopologyTerm, TopologyGroup],
        inverse: dict[TopologyTerm, TopologyGroup],
    ) -> Topology:
        """A topology of groups counted elsewhere (see :mod:`.topologybase`), ``inverse`` in
        the order ``__init__`` would have created them."""
        topology = cls((), (), (), (), ())
        topology.groups = groups
        topology.inverse = inverse
        return topology

    def register_hostname(self, hostname: str) -> None:
        for group in (*self.groups.values(), *self.inverse.values()):
            if group.hostname:
                group.register(hostname)

    # -- per pod ------------------------------------------------------------------------------

    def for_pod(
        self,
        namespace: str,
        labels: Mapping[str, str],
        label_key: tuple[tuple[str, str], ...],
        active: Iterable[TopologyTerm],
        required_anti: Iterable[TopologyTerm],
    ) -> PodTopology:
        """The groups that constrain and count a pod whose active terms are ``active``."""
        cache_key = (namespace, label_key)
        selecting = self._selecting.get(cache_key)
        if selecting is None:
            selecting = [g for t, g in self.groups.items() if t.selects(namespace, labels)]
            self._selecting[cache_key] = selecting
        inverse = self._selected_by_inverse.get(cache_key)
        if inverse is None:
            inverse = [g for t, g in self.inverse.items() if t.selects(namespace, labels)]
            self._selected_by_inverse[cache_key] = inverse
        constraining = [self.groups[t] for t in active]
        constraining.extend(inverse)
        return PodTopology(
            constraining=constraining,
            selects=[g.term.selects(namespace, labels) for g in constraining],
            counting=selecting,
            owned_inverse=[self.inverse[t] for t in required_anti],
            volatile=any(not g.monotonic for g in constraining),
        )

    def requirements(
        self,
        pod: PodTopology,
        pod_requirements: Requirements,
        node_requirements: Requirements,
        hostname: str,
    ) -> tuple[list[Requirement], TopologyGroup | None]:
        """Requirements the constraints add on a candidate node, or the group that refuses it.

        Hostname groups never add a requirement: the candidate is one host, and it is either
        allowed or refused.
        """
        added: list[Requirement] = []
        for group, selects in zip(pod.constraining, pod.selects, strict=True):
            pod_domains = pod_requirements.get(group.key)
            if group.hostname:
                allowed = group.allowed(selects, pod_domains, None, hostname)
                if not allowed:
                    return added, group
                continue
            node_domains = node_requirements.get(group.key)
            allowed = group.allowed(selects, pod_domains, node_domains, None)
            if not allowed:
                return added, group
            added.append(Requirement(group.key, False, frozenset(allowed)))
        return added, None

    def record(
        self,
        pod: PodTopology,
        taints: Sequence[Taint],
        requirements: Requirements,
        hostname: str,
        allow_undefined: bool,
    ) -> None:
        """Count a pod placed on a candidate with these final requirements."""
        for group in pod.counting:
            term = group.term
            if term.node_filter is not None and not term.node_filter.matches(
                taints, requirements, allow_undefined
            ):
                continue
            if group.hostname:
                group.record((hostname,))
                continue
            domains = requirements.get(group.key)
            if domains is None or domains.complement:
                continue
            # Anti-affinity blocks every domain the pod might still land in; spreads and
            # affinity count only a pinned domain.
            if group.kind == ANTI_AFFINITY or len(domains.values) == 1:
                group.record(domains.values)
        for group in pod.owned_inverse:
            if group.hostname:
                group.record((hostname,))
                continue
            domains = requirements.get(group.key)
            if domains is not None and not domains.complement:
                group.record(domains.values)
