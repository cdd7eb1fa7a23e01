"""Existing nodes shared by the trial solves of one pass (see :mod:`.trial`).

A solve gives each pod to the first existing node, in a fixed order, that takes it. A
:class:`NodeIndex` keeps every node as it stands and, per kind of pod, the nodes that admit
it as they stand (resources, taints, ports, labels, volumes): placing pods only ever takes
room away, so no other node can take that kind of pod during a solve. A trial
(:class:`TrialNodes`) walks only those, and copies a node the first time it places a pod there.

Walking them asks less than a full solve does, for the same answers: a node the trial has
not touched is known to admit the pod, a node it has placed pods on is asked only about
the room, ports and volume slots left, and past the leading nodes (where only a yes counts,
not why a node says no) a zone that turns the pod away turns away each of its nodes unasked
(:mod:`.nodetopology`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from nodewright.scheduling.model import ExistingNode, PodRequest
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.solver.constraints import LASTING
from nodewright.scheduling.solver.existingnode import ExistingNodeState
from nodewright.scheduling.solver.nodetopology import PodGroups, TopologyCheck
from nodewright.scheduling.solver.preferences import PodState
from nodewright.scheduling.topology import Topology


class NodeIndex:
    """The existing nodes in the order a solve tries them, and which admit what."""

    def __init__(self, ordered: Sequence[ExistingNode]) -> None:
        self.states = [ExistingNodeState(node) for node in ordered]
        #: Name -> positions in :attr:`states` of the nodes of that name or NodeClaim.
        self._named: dict[str, list[int]] = {}
        for position, node in enumerate(ordered):
            self._named.setdefault(node.name, []).append(position)
            if node.node_claim is not None and node.node_claim != node.name:
                self._named.setdefault(node.node_claim, []).append(position)
        self._admitting: dict[tuple[object, ...], list[int]] = {}
        self._domains: dict[tuple[str, ...], list[tuple[str | None, ...] | None]] = {}

    def domains(self, keys: tuple[str, ...]) -> list[tuple[str | None, ...] | None]:
        """Per node, its labels on ``keys``; None for a node whose topology answers on one
        of ``keys`` do not go by label (see :class:`~.existingnode.ExistingNodeState`)."""
        found = self._domains.get(keys)
        if found is None:
            found = [
                None
                if node.unlike and not node.unlike.isdisjoint(keys)
                else tuple(node.node.labels.get(key) for key in keys)
                for node in self.states
            ]
            self._domains[keys] = found
        return found

    def named(self, names: Collection[str]) -> set[int]:
        """Positions of the nodes whose name or NodeClaim is one of ``names``."""
        return {i for name in names for i in self._named.get(name, ())}

    def registered(self, positions: Collection[int]) -> set[str]:
        """Names of the nodes at ``positions`` that are not in-flight NodeClaims (those
        topology counts)."""
        return {self.states[i].node.name for i in positions if not self.states[i].node.in_flight}

    def admitting(self, state: PodState) -> list[int]:
        """Positions of the nodes that admit the pod as they stand, in order."""
        pod = state.pod
        key = (
            tuple(sorted(pod.requests.items())),
            state.requirements,
            state.relaxed_taints,
            pod.tolerations,
            pod.host_ports,
            pod.volume_requirements,
            tuple(sorted(pod.volumes.items())),
        )
        found = self._admitting.get(key)
        if found is None:
            found = [i for i, node in enumerate(self.states) if node.admits(state)]
            self._admitting[key] = found
        return found


class TrialNodes:
    """The existing nodes of one trial solve: the shared ones, less those left out, with
    private copies of the nodes it has placed pods on."""

    def __init__(self, index: NodeIndex, excluded: Collection[int]) -> None:
        self.index = index
        self.excluded = excluded
        self.changed: dict[int, ExistingNodeState] = {}
        #: Per pod topology (the solve keeps each one for its whole length) and strict
        #: requirements: the pod's groups.
        self._groups: dict[tuple[int, Requirements], PodGroups] = {}
        #: Per pod shape: the positions of the nodes still worth asking, in order. A node
        #: left out, or one that turned the pod away for a lasting reason, turns away every
        #: later pod of that shape too (nodes only fill up), and is dropped.
        self._live: dict[int, list[int]] = {}

    def add(self, state: PodState, topology: Topology) -> bool:
        """Place the pod on the first node that takes it."""
        shape = state.shape
        live = self._live.get(shape)
        if live is None:
            excluded = self.excluded
            live = [i for i in self.index.admitting(state) if i not in excluded]
            self._live[shape] = live
        states = self.index.states
        changed = self.changed
        groups_key = (id(state.topology), state.strict)
        groups = self._groups.get(groups_key)
        if groups is None:
            groups = self._groups[groups_key] = PodGroups(state)
        check = TopologyCheck(groups)
        keys = groups.domain_keys
        domains = self.index.domains(keys) if keys else None
        #: Per node labels on ``keys``: whether the groups that answer by domain refuse.
        away: dict[tuple[str | None, ...], bool] = {}
        #: How many leading nodes turned the pod away for good; later ones that did.
        lead = 0
        gone: list[int] = []
        placed = False
        for position, index in enumerate(live):
            if domains is not None and position != lead:
                # Past the leading node only whether a node takes the pod matters, not
                # why it would not: a domain that refuses turns the node away unasked.
                labels = domains[index]
                if labels is not None:
                    refused = away.get(labels)
                    if refused is None:
                        shown = states[index]
                        refused = check.turns_away(shown.node.labels, shown.label_requirements)
                        away[labels] = refused
                    if refused:
                        continue
            node = changed.get(index)
            if node is None:
                # As it stands: it admits the pod, or it would not be in ``live``.
                refusal = states[index].plan(state, True, check)
            elif node.still_admits(state):
                refusal = node.plan(state, True, check)
            else:
                refusal = LASTING
            if refusal is None:
                if node is None:
                    node = changed[index] = states[index].copy()
                node.commit(state, topology)
                placed = True
                break
            if refusal.lasting:
                if position == lead:
                    lead += 1
                else:
                    gone.append(position)
        if gone:
            dropped = set(gone)
            self._live[shape] = [i for p, i in enumerate(live) if p >= lead and p not in dropped]
        elif lead:
            self._live[shape] = live[lead:]
        return placed

    def placed(self) -> dict[str, list[PodRequest]]:
        """Existing node name -> the pods this solve placed there, in node order."""
        return {node.node.name: node.pods for _, node in sorted(self.changed.items()) if node.pods}
