"""The counts a trial solve starts from are the counts a topology built from scratch has.

A disruption pass counts each constraint over the running pods once
(:class:`~nodewright.scheduling.topologybase.TopologyBase`), asking a selector once per
distinct namespace and label set, and each trial takes the leaving nodes' share out. Here
pods with the same labels run on several nodes, in two namespaces, beside pods whose labels
differ only in a value, and on nodes topology does not register: for every choice of leaving
node, the trial's counts per domain (and the domains it knows, in their order) are those of
``Topology`` over the nodes and pods that stay (the inverse groups of anti-affinity terms
are compared as mappings: the order of their domains already differs between the two).
"""

from __future__ import annotations

import pytest

from nodewright.api.labels import HOSTNAME_LABEL, ZONE_LABEL
from nodewright.scheduling.selectors import LabelSelector
from nodewright.scheduling.topology import DomainSource, PlacedPod, Topology
from nodewright.scheduling.topologybase import TopologyBase
from nodewright.scheduling.topologyterm import ANTI_AFFINITY, SPREAD, TopologyTerm

NODES = [
    (f"node-{i}", {ZONE_LABEL: f"zone-{'abc'[i % 3]}", HOSTNAME_LABEL: f"node-{i}"}, ())
    for i in range(6)
]
#: Nodes topology does not register (on their way out), whose pods still count.
UNREGISTERED = [
    ("node-8", {ZONE_LABEL: "zone-f", HOSTNAME_LABEL: "node-8"}, ()),
    ("node-9", {ZONE_LABEL: "zone-e", HOSTNAME_LABEL: "node-9"}, ()),
]
SOURCES = [DomainSource({ZONE_LABEL: frozenset({"zone-a", "zone-b", "zone-c", "zone-d"})})]


def _pod(namespace: str, app: str, node: int, count: int = 1, anti: bool = False) -> PlacedPod:
    name, labels, _ = (NODES + UNREGISTERED)[node]
    return PlacedPod(
        namespace=namespace,
        labels={"app": app, "tier": "web"},
        node_name=name,
        node_labels=labels,
        anti_affinity=(_term(ANTI_AFFINITY, HOSTNAME_LABEL, app),) if anti else (),
        count=count,
    )


def _term(kind: str, key: str, app: str | None) -> TopologyTerm:
    labels = {"tier": "web"} if app is None else {"app": app}
    return TopologyTerm(kind, key, LabelSelector.of(labels), frozenset({"default"}), max_skew=1)


PLACED = [
    _pod("default", "a", 0),
    _pod("default", "b", 0, count=2),
    _pod("other", "a", 1),
    _pod("default", "a", 2, count=3),
    _pod("default", "b", 3, anti=True),
    _pod("default", "a", 4),
    _pod("default", "c", 5, anti=True),
    _pod("default", "a", 5),
    _pod("default", "b", 7),
    _pod("default", "a", 6),
]
TERMS = [
    _term(SPREAD, ZONE_LABEL, "a"),
    _term(SPREAD, HOSTNAME_LABEL, "a"),
    _term(SPREAD, ZONE_LABEL, None),
    _term(SPREAD, ZONE_LABEL, "missing"),
]


def _counts(topology: Topology) -> list[list[tuple[str, int]]]:
    """Each group's domains with their counts, in the group's order."""
    return [list(group.counts.items()) for group in topology.groups.values()]


def _inverse_counts(topology: Topology) -> dict[TopologyTerm, dict[str, int]]:
    return {term: group.counts for term, group in topology.inverse.items()}


@pytest.mark.parametrize("leaving", [(), ("node-0",), ("node-3",), ("node-2", "node-5")])
def test_a_trial_counts_what_the_staying_pods_and_nodes_count(leaving: tuple[str, ...]) -> None:
    base = TopologyBase(SOURCES, NODES, PLACED)
    trial = base.topology(TERMS, (), leaving, leaving)
    staying = [n for n in NODES if n[0] not in leaving]
    scratch = Topology(
        TERMS, (), SOURCES, staying, [p for p in PLACED if p.node_name not in leaving]
    )
    assert _counts(trial) == _counts(scratch)
    assert _inverse_counts(trial) == _inverse_counts(scratch)
