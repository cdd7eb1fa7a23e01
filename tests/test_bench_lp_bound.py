"""The scheduling benchmark's LP lower bound: exact on a case solvable by hand, and never
above the price of a fleet the solver really built. Imports scipy (dev dependency)."""

from __future__ import annotations

import pytest

from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.model import PodRequest
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import resources
from nodewright.scheduling.solver.scheduler import solve
from tests.bench_modules import load_bench

cases = load_bench("scheduling_cases")
prices = load_bench("scheduling_prices")


def _type(name: str, cpu: int, memory_gib: int, price: float) -> InstanceType:
    base = InstanceType(
        name=name,
        requirements=Requirements(),
        capacity=resources(cpu=cpu, memory=f"{memory_gib}Gi", pods=100),
    )
    return base.with_offerings([Offering(zone="z", capacity_type="on-demand", price=price)])


def test_bound_mixes_types_fractionally_when_that_is_cheapest() -> None:
    cpu_heavy, memory_heavy = _type("cpu", 4, 1, 1.0), _type("mem", 1, 4, 1.0)
    demand = [PodRequest("ns", "p", "u", resources(cpu=4, memory="4Gi", pods=1))]

    # 4a + b >= 4 and a + 4b >= 4 meet at a = b = 0.8: 1.6 $/h, cheaper than 2 of either.
    assert prices.lp_lower_bound(demand, [cpu_heavy, memory_heavy]) == pytest.approx(1.6)


def test_bound_is_below_the_price_of_the_solvers_fleet() -> None:
    catalog = cases.instance_types()
    pods = cases.plain_pods(300)
    requests = cases.pod_requests(pods)

    result = solve(requests, [], [cases.node_pool(catalog)])
    price = sum(prices.claim_price(c) for c in result.new_node_claims)

    assert 0 < prices.lp_lower_bound(requests, catalog) <= price
