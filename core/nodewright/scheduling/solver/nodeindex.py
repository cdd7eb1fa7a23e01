"""Existing nodes shared by the trial solves of one pass (see :mod:`.trial`).

A solve gives each pod to the first existing node, in a fixed order, that takes it. A
:class:`NodeIndex` keeps every node as it stands and, per kind of pod, the nodes that admit
it as they stand (resources, taints, ports, labels, volumes): placing pods only ever takes
room away, so no other node can take that kind of pod during a solve. A trial
(:class:`TrialNodes`) walks only those, and copies a node the first time it places a pod there.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from nodewright.scheduling.model import ExistingNode, PodRequest
from nodewright.scheduling.solver.existingnode import ExistingNodeState
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
        self._admitting: dict[int, list[int]] = {}

    def add(self, state: PodState, topology: Topology, skips: dict[int, int]) -> bool:
        """Place the pod on the first node that takes it; ``skips`` counts, per pod shape,
        the leading nodes known to turn it away (as a full solve's memo does)."""
        shape = state.shape
        admitting = self._admitting.get(shape)
        if admitting is None:
            admitting = self._admitting[shape] = self.index.admitting(state)
        skip = skips.get(shape, 0)
        states = self.index.states
        for position in range(skip, len(admitting)):
            index = admitting[position]
            if index in self.excluded:
                if position == skip:
                    skip += 1
                    skips[shape] = skip
                continue
            node = self.changed.get(index)
            if node is None:
                node = states[index]
            refusal = node.plan(state, topology)
            if refusal is None:
                if index not in self.changed:
                    node = self.changed[index] = node.copy()
                node.commit(state, topology)
                return True
            if position == skip and refusal.lasting:
                skip += 1
                skips[shape] = skip
        return False

    def placed(self) -> dict[str, list[PodRequest]]:
        """Existing node name -> the pods this solve placed there, in node order."""
        return {node.node.name: node.pods for _, node in sorted(self.changed.items()) if node.pods}
