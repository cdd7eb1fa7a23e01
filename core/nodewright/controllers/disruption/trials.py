"""The simulations of one disruption pass, sharing what does not depend on the candidates.

A consolidation pass simulates candidate after candidate (Karpenter's ``SimulateScheduling``
for each): the candidates' pods, every pod waiting for a node and the pods of nodes being
deleted are placed on the rest of the cluster. Only the candidates differ from one simulation
to the next, so :class:`Trials` works out the rest once per pass (the waiting pods and their
requests, the nodes being deleted and their pods, the solver's view of the cluster in a
:class:`~nodewright.scheduling.solver.trial.SolveBase`) and each :meth:`Trials.simulate` solves
only what its candidates change. It answers exactly as
:func:`~nodewright.controllers.disruption.rescheduling.simulate` does for the same candidates.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from datetime import datetime

from nodewright.api.core import Pod
from nodewright.controllers.disruption.candidates import Candidate, Snapshot
from nodewright.controllers.disruption.rescheduling import (
    PodRequests,
    Rescheduling,
    simulate,
    uninitialized_error,
)
from nodewright.controllers.disruption.trialmemo import TrialMemo
from nodewright.controllers.disruptioncost import blocks_disruption, is_reschedulable
from nodewright.controllers.state.cluster import is_provisionable
from nodewright.scheduling.model import (
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.solver.claimtemplates import ClaimTemplates
from nodewright.scheduling.solver.trial import SolveBase, solve_trial

#: A pod with its place in creation order and its request (or why it has none).
_Entry = tuple[tuple[datetime, str], Pod, PodRequest | str]


def _sort_key(entry: _Entry) -> tuple[datetime, str]:
    return entry[0]


def _compared(entries: Sequence[_Entry]) -> tuple[object, ...]:
    """What a simulation reads of these pods: their places, keys, nodes and requests."""
    return tuple((place, pod.key, pod.spec.node_name, request) for place, pod, request in entries)


class Trials:
    """Simulations of candidates over one snapshot (see the module docstring)."""

    def __init__(
        self,
        snapshot: Snapshot,
        templates: Sequence[NodePoolTemplate],
        options: SolverOptions,
        requests: PodRequests,
        *,
        virtual: Sequence[Pod] = (),
        built: ClaimTemplates | None = None,
        memo: TrialMemo | None = None,
    ) -> None:
        """``memo``: the answers of an earlier pass, reused if this one reads the same
        (:mod:`.trialmemo`)."""
        self._snapshot = snapshot
        self._templates = templates
        self._options = options
        self._virtual = virtual
        view = snapshot.view
        self._deleting = {n.name for n in snapshot.nodes if n.deleting} | {
            node.name
            for claim in snapshot.claims
            if claim.deleting and (node := view.node_for(claim)) is not None
        }
        pending = sorted(
            (p for p in view.state.unbound_pods().values() if is_provisionable(p)),
            key=lambda p: (p.metadata.namespace or "", p.metadata.name),
        )
        pending += virtual  # CapacityBuffer headroom must still fit once the candidates are gone
        self._pending_keys = {p.key for p in pending}
        self._from_deleting = self._pods_of_deleting(set())
        self._requests = requests
        requests.begin(snapshot, options.default_spread)
        # The pods every simulation places, in creation order with their requests, worked
        # out once: a simulation merges its candidates' pods in.
        self._pending_entries = self._entries(pending)
        self._deleting_entries = self._entries(self._from_deleting)
        existing = snapshot.existing_nodes()
        #: Name -> the existing nodes of that name or NodeClaim, in the snapshot's order.
        self._existing: dict[str, list[ExistingNode]] = {}
        for entry in existing:
            self._existing.setdefault(entry.name, []).append(entry)
        staying = [p for p in snapshot.placed_pods() if p.node_name not in self._deleting]
        self._built = built
        self._memo = memo
        base = None
        if memo is not None:
            base = memo.begin(
                (
                    options,
                    tuple(templates),
                    tuple(existing),
                    tuple(staying),
                    tuple(sorted(self._deleting)),
                    _compared(self._pending_entries),
                    _compared(self._deleting_entries),
                )
            )
        if base is None:
            base = SolveBase(existing, templates, options, staying, built)
            if memo is not None:
                memo.keep_base(base)
        self._base = base

    def _pods_of_deleting(self, names: set[str]) -> list[Pod]:
        view = self._snapshot.view
        return [
            p
            for name in sorted(self._deleting - names)
            for p in view.pods_on(name)
            if is_reschedulable(p)
        ]

    def _entries(self, pods: Sequence[Pod]) -> list[_Entry]:
        """``pods`` in the order a simulation places them (creation time, then key; stable),
        each with its request or why it has none."""
        now = self._snapshot.now
        entries = [
            (
                (p.metadata.creation_timestamp or now, p.key),
                p,
                self._requests.request(self._snapshot, p),
            )
            for p in pods
        ]
        entries.sort(key=_sort_key)
        return entries

    def simulate(self, candidates: Sequence[Candidate], decide: bool = False) -> Rescheduling:
        """Place the candidates' pods elsewhere; report what that takes. With ``decide``, only
        whether consolidating them could work is wanted: the simulation may stop as soon as it
        cannot (:attr:`~nodewright.scheduling.model.SchedulingResult.decided_no`)."""
        snapshot = self._snapshot
        names = {c.name for c in candidates} | {c.claim.name for c in candidates}
        moving: list[Pod] = []
        for candidate in candidates:
            moving.extend(
                p
                for p in candidate.reschedulable
                if not blocks_disruption(p, snapshot.now) and not snapshot.pdbs.fully_blocked(p)
            )
        if names & self._deleting:
            from_deleting = self._pods_of_deleting(names)
            deleting_entries = self._entries(from_deleting)
        else:
            from_deleting = self._from_deleting
            deleting_entries = self._deleting_entries
        moving_entries = self._entries(moving)
        memo = self._memo
        compared = _compared(moving_entries) if memo is not None else None
        if memo is not None:
            known = memo.answer(names, compared)
            if known is not None:
                return known
        # As a stable sort of pending, moving and deleting pods in that order would have it.
        entries = heapq.merge(
            self._pending_entries, moving_entries, deleting_entries, key=_sort_key
        )
        errors: dict[str, str] = {}
        requests: list[PodRequest] = []
        for index, (_, pod, request) in enumerate(entries):
            if isinstance(request, str):
                errors[pod.key] = request
                continue
            requests.append(request.at(index))
        if decide and any(key not in self._pending_keys for key in errors):
            return Rescheduling(SchedulingResult(decided_no=True), {})
        if self._options.dra and any(r.dynamic_resources for r in requests):
            # DRA claims: which devices are free depends on the candidates (theirs leave
            # with them), so this one is solved from scratch, devices and all.
            return simulate(
                snapshot,
                self._templates,
                candidates,
                self._options,
                self._requests,
                virtual=self._virtual,
                built=self._built,
            )
        pending_keys = self._pending_keys
        result = solve_trial(self._base, requests, names, names, pending_keys if decide else None)
        if result.decided_no:
            return Rescheduling(result, {})
        deleting_keys = {p.key for p in from_deleting}
        errors = {k: e for k, e in errors.items() if k not in pending_keys}
        errors.update({k: e for k, e in result.errors.items() if k not in pending_keys})
        for name, landed in result.existing_nodes.items():
            target = self._staying_node(name, names)
            if target is None or target.initialized:
                continue
            for request in landed:
                if request.key not in deleting_keys and request.key not in pending_keys:
                    errors[request.key] = uninitialized_error(target)
        answer = Rescheduling(result, errors)
        if memo is not None and not self._pending_entries:
            # With pods waiting, each answer holds a copy of every one of them: not kept.
            memo.remember(names, compared, answer)
        return answer

    def _staying_node(self, name: str, names: set[str]) -> ExistingNode | None:
        """The last existing node called ``name`` that the simulation keeps."""
        for node in reversed(self._existing.get(name, ())):
            if node.name not in names and (node.node_claim or "") not in names:
                return node
        return None
