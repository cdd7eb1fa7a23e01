"""Trial solves: many solves over one cluster that differ only in the nodes they leave out.

A consolidation pass asks, candidate after candidate, where the candidate's pods would go if
its nodes were gone. Built from scratch, each of those solves walks the whole cluster: every
node's room, every NodePool's instance types, every running pod for every topology
constraint. A :class:`SolveBase` does that once per pass: the existing nodes in the solver's
order with which of them admit which pods (:mod:`.nodeindex`), each NodePool's launchable types
and memo tables (kept from pass to pass by a :class:`ClaimTemplates` while the pool and its
types stay the same), the topology counts with each node's share
(:mod:`nodewright.scheduling.topologybase`), and the requirement merges already worked out.

:func:`solve_trial` solves the pods of one trial over it, leaving out some nodes and the pods
that run on them, and copies only what the trial changes. It gives what :func:`solve` gives
for the same cluster without those nodes and pods: the placement code is the same
``Scheduler``; only how it starts differs.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from nodewright.scheduling.dra import split_dra_pods
from nodewright.scheduling.model import (
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.repack import repack
from nodewright.scheduling.solver.constraints import MergeMemo
from nodewright.scheduling.solver.nodeclaimtemplate import NodeClaimTemplate
from nodewright.scheduling.solver.nodeindex import NodeIndex
from nodewright.scheduling.solver.reservations import Reservations
from nodewright.scheduling.solver.scheduler import (
    MIN_VALUES_BEST_EFFORT,
    RESERVED_STRICT,
    Scheduler,
    node_order,
    ordered_templates,
    prefers_no_schedule,
    reservation_labels,
)
from nodewright.scheduling.topology import PlacedPod, TopologyTerm
from nodewright.scheduling.topologybase import TopologyBase

#: Requirement merges kept before the shared memo starts over (a cache: dropping it costs
#: only merges done again).
_MERGES_KEPT = 200_000


@dataclass
class _Built:
    pool: NodePoolTemplate
    relax: bool
    labels: frozenset[str]
    template: NodeClaimTemplate


def _same_pool(first: NodePoolTemplate, second: NodePoolTemplate) -> bool:
    """Whether two NodePool templates make the same NodeClaimTemplate (limits aside, which
    each solve takes from its own template)."""
    return (
        first.name == second.name
        and first.requirements == second.requirements
        and first.taints == second.taints
        and first.daemon_groups == second.daemon_groups
        and first.instance_types == second.instance_types
    )


class ClaimTemplates:
    """NodeClaimTemplates kept from pass to pass: a pool's launchable types, its topology
    domains and its memo tables depend on the pool, its instance types and daemonsets only,
    so they are built again only when one of those changed."""

    def __init__(self) -> None:
        self._built: dict[tuple[str, bool, frozenset[str]], _Built] = {}
        self.merges = MergeMemo(frozenset())

    def get(self, pool: NodePoolTemplate, relax: bool, labels: frozenset[str]) -> NodeClaimTemplate:
        key = (pool.name, relax, labels)
        built = self._built.get(key)
        if built is None or not _same_pool(built.pool, pool):
            built = _Built(pool, relax, labels, NodeClaimTemplate(pool, relax, labels))
            self._built[key] = built
        return built.template

    def forget_except(self, names: Collection[str]) -> None:
        """Drop the templates of pools no longer in ``names``."""
        for key in [k for k in self._built if k[0] not in names]:
            del self._built[key]


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
        self._relax = options.min_values_policy == MIN_VALUES_BEST_EFFORT
        labels = reservation_labels(templates)
        ordered = ordered_templates(templates)
        self._templates = [(self._built.get(t, self._relax, labels), t) for t in ordered]
        self._built.forget_except({t.name for t in templates})
        usable = [template for template, _ in self._templates if template.options]
        self._reservations = Reservations(usable, options.reserved_offering_mode == RESERVED_STRICT)
        self.prefer_no_schedule_exists = prefers_no_schedule(templates)
        nodes = [(n.name, n.labels, n.taints) for n in existing if not n.in_flight]
        self.topology = TopologyBase([t.domain_source() for t in usable], nodes, placed)
        if len(self._built.merges) > _MERGES_KEPT or (
            self._built.merges.well_known != options.well_known_labels
        ):
            self._built.merges = MergeMemo(options.well_known_labels)
        self.memo = self._built.merges

    def claim_templates(self) -> list[NodeClaimTemplate]:
        """The pools for one solve, in the order new NodeClaims try them, each with its own
        limits left."""
        return [template.fork(pool.remaining) for template, pool in self._templates]

    def reservations(self) -> Reservations | None:
        """Reserved capacity for one solve, if any pool offers some."""
        return self._reservations.copy() if self._reservations.capacity else None

    def lone_template(self, pool: NodePoolTemplate) -> NodeClaimTemplate:
        """``pool`` alone for one solve, as ``Scheduler((), [pool], ...)`` builds it."""
        built = self._built.get(pool, self._relax, reservation_labels([pool]))
        return built.fork(pool.remaining)

    def placed_terms(self, leaving: Collection[str]) -> set[TopologyTerm]:
        """Required anti-affinity terms of the running pods that stay."""
        return self.topology.anti_terms(leaving)


def solve_trial(
    base: SolveBase,
    pods: Sequence[PodRequest],
    excluded: Collection[str] = (),
    leaving: Collection[str] = (),
) -> SchedulingResult:
    """Place ``pods`` as :func:`~nodewright.scheduling.solver.scheduler.solve` would on the
    cluster of ``base`` without the existing nodes whose name or NodeClaim is in ``excluded``
    and without the running pods of the nodes named in ``leaving``."""
    pods, skipped = split_dra_pods(pods)
    result = Scheduler.trial_of(base, pods, excluded, leaving).solve(pods)
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
