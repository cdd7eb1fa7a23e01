"""NodePools made into NodeClaimTemplates, kept from solve to solve.

Making a NodePool into a :class:`NodeClaimTemplate` walks its whole catalog (which types it
can launch, their offerings and daemonset overheads), and its memo tables fill as solves use
it. What that holds depends on the pool, its instance types and daemonsets alone, so a
:class:`ClaimTemplates` kept by a controller builds a pool's template again only when one of
those changed, and each solve takes a fork with its own limits left. Provisioning's solves,
consolidation's trial solves (:mod:`.trial`) and its one-off simulations all take their
templates from here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from nodewright.scheduling.model import NodePoolTemplate, SolverOptions
from nodewright.scheduling.solver.constraints import MergeMemo
from nodewright.scheduling.solver.nodeclaimtemplate import NodeClaimTemplate

#: Requirement merges kept before the shared memo starts over (a cache: dropping it costs
#: only merges done again).
_MERGES_KEPT = 200_000
MIN_VALUES_BEST_EFFORT = "BestEffort"


def ordered_templates(templates: Sequence[NodePoolTemplate]) -> list[NodePoolTemplate]:
    """NodePools in the order new NodeClaims try them: heaviest first, equal weights by name
    descending."""
    ordered = sorted(templates, key=lambda t: t.name, reverse=True)
    ordered.sort(key=lambda t: t.weight, reverse=True)
    return ordered


def reservation_labels(templates: Sequence[NodePoolTemplate]) -> frozenset[str]:
    """Labels that name a capacity reservation in some pool's offerings."""
    return frozenset(
        o.reservation.label
        for t in templates
        for it in t.instance_types
        for o in it.offerings
        if o.reservation is not None
    )


@dataclass
class _Built:
    pool: NodePoolTemplate
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
    """NodeClaimTemplates kept from solve to solve: a pool's launchable types, its topology
    domains and its memo tables depend on the pool, its instance types and daemonsets only,
    so they are built again only when one of those changed."""

    def __init__(self) -> None:
        self._built: dict[tuple[str, bool, frozenset[str]], _Built] = {}
        self._merges = MergeMemo(frozenset())

    def get(self, pool: NodePoolTemplate, relax: bool, labels: frozenset[str]) -> NodeClaimTemplate:
        """``pool``'s template, shared by every solve that asks (fork it for one solve)."""
        key = (pool.name, relax, labels)
        built = self._built.get(key)
        if built is None or not _same_pool(built.pool, pool):
            built = _Built(pool, NodeClaimTemplate(pool, relax, labels))
            self._built[key] = built
        return built.template

    def ordered(
        self, pools: Sequence[NodePoolTemplate], options: SolverOptions
    ) -> list[tuple[NodeClaimTemplate, NodePoolTemplate]]:
        """Each of ``pools`` with its shared template, in the order new NodeClaims try them;
        templates of pools not among them are forgotten."""
        relax = options.min_values_policy == MIN_VALUES_BEST_EFFORT
        labels = reservation_labels(pools)
        found = [(self.get(pool, relax, labels), pool) for pool in ordered_templates(pools)]
        self.forget_except({pool.name for pool in pools})
        return found

    def for_solve(
        self, pools: Sequence[NodePoolTemplate], options: SolverOptions
    ) -> list[NodeClaimTemplate]:
        """The templates of one solve over ``pools``, as ``Scheduler`` would build them: in
        :func:`ordered_templates` order, each with its own limits left."""
        return [template.fork(pool.remaining) for template, pool in self.ordered(pools, options)]

    def lone(self, pool: NodePoolTemplate, options: SolverOptions) -> NodeClaimTemplate:
        """``pool`` alone for one solve, as ``Scheduler((), [pool], ...)`` builds it."""
        relax = options.min_values_policy == MIN_VALUES_BEST_EFFORT
        return self.get(pool, relax, reservation_labels([pool])).fork(pool.remaining)

    def merges(self, well_known: frozenset[str]) -> MergeMemo:
        """The requirement merges worked out so far, for solves with these well-known labels
        (started over when the labels change or the memo grows past its bound)."""
        if len(self._merges) > _MERGES_KEPT or self._merges.well_known != well_known:
            self._merges = MergeMemo(well_known)
        return self._merges

    def forget_except(self, names: Collection[str]) -> None:
        """Drop the templates of pools no longer in ``names``."""
        for key in [k for k in self._built if k[0] not in names]:
            del self._built[key]
