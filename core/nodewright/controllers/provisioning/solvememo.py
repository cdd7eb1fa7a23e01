"""The last provisioning solve's answer, kept while its inputs stay the same.

Pods that stay pending (behind a NodePool's limits, unschedulable anywhere) come back every
pass, and the solver is pure: the same pods, existing nodes, NodePool templates (instance
types, offerings, limits left), running pods, devices and options give the same answer. A
:class:`SolveMemo` keeps the last solve's inputs, compared by value (a new, deleted or changed
pod, a NodePool edit, a node that frees room or a change of what a limit leaves all differ),
and hands back its answer for equal ones. Everything a pass does with the answer (events,
nominations, metrics, logs) still happens on every pass; only the solve is left out.

An answer that opens NodeClaims is not kept: the pass creates them, and what it made of the
answer is then the cluster's to tell.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.scheduling.model import (
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.solver.devices import DeviceFacts
from nodewright.scheduling.topology import PlacedPod


@dataclass(frozen=True)
class SolveInputs:
    """Everything :func:`~nodewright.scheduling.solver.scheduler.solve` reads."""

    requests: tuple[PodRequest, ...]
    existing: tuple[ExistingNode, ...]
    templates: tuple[NodePoolTemplate, ...]
    options: SolverOptions
    placed: tuple[PlacedPod, ...]
    devices: DeviceFacts | None


class SolveMemo:
    """The last solve's inputs and answer."""

    def __init__(self) -> None:
        self._inputs: SolveInputs | None = None
        self._result: SchedulingResult | None = None
        #: Solves answered from memory, over every pass.
        self.recalled = 0

    def recall(self, inputs: SolveInputs) -> SchedulingResult | None:
        """The answer kept for ``inputs``, if they equal the last solve's."""
        if self._result is None or self._inputs != inputs:
            return None
        self.recalled += 1
        return self._result

    def remember(self, inputs: SolveInputs, result: SchedulingResult) -> None:
        """Keep ``result`` for ``inputs`` (forget it when it opens NodeClaims)."""
        if result.new_node_claims:
            self._inputs = self._result = None
            return
        self._inputs, self._result = inputs, result
