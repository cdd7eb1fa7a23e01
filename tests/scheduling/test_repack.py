"""Repacking unconstrained pods when Karpenter's largest-first packing wastes money."""

from __future__ import annotations

from collections import Counter

from nodewright.api.labels import ARCH_LABEL, INSTANCE_TYPE_LABEL, OS_LABEL
from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.model import PodRequest, SchedulingResult, SolverOptions
from nodewright.scheduling.repack import claim_price
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import resources
from nodewright.scheduling.selectors import LabelSelector
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.topology import SPREAD, TopologyTerm
from tests.scheduling.scheduling_fakes import node_pool, pod

KARPENTER_ORDER = SolverOptions(repack=False)


def proportional_catalog(count: int = 32) -> tuple[InstanceType, ...]:
    """Type i: i+1 CPU and 2(i+1) GiB at 0.1 per CPU + 0.1 per GiB, as in Karpenter's bench."""
    types = []
    for i in range(count):
        size = i + 1
        name = f"size-{size}"
        types.append(
            InstanceType(
                name,
                Requirements.from_labels(
                    {INSTANCE_TYPE_LABEL: name, ARCH_LABEL: "amd64", OS_LABEL: "linux"}
                ),
                resources(cpu=size, memory=f"{2 * size}Gi", pods=10 * size),
            ).with_offerings([Offering("zone-1", "on-demand", round(0.3 * size, 4))])
        )
    return tuple(types)


def lopsided_pods() -> list[PodRequest]:
    """CPU-heavy and memory-heavy pods in equal measure: together they fit nodes exactly."""
    return [pod("3500m", "1Gi") for _ in range(40)] + [pod("500m", "7Gi") for _ in range(40)]


def total(result: SchedulingResult) -> float:
    return sum(claim_price(c) for c in result.new_node_claims)


def placed_once(result: SchedulingResult, pods: list[PodRequest]) -> bool:
    seen = Counter(p.key for c in result.new_node_claims for p in c.pods)
    return seen == Counter(p.key for p in pods)


def test_lopsided_batches_are_repacked_into_cheaper_balanced_nodes() -> None:
    pods = lopsided_pods()
    pool = node_pool(instance_types=proportional_catalog())
    karpenter = solve(pods, [], [pool], KARPENTER_ORDER)
    repacked = solve(pods, [], [pool])
    assert not karpenter.errors
    assert not repacked.errors
    assert placed_once(repacked, pods)
    # 160 CPU and 320 GiB of demand: 160 size-units at 0.3 is the floor.
    assert total(repacked) < total(karpenter) * 0.9
    assert total(repacked) <= 0.3 * 160 * 1.05
    for claim in repacked.new_node_claims:
        cheapest = claim.instance_types[0]
        allocatable = cheapest.allocatable()
        cpu = sum(p.requests["cpu"] for p in claim.pods)
        memory = sum(p.requests["memory"] for p in claim.pods)
        assert cpu <= allocatable["cpu"]
        assert memory <= allocatable["memory"]


def test_small_batches_come_out_exactly_as_karpenters() -> None:
    # Karpenter's "should pack small and large pods together": 20 identical nodes.
    pods = [pod("1", "1.8G") for _ in range(40)] + [pod("1", "400M") for _ in range(20)]
    result = solve(pods, [], [node_pool()])
    karpenter = solve(pods, [], [node_pool()], KARPENTER_ORDER)
    assert [c.pods for c in result.new_node_claims] == [c.pods for c in karpenter.new_node_claims]


def test_pods_a_topology_term_selects_stay_where_karpenter_put_them() -> None:
    spread = TopologyTerm(
        SPREAD,
        "topology.kubernetes.io/zone",
        LabelSelector.of({"app": "web"}),
        frozenset({"default"}),
        max_skew=1,
    )
    pods = lopsided_pods()
    pods[0] = PodRequest(**{**pods[0].__dict__, "topology": (spread,), "labels": {"app": "x"}})
    labelled = [PodRequest(**{**p.__dict__, "labels": {"app": "web"}}) for p in pods[1:]]
    batch = [pods[0], *labelled]
    pool = node_pool(instance_types=proportional_catalog())
    assert [c.pods for c in solve(batch, [], [pool]).new_node_claims] == [
        c.pods for c in solve(batch, [], [pool], KARPENTER_ORDER).new_node_claims
    ]


def test_pools_with_limits_are_not_repacked() -> None:
    pods = lopsided_pods()
    pool = node_pool(instance_types=proportional_catalog(), remaining=resources(cpu=10_000))
    repacked = solve(pods, [], [pool])
    karpenter = solve(pods, [], [pool], KARPENTER_ORDER)
    assert total(repacked) == total(karpenter)
