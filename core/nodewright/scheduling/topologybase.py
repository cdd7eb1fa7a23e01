"""Topology counts shared by the trial solves of one disruption pass.

A consolidation pass asks the solver, candidate after candidate, where the pods of the
candidate would go if its node were gone. Each of those trials needs the topology counts of
the cluster without that node; building a :class:`~nodewright.scheduling.topology.Topology`
from scratch walks every node and every running pod for every constraint. A
:class:`TopologyBase` walks them once per pass, per constraint, and remembers what each node
contributes (the domains it registers, the pods it counts). A trial's groups are copies of
those counts with the leaving nodes' contributions taken out: exactly the groups
``Topology(terms, inverse, sources, nodes, placed)`` builds from the nodes and pods that stay.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api.labels import HOSTNAME_LABEL
from nodewright.scheduling.taints import Taint
from nodewright.scheduling.topology import (
    DomainSource,
    NodeLabels,
    PlacedPod,
    Topology,
    TopologyGroup,
    TopologyTerm,
    fallback_domains,
    term_domains,
)

#: An existing node as topology sees it: name, labels, taints.
NodeView = tuple[str, Mapping[str, str], tuple[Taint, ...]]


@dataclass
class _Counted:
    """One constraint counted over the whole cluster, and each node's share of the counts."""

    #: Every domain present, with the pods counted in it.
    counts: dict[str, int]
    #: Domains with no pod counted.
    empty: set[str]
    #: Why each domain is present apart from its pods: the NodePools that offer it and the
    #: nodes that register it, one each.
    refs: Counter[str]
    fallback: frozenset[str] = frozenset()
    #: Node name -> domains the node registers.
    node_refs: dict[str, list[str]] = field(default_factory=dict)
    #: Node name -> (domain, pods) its running pods add to the counts.
    node_counts: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def without(
        self, term: TopologyTerm, nodes: Collection[str], pods_of: Collection[str]
    ) -> TopologyGroup:
        """The group as it counts once ``nodes`` are no longer registered and the pods of
        ``pods_of`` no longer run."""
        counts = self.counts.copy()
        empty = self.empty.copy()
        touched: set[str] = set()
        lost: Counter[str] = Counter()
        for name in nodes:
            for domain in self.node_refs.get(name, ()):
                lost[domain] += 1
                touched.add(domain)
        for name in pods_of:
            for domain, pods in self.node_counts.get(name, ()):
                counts[domain] -= pods
                touched.add(domain)
        for domain in touched:
            if counts[domain] == 0:
                if self.refs[domain] - lost[domain] <= 0:
                    del counts[domain]
                    empty.discard(domain)
                else:
                    empty.add(domain)
        return TopologyGroup.counted(term, counts, empty, self.fallback)


class TopologyBase:
    """The topology of the cluster as it stands, counted once and shared by trial solves.

    ``sources`` are the NodePools' domain sources, ``nodes`` the existing nodes topology
    registers (in-flight NodeClaims left out), ``placed`` the running pods a trial may keep.
    """

    def __init__(
        self,
        sources: Sequence[DomainSource],
        nodes: Iterable[NodeView],
        placed: Sequence[PlacedPod],
    ) -> None:
        self._sources = sources
        self._labels = NodeLabels(placed)
        self._nodes = list(nodes)
        self._placed = placed
        self._groups: dict[TopologyTerm, _Counted] = {}
        self._inverse: dict[TopologyTerm, _Counted] = {}
        #: Required anti-affinity terms of the running pods, in order of the first pod that
        #: states each, with every (position, node) that states it.
        self._anti: dict[TopologyTerm, list[tuple[int, str]]] = {}
        #: Node name -> running pod entries that state a required anti-affinity term.
        self._anti_nodes: Counter[str] = Counter()
        for position, pod in enumerate(placed):
            for term in pod.anti_affinity:
                stating = self._anti.setdefault(term, [])
                if not stating or stating[-1][0] != position:
                    stating.append((position, pod.node_name))
            if pod.anti_affinity:
                self._anti_nodes[pod.node_name] += 1
        self._anti_total = sum(self._anti_nodes.values())
        #: (namespace, labels) -> positions of the running pods that carry them: a term's
        #: selector is asked once per distinct label set, not once per pod.
        self._alike: dict[tuple[str, tuple[tuple[str, str], ...]], list[int]] = {}
        for position, pod in enumerate(placed):
            key = pod.label_key
            if key is None:
                key = tuple(sorted(pod.labels.items()))
            self._alike.setdefault((pod.namespace, key), []).append(position)

    # -- what one trial sees ------------------------------------------------------------------

    def any_anti_affinity(self, leaving: Collection[str]) -> bool:
        """Whether a running pod that stays states a required anti-affinity term."""
        gone = sum(self._anti_nodes.get(name, 0) for name in leaving)
        return self._anti_total > gone

    def anti_terms(self, leaving: Collection[str]) -> set[TopologyTerm]:
        """Required anti-affinity terms of the running pods that stay."""
        return {
            term
            for term, stating in self._anti.items()
            if any(node not in leaving for _, node in stating)
        }

    def topology(
        self,
        terms: Iterable[TopologyTerm],
        inverse_terms: Iterable[TopologyTerm],
        excluded: Collection[str],
        leaving: Collection[str],
    ) -> Topology:
        """The topology ``Topology(terms, inverse_terms, sources, nodes, placed)`` would build
        with the nodes of ``excluded`` left out of ``nodes`` and the pods running on
        ``leaving`` left out of ``placed``."""
        groups: dict[TopologyTerm, TopologyGroup] = {}
        for term in terms:
            if term not in groups:
                groups[term] = self._group(term).without(term, excluded, leaving)
        first: list[tuple[int, TopologyTerm]] = []
        for term, stating in self._anti.items():
            for position, node in stating:
                if node not in leaving:
                    first.append((position, term))
                    break
        first.sort(key=lambda pair: pair[0])
        inverse: dict[TopologyTerm, TopologyGroup] = {}
        for _, term in first:
            inverse[term] = self._inverse_group(term).without(term, excluded, leaving)
        for term in inverse_terms:
            if term not in inverse:
                inverse[term] = self._inverse_group(term).without(term, excluded, leaving)
        return Topology.assembled(groups, inverse)

    # -- counting over the whole cluster ------------------------------------------------------

    def _register(self, counted: _Counted, term: TopologyTerm) -> None:
        """Every node's hostname, as ``Topology`` registers it in hostname groups."""
        if term.key != HOSTNAME_LABEL:
            return
        for name, labels, _ in self._nodes:
            hostname = labels.get(HOSTNAME_LABEL, name)
            counted.refs[hostname] += 1
            counted.node_refs.setdefault(name, []).append(hostname)

    def _group(self, term: TopologyTerm) -> _Counted:
        """What ``Topology._new_group`` counts for ``term``, node by node."""
        found = self._groups.get(term)
        if found is not None:
            return found
        domains = term_domains(self._sources, term)
        fallback = fallback_domains(self._sources, term, domains)
        counted = _Counted({}, set(), Counter(domains), frozenset(fallback))
        node_filter = term.node_filter
        hostname_key = term.key == HOSTNAME_LABEL
        for name, labels, taints in self._nodes:
            domain = labels.get(term.key)
            if domain is None:
                continue
            if node_filter is None or node_filter.matches(
                taints, self._labels.of(name, labels), allow_undefined=False
            ):
                counted.refs[domain] += 1
                counted.node_refs.setdefault(name, []).append(domain)
        self._register(counted, term)
        counts = dict.fromkeys(counted.refs, 0)
        for pod in self._selected(term):
            domain = pod.node_labels.get(term.key)
            if domain is None and hostname_key:
                domain = pod.node_name
            if domain is None:
                continue
            if node_filter is not None and not node_filter.matches(
                pod.node_taints,
                self._labels.of(pod.node_name, pod.node_labels),
                allow_undefined=False,
            ):
                continue
            counts[domain] = counts.get(domain, 0) + pod.count
            counted.node_counts.setdefault(pod.node_name, []).append((domain, pod.count))
        counted.counts = counts
        counted.empty = {domain for domain, count in counts.items() if count == 0}
        self._groups[term] = counted
        return counted

    def _selected(self, term: TopologyTerm) -> list[PlacedPod]:
        """The running pods ``term`` selects, in their order."""
        positions: list[int] = []
        placed = self._placed
        for (namespace, _), alike in self._alike.items():
            if term.selects(namespace, placed[alike[0]].labels):
                positions.extend(alike)
        positions.sort()
        return [placed[position] for position in positions]

    def _inverse_group(self, term: TopologyTerm) -> _Counted:
        """What ``Topology`` counts in the inverse group of a required anti-affinity term:
        the domains of the running pods that state it."""
        found = self._inverse.get(term)
        if found is not None:
            return found
        counted = _Counted({}, set(), Counter(term_domains(self._sources, term)))
        self._register(counted, term)
        counts = dict.fromkeys(counted.refs, 0)
        for position, _ in self._anti.get(term, ()):
            pod = self._placed[position]
            for stated in pod.anti_affinity:
                if stated != term:
                    continue
                domain = pod.node_labels.get(term.key)
                if domain is not None:
                    counts[domain] = counts.get(domain, 0) + pod.count
                    counted.node_counts.setdefault(pod.node_name, []).append((domain, pod.count))
        counted.counts = counts
        counted.empty = {domain for domain, count in counts.items() if count == 0}
        self._inverse[term] = counted
        return counted
