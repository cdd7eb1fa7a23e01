"""Consolidation benchmark: about 1,000 pods on about 100 nodes, then the workload is scaled
down to 35% and nodewright's disruption controller consolidates the cluster.

    uv run --all-packages python bench/consolidation.py
    uv run --all-packages python bench/consolidation.py --pods 2000 --keep 0.35 --budget 20%

The real operator runs against the embedded cluster and the KWOK provider (its built-in
catalog, on-demand Linux amd64 types with 4 or 8 CPUs) on a simulated clock. Reported: the
simulated time from the scale-down until the cluster is stable (the last node launched or
removed), the disruptions (nodes removed by reason, replacements launched, commands), and the
hourly cost before and after against a lower bound for what remains (the cheapest fleet of
fractional nodes that covers the remaining pods' CPU, memory and pod slots; scipy, dev only).
See bench/README.md.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from nodewright.api.apps import Deployment
from nodewright.api.core import Pod
from nodewright.api.karpenter import NodePool
from nodewright.cluster.objects import mutable
from nodewright.controllers.nodeclaim.history import NodeRecord
from nodewright.controllers.options import Options
from nodewright.controllers.state.cluster import is_terminal
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.pods import pod_requests
from nodewright.scheduling.resources import CPU, MEMORY, PODS, ResourceList
from nodewright.simulation.runner import Simulation
from nodewright_kwok.nodeclass import KWOKNodeClass

GIB = 2**30
CPUS = ("100m", "250m", "500m", "1", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
NODE_CPUS = ("4", "8")
STABLE_LIMIT = timedelta(hours=4)


def node_pool(budget: str) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                            {
                                "key": "karpenter.sh/capacity-type",
                                "operator": "In",
                                "values": ["on-demand"],
                            },
                            {
                                "key": "karpenter.kwok.sh/instance-cpu",
                                "operator": "In",
                                "values": list(NODE_CPUS),
                            },
                        ],
                        "nodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "name": "default",
                        },
                    }
                },
                "disruption": {
                    "consolidationPolicy": "WhenEmptyOrUnderutilized",
                    "consolidateAfter": "0s",
                    "budgets": [{"nodes": budget}],
                },
            },
        }
    )


def deployments(pods: int, count: int, rng: random.Random) -> list[Deployment]:
    """``count`` deployments sharing ``pods`` replicas, each with its own pod shape."""
    result = []
    for index in range(count):
        replicas = pods // count + (1 if index < pods % count else 0)
        name = f"app-{index:02d}"
        requests = {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMORIES)}
        result.append(
            Deployment.model_validate(
                {
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {
                        "replicas": replicas,
                        "selector": {"matchLabels": {"app": name}},
                        "template": {
                            "metadata": {"labels": {"app": name}},
                            "spec": {
                                "terminationGracePeriodSeconds": 0,
                                "containers": [
                                    {
                                        "name": "app",
                                        "image": "pause",
                                        "resources": {"requests": requests},
                                    }
                                ],
                            },
                        },
                    },
                }
            )
        )
    return result


def hourly_cost(records: Iterable[NodeRecord], at: datetime) -> tuple[int, float]:
    """Nodes alive at ``at`` and their summed price per hour."""
    alive = [
        r
        for r in records
        if r.launched_at is not None
        and r.launched_at <= at
        and (r.removed_at is None or r.removed_at > at)
    ]
    return len(alive), sum(r.price_per_hour or 0.0 for r in alive)


def lower_bound(demand: ResourceList, catalog: Sequence[InstanceType]) -> float:
    """The cheapest fleet of fractional nodes covering CPU, memory and pod slots (an LP); no
    packing can cost less. Without scipy, the weaker best single-resource bound."""
    names = (CPU, MEMORY, PODS)
    scale = {CPU: 1000, MEMORY: 1000 * GIB, PODS: 1000}
    prices: list[float] = []
    columns: list[list[float]] = []
    for it in catalog:
        offered = [o.price for o in it.offerings if o.available]
        if offered:
            allocatable = it.allocatable()
            prices.append(min(offered))
            columns.append([allocatable.get(n, 0) / scale[n] for n in names])
    needed = [demand.get(n, 0) / scale[n] for n in names]
    try:
        from scipy.optimize import linprog  # noqa: PLC0415 - the only figure needing scipy
    except ImportError:
        return max(
            needed[r] * min(p / c[r] for p, c in zip(prices, columns, strict=True) if c[r] > 0)
            for r in range(len(names))
        )
    rows = [[-column[r] for column in columns] for r in range(len(names))]
    solution = linprog(
        prices, A_ub=rows, b_ub=[-n for n in needed], bounds=(0, None), method="highs"
    )
    if not solution.success:
        raise RuntimeError(f"LP lower bound failed: {solution.message}")
    return float(solution.fun)


def pool_catalog(sim: Simulation) -> list[InstanceType]:
    """The instance types the NodePool may launch, with only its on-demand offerings."""
    node_class = sim.cluster.get(KWOKNodeClass, "default")
    assert node_class is not None
    result = []
    for it in sim.operator.catalog.instance_types(node_class):
        cpu = it.requirements.get("karpenter.kwok.sh/instance-cpu")
        arch = it.requirements.get("kubernetes.io/arch")
        os = it.requirements.get("kubernetes.io/os")
        if cpu is None or arch is None or os is None:
            continue
        if not (any(cpu.has(c) for c in NODE_CPUS) and arch.has("amd64") and os.has("linux")):
            continue
        offerings = [o for o in it.offerings if o.capacity_type == "on-demand"]
        result.append(it.with_offerings(offerings))
    return result


@dataclass
class Outcome:
    nodes_before: int
    nodes_after: int
    cost_before: float
    cost_after: float
    bound: float
    stable_seconds: float
    removed: int
    launched: int
    pending: int


def run(pods: int, keep: float, count: int, budget: str, seed: int) -> Outcome:
    started = time.perf_counter()
    sim = Simulation(PluginHost.load(only=["kwok"]), Options(), seed=seed)
    sim.apply([KWOKNodeClass.model_validate({"metadata": {"name": "default"}}), node_pool(budget)])
    workloads = deployments(pods, count, random.Random(seed))
    sim.apply(workloads)
    sim.settle()
    history = sim.operator.disruption.history
    scaled_at = sim.clock.now()
    before_nodes, before_cost = hourly_cost(history.records.values(), scaled_at)
    running = sum(1 for p in sim.cluster.list(Pod) if p.spec.node_name and not is_terminal(p))
    decided_before = Counter(sim.operator.disruption.decisions)

    remaining = 0
    for deployment in workloads:
        stored = sim.cluster.get(Deployment, deployment.name, "default")
        assert stored is not None
        current = mutable(stored)
        current.spec.replicas = round(current.spec.replicas * keep)
        remaining += current.spec.replicas
        sim.cluster.update(current)
    sim.settle(STABLE_LIMIT)

    records = list(history.records.values())
    moments = [
        moment
        for r in records
        for moment in (r.launched_at, r.removed_at)
        if moment is not None and moment > scaled_at
    ]
    stable_at = max(moments, default=scaled_at)
    after_nodes, after_cost = hourly_cost(records, stable_at)
    removed = Counter(
        f"{r.disruption_reason or 'other'} ({r.disruption or 'not disrupted'})"
        for r in records
        if r.removed_at and r.removed_at > scaled_at
    )
    launched = sum(1 for r in records if r.launched_at and r.launched_at > scaled_at)
    live = [p for p in sim.cluster.list(Pod) if not is_terminal(p) and not p.deleting]
    pending = sum(1 for p in live if not p.spec.node_name)
    demand: ResourceList = {}
    for pod in live:
        for name, value in pod_requests(pod).items():
            demand[name] = demand.get(name, 0) + value
    demand[PODS] = demand.get(PODS, 0) + len(live) * 1000 - demand.get(PODS, 0)
    bound = lower_bound(demand, pool_catalog(sim))
    wall = time.perf_counter() - started
    queue = sim.operator.disruption.queue
    decisions = Counter(sim.operator.disruption.decisions) - decided_before

    print(f"pods: {running} running on {before_nodes} nodes, scaled to {remaining} ({keep:.0%})")
    # Figures below count from the scale-down; consolidation of the first packing is done by
    # then (the run settles first).
    print(f"budget: nodes {budget}")
    print(f"time to stable: {(stable_at - scaled_at).total_seconds():.0f} s simulated")
    print(
        "disruptions: "
        + ", ".join(f"{n} {label}" for label, n in sorted(removed.items()))
        + f"; {launched} replacement(s) launched; commands: "
        + ", ".join(f"{n} {d}/{r}" for (d, r), n in sorted(decisions.items()))
        + f" ({queue.failed} failed)"
    )
    print(f"cost before: ${before_cost:.4f}/h on {before_nodes} nodes")
    print(f"cost after:  ${after_cost:.4f}/h on {after_nodes} nodes")
    print(f"lower bound: ${bound:.4f}/h for what remains; after / bound = {after_cost / bound:.3f}")
    print(f"pending pods: {pending}")
    print(f"wall time: {wall:.1f} s")
    return Outcome(
        before_nodes,
        after_nodes,
        before_cost,
        after_cost,
        bound,
        (stable_at - scaled_at).total_seconds(),
        sum(removed.values()),
        launched,
        pending,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--keep", type=float, default=0.35, help="fraction of replicas kept")
    parser.add_argument("--deployments", type=int, default=10)
    parser.add_argument("--budget", default="10%", help="the NodePool's disruption budget")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    outcome = run(args.pods, args.keep, args.deployments, args.budget, args.seed)
    return 1 if outcome.pending else 0


if __name__ == "__main__":
    sys.exit(main())
