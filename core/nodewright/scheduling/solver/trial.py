"""Trial solves: many solves over one cluster that differ only in the nodes they leave out.

A consolidation pass asks, candidate after candidate, where the candidate's pods would go if
its nodes were gone. Built from scratch, each of those solves walks the whole cluster: every
node's room, every NodePool's instance types, every running pod for every topology
constraint. A :class:`SolveBase` does that once per pass: the existing nodes in the solver's
order with which of them admit which pods (:mod:`.nodeindex`), each NodePool's launchable types
and memo tables (kept from pass to pass by a :class:`~.claimtemplates.ClaimTemplates` while
the pool and its types stay the same), the topology counts with each node's share
(:mod:`nodewright.scheduling.topologybase`), and the requirement merges already worked out.

:func:`solve_trial` solves the pods of one trial over it, leaving out some nodes and the pods
that run on them, and copies only what the trial changes. It gives what :func:`solve` gives
for the same cluster without those nodes and pods: the placement code is the same
``Scheduler``; only how it starts differs.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from nodewright.scheduling.dra import split_dra_pods
from nodewright.scheduling.model import (
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.repack import repack
from nodewright.scheduling.solver.claimtemplates import ClaimTemplates
from nodewright.scheduling.solver.decision import DecisionWatch
from nodewright.scheduling.solver.nodeclaimtemplate import NodeClaimTemplate
from nodewright.scheduling.solver.nodeindex import NodeIndex
from nodewright.scheduling.solver.reservations import Reservations
from nodewright.scheduling.solver.scheduler import (
    RESERVED_STRICT,
    Scheduler,
    node_order,
    prefers_no_schedule,
)
from nodewright.scheduling.topology import PlacedPod, TopologyTerm
from nodewright.scheduling.topologybase import TopologyBase


class SolveBase:
    """What the trial solves of one pass share: the cluster as it stands.

    ``existing`` are the nodes and in-flight NodeClaims pods may go to, ``placed`` the pods
    running on them that a trial may keep (the pods of nodes every trial drops, such as nodes
    being deleted, already left out).
    """

    def __init__(
        self,
        existing: Sequence[ExistingNode],
        templates: Sequence[NodePoolTemplate],
        options: SolverOptions,
        placed: Sequence[PlacedPod],
        built: ClaimTemplates | None = None,
    ) -> None:
        self.options = options
        self.pools = list(templates)
        self.nodes = NodeIndex(sorted(existing, key=node_order))
        self._built = built if built is not None else ClaimTemplates()
        self._templates = self._built.ordered(templates, options)
        usable = [template for template, _ in self._templates if template.options]
        self._reservations = Reservations(usable, options.reserved_offering_mode == RESERVED_STRICT)
        self.prefer_no_schedule_exists = prefers_no_schedule(templates)
        nodes = [(n.name, n.labels, n.taints) for n in existing if not n.in_flight]
        self.topology = TopologyBase([t.domain_source() for t in usable], nodes, placed)
        self.memo = self._built.merges(options.well_known_labels)

    def claim_templates(self) -> list[NodeClaimTemplate]:
        """The pools for one solve, in the order new NodeClaims try them, each with its own
        limits left."""
        return [template.fork(pool.remaining) for template, pool in self._templates]

    def reservations(self) -> Reservations | None:
        """Reserved capacity for one solve, if any pool offers some."""
        return self._reservations.copy() if self._reservations.capacity else None

    def lone_template(self, pool: NodePoolTemplate) -> NodeClaimTemplate:
        """``pool`` alone for one solve, as ``Scheduler((), [pool], ...)`` builds it."""
        return self._built.lone(pool, self.options)

    def placed_terms(self, leaving: Collection[str]) -> set[TopologyTerm]:
        """Required anti-affinity terms of the running pods that stay."""
        return self.topology.anti_terms(leaving)


def solve_trial(
    base: SolveBase,
    pods: Sequence[PodRequest],
    excluded: Collection[str] = (),
    leaving: Collection[str] = (),
    decide_with: Collection[str] | None = None,
) -> SchedulingResult:
    """Place ``pods`` as :func:`~nodewright.scheduling.solver.scheduler.solve` would on the
    cluster of ``base`` without the existing nodes whose name or NodeClaim is in ``excluded``
    and without the running pods of the nodes named in ``leaving``.

    With ``decide_with`` (the keys of the pods already waiting for a node), the solve stops as
    soon as a consolidation's answer is sure to be "no" and says only that
    (:attr:`~nodewright.scheduling.model.SchedulingResult.decided_no`, :mod:`.decision`)."""
    pods, skipped = split_dra_pods(pods)
    scheduler = Scheduler.trial_of(base, pods, excluded, leaving)
    if decide_with is not None:
        scheduler.watch = DecisionWatch(
            base.pools, base.options, pods, decide_with, lambda: base.placed_terms(leaving)
        )
    result = scheduler.solve(pods)
    if result.decided_no:
        return result
    options = base.options
    if options.repack:
        plain = replace(options, repack=False)

        def in_order(batch: Sequence[PodRequest], pool: NodePoolTemplate) -> SchedulingResult:
            scheduler = Scheduler(
                (), [pool], plain, batch, (), claim_templates=[base.lone_template(pool)]
            )
            return scheduler.solve(batch, keep_order=True)

        result = repack(result, pods, base.pools, base.placed_terms(leaving), in_order)
    result.errors.update(skipped)
    return result
