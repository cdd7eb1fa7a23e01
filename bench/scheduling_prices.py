"""What a scheduling result costs: the price of each new NodeClaim, and the LP lower bound no
packing can beat (bench/README.md explains the bound)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import NewNodeClaim, PodRequest
from nodewright.scheduling.resources import CPU, MEMORY, PODS

GIB = 2**30


def launch_options(claim: NewNodeClaim) -> list[tuple[float, InstanceType]]:
    """(cheapest compatible available offering, type) for each type the claim can launch."""
    options = []
    for it in claim.instance_types:
        prices = [o.price for o in it.offerings if o.available and o.matches(claim.requirements)]
        if prices:
            options.append((min(prices), it))
    return options


def claim_price(claim: NewNodeClaim) -> float:
    options = launch_options(claim)
    return min(price for price, _ in options) if options else float("inf")


def lp_lower_bound(requests: Iterable[PodRequest], catalog: Sequence[InstanceType]) -> float:
    """The cheapest fleet with fractional nodes that covers the pods' total CPU, memory and
    pod slots: min sum(price_i x_i) s.t. sum(allocatable_i x_i) >= demand, x >= 0.

    Any real packing is a feasible integer point of this LP, so no solver can be cheaper.
    """
    from scipy.optimize import linprog  # noqa: PLC0415 - only this figure needs scipy

    names = (CPU, MEMORY, PODS)
    scale = {CPU: 1000, MEMORY: 1000 * GIB, PODS: 1000}  # milli-units to cores, GiB, pods
    demand = dict.fromkeys(names, 0)
    for pod in requests:
        for name in names:
            demand[name] += pod.requests.get(name, 0)
    prices: list[float] = []
    columns: list[list[float]] = []
    for it in catalog:
        offered = [o.price for o in it.offerings if o.available]
        if not offered:
            continue
        allocatable = it.allocatable()
        prices.append(min(offered))
        columns.append([allocatable.get(name, 0) / scale[name] for name in names])
    rows = [[-column[r] for column in columns] for r in range(len(names))]
    needed = [-demand[name] / scale[name] for name in names]
    solution = linprog(prices, A_ub=rows, b_ub=needed, bounds=(0, None), method="highs")
    if not solution.success:
        raise RuntimeError(f"LP lower bound failed: {solution.message}")
    return float(solution.fun)
