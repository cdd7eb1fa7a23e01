"""A trial's watch for a certain "no": it counts only the new NodeClaims sure to be returned,
so a solve stopped by it decides as the full solve would."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import cast

from nodewright.api.labels import INSTANCE_TYPE_LABEL
from nodewright.scheduling.model import NodePoolTemplate, PodRequest, SolverOptions
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.solver.decision import DecisionWatch
from nodewright.scheduling.solver.nodeclaim import OpenNodeClaim
from nodewright.scheduling.topology import TopologyTerm
from tests.scheduling.scheduling_fakes import node_pool, pod

MIN_VALUES = Requirements([Requirement(INSTANCE_TYPE_LABEL, True, frozenset(), min_values=3)])


class _Claim:
    """What the watch reads of an open NodeClaim: its template (and its identity)."""

    def __init__(self, pool: NodePoolTemplate, relax: bool) -> None:
        self.template = SimpleNamespace(
            name=pool.name, requirements=pool.requirements, relax_min_values=relax
        )


def _claim(pool: NodePoolTemplate, *, relax: bool = False) -> OpenNodeClaim:
    return cast(OpenNodeClaim, _Claim(pool, relax))


def _no_terms() -> list[TopologyTerm]:
    return []


def _watch(
    pools: list[NodePoolTemplate], pods: list[PodRequest], pending: set[str], repack: bool = True
) -> DecisionWatch:
    return DecisionWatch(pools, SolverOptions(repack=repack), pods, pending, _no_terms)


def test_two_claims_repacking_may_merge_are_not_yet_a_no() -> None:
    pool = node_pool()
    pods = [pod("1"), pod("1"), pod("1", terms=[[("zone", "In", ["a"])]])]
    watch = _watch([pool], pods, set())
    first, second = _claim(pool), _claim(pool)
    watch.placed(first, pods[0])
    watch.placed(second, pods[1])
    assert not watch.decided, "repacking could put both claims' pods on one"
    watch.placed(second, pods[2])
    assert watch.decided, "a pod with node requirements keeps its claim out of repacking"


def test_without_repacking_or_in_a_pool_with_limits_two_claims_are_a_no() -> None:
    pool = node_pool()
    pods = [pod("1"), pod("1")]
    watch = _watch([pool], pods, set(), repack=False)
    watch.placed(_claim(pool), pods[0])
    watch.placed(_claim(pool), pods[1])
    assert watch.decided
    limited = node_pool(remaining={"cpu": 64_000})
    watch = _watch([limited], pods, set())
    watch.placed(_claim(limited), pods[0])
    watch.placed(_claim(limited), pods[1])
    assert watch.decided


def test_a_claim_min_values_may_refuse_counts_once_it_holds_a_running_pod() -> None:
    strict = replace(node_pool(), requirements=node_pool().requirements.add(MIN_VALUES))
    waiting = [pod("1", terms=[[("zone", "In", ["a"])]]) for _ in range(3)]
    running = pod("1", terms=[[("zone", "In", ["a"])]])
    watch = _watch([strict], [*waiting, running], {p.key for p in waiting})
    first, second = _claim(strict), _claim(strict)
    watch.placed(first, waiting[0])
    watch.placed(second, waiting[1])
    assert not watch.decided, "finish may refuse either claim, and then its waiting pods wait on"
    watch.placed(second, running)
    watch.placed(first, waiting[2])
    assert not watch.decided
    watch.unplaced([waiting[2].key])
    assert not watch.decided, "a waiting pod without a place is no reason to say no"
    watch.unplaced([running.key])
    assert watch.decided, "a running pod without a place is"


def test_best_effort_min_values_never_refuse_a_claim() -> None:
    strict = replace(node_pool(), requirements=node_pool().requirements.add(MIN_VALUES))
    waiting = [pod("1", terms=[[("zone", "In", ["a"])]]) for _ in range(2)]
    watch = _watch([strict], waiting, {p.key for p in waiting})
    watch.placed(_claim(strict, relax=True), waiting[0])
    watch.placed(_claim(strict, relax=True), waiting[1])
    assert watch.decided
