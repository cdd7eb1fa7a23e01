"""What a pod states about topology: spread constraints and pod (anti-)affinity terms.

A :class:`TopologyTerm` is one constraint as pods state it; equal terms are one constraint,
shared by every pod that states it (:mod:`nodewright.scheduling.topology` counts them). The
solver keys its memo tables on terms, so a term keeps its hash once worked out, and
:func:`interned` hands out one object per distinct term, so that comparing the terms of two
pods of one Deployment is an identity check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.selectors import LabelSelector
from nodewright.scheduling.taints import Taint, Toleration

SPREAD = "topology spread"
AFFINITY = "pod affinity"
ANTI_AFFINITY = "pod anti-affinity"
HONOR = "Honor"
IGNORE = "Ignore"
#: The skew Karpenter gives affinity terms (they have none).
UNBOUNDED_SKEW = 2**31 - 1


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """Which nodes a spread constraint counts (``nodeAffinityPolicy``, ``nodeTaintsPolicy``).

    ``terms`` are the pod's nodeSelector intersected with each required node-affinity term;
    a node counts when it is compatible with any of them (Honor) and, under a taint policy of
    Honor, when the pod tolerates its taints.
    """

    terms: tuple[Requirements, ...] = ()
    honor_affinity: bool = True
    honor_taints: bool = False
    tolerations: tuple[Toleration, ...] = ()

    def tolerated(self, taints: Iterable[Taint]) -> bool:
        return all(any(t.tolerates(taint) for t in self.tolerations) for taint in taints)

    def matches(
        self, taints: Iterable[Taint], requirements: Requirements, allow_undefined: bool
    ) -> bool:
        if self.honor_affinity and self.terms:
            if allow_undefined:
                ok = any(requirements.compatible(term) for term in self.terms)
            else:
                ok = any(requirements.compatible(term, frozenset()) for term in self.terms)
            if not ok:
                return False
        return not self.honor_taints or self.tolerated(taints)


@dataclass(frozen=True, slots=True)
class TopologyTerm:
    """One spread constraint or pod (anti-)affinity term, as a pod states it.

    Equal terms (same kind, key, selector, namespaces, skew and node filter) are one
    constraint: pods of one Deployment share it.
    """

    kind: str
    key: str
    selector: LabelSelector
    namespaces: frozenset[str]
    max_skew: int = UNBOUNDED_SKEW
    min_domains: int | None = None
    #: Spreads only; affinity terms count every node.
    node_filter: NodeFilter | None = None
    #: Its hash once worked out (0: not yet); never pickled, as string hashes differ from
    #: process to process.
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        # The dataclass's own hash (of the compared fields, in order), kept.
        found = self._hash
        if not found:
            found = hash(self._fields())
            object.__setattr__(self, "_hash", found)
        return found

    def __reduce__(self) -> tuple[Any, ...]:
        return (TopologyTerm, self._fields())

    def _fields(self) -> tuple[object, ...]:
        return (
            self.kind,
            self.key,
            self.selector,
            self.namespaces,
            self.max_skew,
            self.min_domains,
            self.node_filter,
        )

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return namespace in self.namespaces and self.selector.matches(labels)

    def __str__(self) -> str:
        text = f"{self.kind} on {self.key} selecting {{{self.selector}}}"
        if self.kind == SPREAD:
            text += f" with maxSkew {self.max_skew}"
        return text


#: Distinct terms seen, each the one object handed out for it; started over when full.
_INTERNED: dict[TopologyTerm, TopologyTerm] = {}
_INTERNED_KEPT = 100_000


def interned(term: TopologyTerm) -> TopologyTerm:
    """The one object kept for terms equal to ``term`` (a cache: equal terms are
    interchangeable, so starting over only costs comparisons)."""
    found = _INTERNED.get(term)
    if found is None:
        if len(_INTERNED) >= _INTERNED_KEPT:
            _INTERNED.clear()
        found = _INTERNED[term] = term
    return found
