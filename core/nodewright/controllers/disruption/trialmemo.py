"""Simulations kept from one disruption pass to the next while what they read stays the same.

The consolidated memo (:mod:`.memo`) skips a whole search only while nothing in Karpenter's
consolidation state moved. That state moves on changes a simulation never reads (a Node's
conditions or annotations, a pod's resource version, a NodeClaim coming from in flight to a
node of the very same shape), and the search then runs again, candidate by candidate, for the
answers it already had.

A simulation (:meth:`.trials.Trials.simulate`) reads the solver's inputs and nothing else:
the options, the NodePools as templates (instance types, offerings, prices, limits left), the
existing nodes and in-flight NodeClaims as the solver sees them, the running pods as topology
counts them, the nodes being deleted, the pods every simulation places (waiting pods, pods of
deleting nodes: their places in creation order and their requests), and the pods its
candidates move. A :class:`TrialMemo` keeps the last pass's inputs, compared by value, and the
answer for each set of candidates; a pass whose inputs are equal gets those answers back for
the same candidates moving the same pods. Any difference in any of them, however small,
starts over.
"""

from __future__ import annotations

from collections.abc import Collection

from nodewright.controllers.disruption.rescheduling import Rescheduling
from nodewright.scheduling.solver.trial import SolveBase

#: Answers kept for one set of inputs before the memo starts over (a cache: dropping it costs
#: only simulations done again).
_ANSWERS_KEPT = 4096


class TrialMemo:
    """The last pass's simulation inputs, its shared base, and its answers per candidates."""

    def __init__(self) -> None:
        self._inputs: object = None
        self._base: SolveBase | None = None
        #: Candidate names -> (the pods they moved, as compared, and the answer).
        self._answers: dict[frozenset[str], tuple[object, Rescheduling]] = {}

    def begin(self, inputs: object) -> SolveBase | None:
        """Start a pass that reads ``inputs``: the base kept for equal inputs, else None (and
        every answer is forgotten)."""
        if self._inputs is None or self._inputs != inputs:
            self._inputs = inputs
            self._base = None
            self._answers = {}
        return self._base

    def keep_base(self, base: SolveBase) -> None:
        """The base built for this pass's inputs."""
        self._base = base

    def answer(self, names: Collection[str], moving: object) -> Rescheduling | None:
        """The answer for candidates ``names`` moving ``moving``, if known for these inputs."""
        found = self._answers.get(frozenset(names))
        if found is None or found[0] != moving:
            return None
        return found[1]

    def remember(self, names: Collection[str], moving: object, answer: Rescheduling) -> None:
        if len(self._answers) >= _ANSWERS_KEPT:
            self._answers = {}
        self._answers[frozenset(names)] = (moving, answer)
