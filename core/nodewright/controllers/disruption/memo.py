"""Karpenter's "consolidated" memo, which emptiness and consolidation keep: a search that
found nothing is not run again while nothing it depends on has changed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.methods import Context

#: A "nothing to consolidate" verdict is reused this long if nothing changes.
CONSOLIDATED_TTL = timedelta(minutes=5)


def fingerprint(context: Context) -> tuple[int, list[tuple[str, object, bool, bool]]]:
    """What a search's answer depends on, to compare (not events): the consolidation state
    (:mod:`.consolidationstate`) and what the PodDisruptionBudgets allow, since relaxing a
    budget can let a node go that it held back."""
    return (context.consolidation_state, context.snapshot.pdbs.facts())


class Memo:
    """Karpenter's "consolidated" memo: skip a search whose inputs have not changed.

    Karpenter leaves a search that budgets held back unmarked, so it runs again on every pass
    while nothing changes; that repeats the same trial scheduling (the costliest thing an idle
    cluster does) for the same answer. Here such a search is remembered with the candidates it
    was allowed to try: it is skipped while nothing changed and the budgets allow the same
    candidates, and runs again as soon as either differs (a budget schedule opening, a node
    leaving), which is when Karpenter's could find something new.
    """

    def __init__(self) -> None:
        #: (fingerprint, when, the candidates tried when budgets held some back, else None)
        self._state: tuple[object, datetime, tuple[str, ...] | None] | None = None

    def fresh(self, context: Context, tried: Sequence[Candidate] | None = None) -> bool:
        """Whether nothing changed since the search was marked (with ``tried``: since a search
        held back by budgets tried exactly these candidates)."""
        if self._state is None:
            return False
        digest, at, marked = self._state
        if context.now - at >= CONSOLIDATED_TTL or digest != fingerprint(context):
            return False
        return marked is None or (tried is not None and marked == _names(tried))

    def mark(self, context: Context, tried: Sequence[Candidate] | None = None) -> None:
        """Remember a search that found nothing (``tried``: the candidates budgets allowed,
        when they held others back)."""
        names = None if tried is None else _names(tried)
        self._state = (fingerprint(context), context.now, names)


def _names(candidates: Sequence[Candidate]) -> tuple[str, ...]:
    return tuple(candidate.node.name for candidate in candidates)
