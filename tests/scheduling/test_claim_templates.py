"""NodeClaimTemplates kept from solve to solve (``solve(..., built=ClaimTemplates())``, as the
provisioner and consolidation's one-off simulations call it): each solve sees the pool as
it is now, exactly as a solve that builds its templates afresh."""

from __future__ import annotations

from nodewright.scheduling.model import NodePoolTemplate, PodRequest, SchedulingResult
from nodewright.scheduling.resources import resources
from nodewright.scheduling.solver.claimtemplates import ClaimTemplates
from nodewright.scheduling.solver.instancetypes import (
    allocatable_ceiling,
    allocatable_floor,
    options_fitting,
)
from nodewright.scheduling.solver.nodeclaimtemplate import NodeClaimTemplate
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.taints import Taint
from tests.scheduling.scheduling_fakes import instance_type, node_pool, pod


def _claims(result: SchedulingResult) -> list[tuple[str, list[str], int]]:
    return [
        (claim.node_pool, [t.name for t in claim.instance_types], len(claim.pods))
        for claim in result.new_node_claims
    ]


def _same_as_fresh(
    built: ClaimTemplates, pods: list[PodRequest], pools: list[NodePoolTemplate]
) -> SchedulingResult:
    kept = solve(pods, [], pools, built=built)
    fresh = solve(pods, [], pools)
    assert _claims(kept) == _claims(fresh)
    assert kept.errors == fresh.errors
    return kept


def test_a_kept_pool_launches_the_types_its_catalog_has_now() -> None:
    built = ClaimTemplates()
    small = instance_type("small", cpu="2", memory="4Gi")
    large = instance_type("large", cpu="8", memory="16Gi")
    pods = [pod(cpu="1500m", memory="1Gi") for _ in range(2)]
    before = _same_as_fresh(built, pods, [node_pool(instance_types=[small])])
    assert {name for _, names, _ in _claims(before) for name in names} == {"small"}
    after = _same_as_fresh(built, pods, [node_pool(instance_types=[small, large])])
    assert "large" in {name for _, names, _ in _claims(after) for name in names}


def test_each_solve_starts_from_the_limits_its_pool_has_left() -> None:
    built = ClaimTemplates()
    pods = [pod(cpu="3", memory="1Gi") for _ in range(3)]
    catalog = [instance_type("four", cpu="4", memory="8Gi")]
    roomy = _same_as_fresh(built, pods, [node_pool(instance_types=catalog)])
    assert len(roomy.new_node_claims) == 3
    # The first solve charged its three NodeClaims to its own copy of the limits.
    one_left = resources(cpu="4")
    limited = _same_as_fresh(built, pods, [node_pool(instance_types=catalog, remaining=one_left)])
    assert len(limited.new_node_claims) == 1
    assert len(limited.errors) == 2


def test_a_pool_tainted_since_the_last_solve_turns_pods_away() -> None:
    built = ClaimTemplates()
    pods = [pod(cpu="1", memory="1Gi")]
    assert not _same_as_fresh(built, pods, [node_pool()]).errors
    tainted = node_pool(taints=[Taint("dedicated", "NoSchedule", "gpu")])
    assert _same_as_fresh(built, pods, [tainted]).errors


def test_pools_are_tried_in_weight_order_whatever_order_they_were_kept_in() -> None:
    built = ClaimTemplates()
    pods = [pod(cpu="1", memory="1Gi")]
    light, heavy = node_pool("light"), node_pool("heavy", weight=10)
    assert _claims(_same_as_fresh(built, pods, [light]))[0][0] == "light"
    assert _claims(_same_as_fresh(built, pods, [light, heavy]))[0][0] == "heavy"
    assert _claims(_same_as_fresh(built, pods, [node_pool("light", weight=20), heavy]))[0][0] == (
        "light"
    )


def test_a_pool_keeps_the_bounds_of_each_set_of_its_types_apart() -> None:
    # Claims narrow a pool's types the same few ways in solve after solve; each set's
    # largest and smallest allocatable is kept, and a different set never gets another's.
    catalog = [
        instance_type("small", cpu="2", memory="4Gi", pods=4),
        instance_type("wide", cpu="4", memory="32Gi", pods=10),
        instance_type("gpu", cpu="8", memory="16Gi", pods=6, extra={"nvidia.com/gpu": "2"}),
    ]
    template = NodeClaimTemplate(node_pool(instance_types=catalog))
    options = template.options
    subsets = [options, options[:2], options[1:], options[::2], options[2:], options[:2], options]
    for subset in subsets:
        assert template.ceiling(subset) == allocatable_ceiling(subset)
        assert template.floor(subset) == allocatable_floor(subset)
    assert template.ceiling(options[:2]).get("nvidia.com/gpu") is None
    assert template.ceiling(options[2:])["nvidia.com/gpu"] == 2000
    asks = [
        resources(cpu="1", memory="1Gi"),
        resources(cpu="3", memory="1Gi"),
        resources(cpu="1", memory="20Gi"),
        {**resources(cpu="1"), "nvidia.com/gpu": 1000},
        resources(cpu="3", memory="1Gi"),
    ]
    for subset in subsets:
        for ask in asks:
            assert template.fitting(subset, ask) == options_fitting(subset, ask)
    assert [o.instance_type.name for o in template.fitting(options, asks[1])] == ["wide", "gpu"]
    assert [o.instance_type.name for o in template.fitting(options[:2], asks[1])] == ["wide"]


def test_claims_narrowed_differently_in_turn_fill_as_a_fresh_solve() -> None:
    built = ClaimTemplates()
    catalog = [
        instance_type("small", cpu="2", memory="4Gi", pods=4),
        instance_type("wide", cpu="4", memory="32Gi", pods=10),
        instance_type("tall", cpu="16", memory="8Gi", pods=10),
    ]
    pools = [node_pool(instance_types=catalog)]
    memory_heavy = [pod(cpu="500m", memory="6Gi") for _ in range(5)]
    cpu_heavy = [pod(cpu="3", memory="1Gi") for _ in range(5)]
    mixed = [p for pair in zip(memory_heavy, cpu_heavy, strict=True) for p in pair]
    for pods in (memory_heavy, cpu_heavy, mixed, memory_heavy, mixed):
        _same_as_fresh(built, pods, pools)
