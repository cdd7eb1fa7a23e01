"""Knowing a consolidation trial's answer is "no" before its solve ends.

A consolidation trial asks whether a candidate's pods fit elsewhere with no new NodeClaim
(delete) or exactly one (replace). When nothing will read more than that decision (no event
will quote the number of NodeClaims), the solve may stop as soon as "no" is certain: once two
of its open NodeClaims are sure to be among the NodeClaims it returns.

An open NodeClaim can still vanish in two ways after its last pod:

* ``finish`` refuses it when keeping the cheapest types breaks its NodePool's minValues
  (``Strict``): not when the pool has no minValues or lowers them (``BestEffort``), and it does
  not matter when the claim holds a running pod (that pod then has no place, which is "no" too);
* repacking (:mod:`nodewright.scheduling.repack`) solves the pods of a pool's NodeClaims that
  hold only movable pods again, which may need fewer NodeClaims, but never none. Claims of
  pools with limits or reserved capacity, and claims holding a pod that is not movable, stay.

So the NodeClaims a solve returns are at least, per NodePool, its sure claims that repacking
leaves alone, plus one if it has any sure claim repacking may merge. Both only grow as pods are
placed (a claim never loses a pod), and the watch keeps the count as they do.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from nodewright.scheduling.model import NodePoolTemplate, PodRequest, SolverOptions
from nodewright.scheduling.repack import has_reservations, movable, repack_terms
from nodewright.scheduling.solver.nodeclaim import OpenNodeClaim
from nodewright.scheduling.topology import TopologyTerm

#: NodeClaims a trial's answer is "no" with (delete takes none, replace one).
_TOO_MANY = 2


class DecisionWatch:
    """Counts, while a trial solve places pods, the open NodeClaims sure to be returned; sets
    :attr:`decided` once the trial's answer can only be "no"."""

    def __init__(
        self,
        pools: Sequence[NodePoolTemplate],
        options: SolverOptions,
        pods: Sequence[PodRequest],
        pending: Collection[str],
        placed_terms: Callable[[], Collection[TopologyTerm]],
    ) -> None:
        """``pending``: keys of the pods already waiting (their having no place is not "no");
        ``placed_terms``: the running pods' terms repacking reads (asked for once, if at all)."""
        self._pending = pending
        self._pods = pods
        self._placed_terms = placed_terms
        #: Pools whose claims repacking may merge.
        self._mergeable = (
            {p.name for p in pools if p.remaining is None and not has_reservations(p)}
            if options.repack
            else set()
        )
        self._terms: set[TopologyTerm] | None = None
        self._movable: dict[str, bool] = {}
        #: Claim -> (sure to be returned, repacking may merge it).
        self._claims: dict[OpenNodeClaim, tuple[bool, bool]] = {}
        self._fixed = 0
        #: Pool -> its sure claims repacking may merge.
        self._merged: dict[str, int] = {}
        #: The answer can only be "no".
        self.decided = False

    def placed(self, claim: OpenNodeClaim, pod: PodRequest) -> None:
        """``pod`` was placed on ``claim`` (new or open)."""
        before = self._claims.get(claim)
        if before is None:
            template = claim.template
            sure = template.relax_min_values or not any(
                r.min_values is not None for _, r in template.requirements.items()
            )
            merged = template.name in self._mergeable
        else:
            sure, merged = before
        sure = sure or pod.key not in self._pending
        merged = merged and self._is_movable(pod)
        if before == (sure, merged):
            return
        self._count(claim.template.name, before, -1)
        self._claims[claim] = (sure, merged)
        self._count(claim.template.name, (sure, merged), 1)
        self.decided = self._fixed + len(self._merged) >= _TOO_MANY

    def unplaced(self, keys: Collection[str]) -> None:
        """The solve left the pods ``keys`` without a place: "no" if one of them runs now."""
        if any(key not in self._pending for key in keys):
            self.decided = True

    def _count(self, pool: str, state: tuple[bool, bool] | None, step: int) -> None:
        if state is None or not state[0]:
            return
        if not state[1]:
            self._fixed += step
            return
        left = self._merged.get(pool, 0) + step
        if left:
            self._merged[pool] = left
        else:
            del self._merged[pool]

    def _is_movable(self, pod: PodRequest) -> bool:
        known = self._movable.get(pod.key)
        if known is None:
            if self._terms is None:
                self._terms = repack_terms(self._pods, self._placed_terms())
            known = self._movable[pod.key] = movable(pod, self._terms)
        return known
