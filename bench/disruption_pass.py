"""One disruption pass over a settled cluster of 2,000 nodes and 20,160 diverse pods (issue 26).

    uv run --all-packages python bench/disruption_pass.py                 # 2,000 nodes, 3 passes
    uv run --all-packages python bench/disruption_pass.py --nodes 500 --scale 3 --repeat 5
    uv run --all-packages python bench/disruption_pass.py --profile pass.prof

Only the pass is timed, so the cluster is not provisioned by a simulation: it is written as a
``kubectl get -o json`` dump would hold it (:func:`cluster`) and loaded as ``simulate
--from-dump`` loads one. ``--nodes`` KWOK nodes of the diverse mix's NodePool
(``bench/diverse_mix.py``: three zones, ``WhenEmptyOrUnderutilized``, ``consolidateAfter: 0s``)
carry its forty Deployments at ``--scale`` (12: 20,160 pods), placed as the mix's constraints
require (zonal spreads round the zones, a hostname spread or anti-affinity at most one pod per
node, zonal affinity in one zone), at random (``random.Random(seed)``) on nodes kept below
``THIN`` of their CPU and memory, so that every node is a consolidation candidate. The nodes are
16-CPU types of the KWOK catalog (2, 4 and 8 GiB per CPU), half spot, half on-demand.

The simulation then settles without the disruption loop (the NodeClaims' conditions are
written meanwhile), and the loop's ``reconcile`` is timed with ``time.process_time``: the
first pass works out every node's verdict; each later pass starts as after a change that
leaves verdicts alone (no command pending, the searches' "consolidated" memos forgotten), so
every method runs its search again (emptiness, static drift, drift, multi-node, then single-node
when multi-node finds nothing). Printed: the first pass, the median and worst of ``--repeat``
later passes, the time each method's search took in the last, the command the pass found, and
the process's peak RSS. The target (issue 26) is 2 s of CPU for the median pass at the default
size.
"""

from __future__ import annotations

import argparse
import cProfile
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import diverse_mix
from whatif_dump import object_meta, owner

from nodewright.api.quantity import format_quantity
from nodewright.cluster.objects import tune_collector
from nodewright.commands.host import load_host
from nodewright.controllers.disruption import DisruptionController
from nodewright.controllers.disruption.memo import Memo
from nodewright.controllers.disruption.methods import Command, Method
from nodewright.simulation.inputs import kind_registry
from nodewright.simulation.limits import LARGE
from nodewright.simulation.runner import Simulation
from nodewright.simulation.snapshot import load_snapshot, read_items
from nodewright_kwok.catalog import default_catalog

MIB = 2**20
TARGET_S = 2.0
#: A node takes pods until this share of its CPU or memory is requested.
THIN = 0.6
TYPES = ("c-16x-amd64-linux", "s-16x-amd64-linux", "m-16x-amd64-linux")
CREATED = "2026-11-20T09:00:00Z"
HASH = "5d8f7c9b6"
CATALOG = default_catalog()


def _meta(name: str, namespace: str | None = None, **more: Any) -> dict[str, Any]:
    return object_meta(name, namespace, created=CREATED, resource_version=None, **more)


def _node(index: int) -> tuple[dict[str, Any], list[float]]:
    """A registered KWOK node of the mix's NodePool, and the CPU and memory (milli) it may
    take while thin."""
    type_name = TYPES[index % len(TYPES)]
    instance_type = CATALOG.get(type_name)
    assert instance_type is not None
    zone = diverse_mix.ZONES[index % len(diverse_mix.ZONES)]
    capacity_type = "spot" if index % 2 else "on-demand"
    name = f"default-{index:05d}"
    labels = {
        key: next(iter(requirement.values))
        for key, requirement in instance_type.requirements.items()
        if not requirement.complement and len(requirement.values) == 1
    }
    labels |= {
        "karpenter.sh/nodepool": "default",
        "karpenter.kwok.sh/kwoknodeclass": "default",
        "karpenter.sh/capacity-type": capacity_type,
        "topology.kubernetes.io/zone": zone,
        "kubernetes.io/hostname": name,
        "kwok.x-k8s.io/node": "fake",
    }
    allocatable = instance_type.allocatable()
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(name, labels=labels, annotations={"kwok.x-k8s.io/node": "fake"}),
        "spec": {"providerID": f"kwok://{name}"},
        "status": {
            "capacity": {k: format_quantity(v, k) for k, v in instance_type.capacity.items()},
            "allocatable": {k: format_quantity(v, k) for k, v in allocatable.items()},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastTransitionTime": CREATED,
                }
            ],
        },
    }
    return node, [allocatable["cpu"] * THIN, allocatable["memory"] * THIN]


def _milli(quantity: str, unit: int) -> float:
    if quantity.endswith("m"):
        return float(quantity[:-1])
    for suffix, size in (("Mi", 2**20), ("Gi", 2**30)):
        if quantity.endswith(suffix):
            return float(quantity[: -len(suffix)]) * size * 1000
    return float(quantity) * unit


def cluster(nodes: int = 2000, scale: int = 12, seed: int = 1) -> list[dict[str, Any]]:
    """The dump's items: the mix's NodePool and NodeClass, ``nodes`` nodes, and the mix's
    Deployments at ``scale`` with their ReplicaSets and running pods."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("default")},
        {**diverse_mix.NODEPOOL, "metadata": _meta("default")},
        {**diverse_mix.NODECLASS, "metadata": _meta("default")},
    ]
    made = [_node(i) for i in range(nodes)]
    items += [node for node, _ in made]
    room = [left for _, left in made]
    zones = diverse_mix.ZONES
    in_zone = [[i for i in range(nodes) if i % len(zones) == z] for z in range(len(zones))]
    everywhere = list(range(nodes))
    empty = everywhere[::-1]
    for index, deployment in enumerate(diverse_mix.diverse(scale)[2:]):
        name = deployment["metadata"]["name"]
        kind = index % 5
        template = deployment["spec"]["template"]
        requests = template["spec"]["containers"][0]["resources"]["requests"]
        cpu, memory = _milli(requests["cpu"], 1000), _milli(requests["memory"], 1000)
        replica_set = f"{name}-{HASH}"
        labels = {**template["metadata"]["labels"], "pod-template-hash": HASH}
        deployment["metadata"] = _meta(name, "default")
        items.append(deployment)
        items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": _meta(
                    replica_set,
                    "default",
                    labels=labels,
                    ownerReferences=[owner("Deployment", name)],
                ),
                "spec": {
                    "replicas": deployment["spec"]["replicas"],
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": template["spec"]},
                },
            }
        )
        taken: set[int] = set()
        for replica in range(deployment["spec"]["replicas"]):
            if kind == 1:  # zonal spread: round the zones
                pool = in_zone[replica % len(zones)]
            elif kind == 3:  # zonal affinity: one zone
                pool = in_zone[index % len(zones)]
            else:
                pool = everywhere
            apart = kind in (2, 4)  # hostname spread or anti-affinity: one per node

            def fits(
                i: int,
                cpu: float = cpu,
                memory: float = memory,
                apart: bool = apart,
                taken: set[int] = taken,
            ) -> bool:
                return room[i][0] >= cpu and room[i][1] >= memory and not (apart and i in taken)

            # An unconstrained pod goes to an empty node first: no node is empty (emptiness
            # would end the pass at once).
            target = empty.pop() if kind == 0 and empty and fits(empty[-1]) else None
            if target is None:
                target = _pick(rng, pool, fits)
            room[target][0] -= cpu
            room[target][1] -= memory
            taken.add(target)
            items.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": _meta(
                        f"{replica_set}-{replica:05d}",
                        "default",
                        labels=labels,
                        ownerReferences=[owner("ReplicaSet", replica_set)],
                    ),
                    "spec": {**template["spec"], "nodeName": made[target][0]["metadata"]["name"]},
                    "status": {
                        "phase": "Running",
                        "startTime": CREATED,
                        "conditions": [
                            {
                                "type": "PodScheduled",
                                "status": "True",
                                "lastTransitionTime": CREATED,
                            },
                            {"type": "Ready", "status": "True", "lastTransitionTime": CREATED},
                        ],
                    },
                }
            )
    return items


def _pick(rng: random.Random, pool: Sequence[int], fits: Callable[[int], bool]) -> int:
    for _ in range(50):
        choice = pool[rng.randrange(len(pool))]
        if fits(choice):
            return choice
    found = [i for i in pool if fits(i)]
    if not found:
        raise SystemExit("the pods do not fit thinly: use more --nodes or a smaller --scale")
    return rng.choice(found)


def settled(items: list[dict[str, Any]]) -> Simulation:
    """The cluster loaded and settled, without the disruption loop."""
    host = load_host()
    snapshot = read_items(items, "bench", kind_registry(host), limits=LARGE)
    simulation = Simulation(host)
    load_snapshot(simulation, snapshot)
    operator = simulation.operator
    loop = operator.disruption
    operator.controllers.remove(loop)
    simulation.settle()
    operator.controllers.append(loop)
    return simulation


class Timed:
    """Each method's search time in the last pass."""

    def __init__(self, loop: DisruptionController) -> None:
        self.seconds: dict[str, float] = {}
        self.found: Command | None = None
        for method in loop.methods:
            self._wrap(method)

    def _wrap(self, method: Method) -> None:
        compute = method.compute
        name = type(method).__name__

        def timed(*args: Any) -> Command | None:
            started = time.process_time()
            command = compute(*args)
            self.seconds[name] = time.process_time() - started
            if command is not None and command.candidates:
                self.found = command
            return command

        method.compute = timed  # type: ignore[method-assign]
        commands = getattr(method, "commands", None)
        if commands is not None:

            def timed_commands(*args: Any) -> list[Command]:
                started = time.process_time()
                found: list[Command] = commands(*args)
                self.seconds[name] = time.process_time() - started
                return found

            method.commands = timed_commands  # type: ignore[attr-defined]


def one_pass(loop: DisruptionController, timed: Timed) -> float:
    """One pass as after a change that leaves verdicts alone; its CPU seconds."""
    loop.pending = None
    loop._idle = None  # the loop's "nothing changed" shortcut
    for method in loop.methods:
        if hasattr(method, "memo"):
            method.memo = Memo()  # type: ignore[attr-defined]
    timed.seconds.clear()
    timed.found = None
    started = time.process_time()
    loop.reconcile()
    return time.process_time() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--scale", type=int, default=12, help="the mix's scale (12: 20,160 pods)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="passes after the first")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the passes into FILE")
    args = parser.parse_args(argv)

    tune_collector()  # as ``simulate`` and ``run`` do
    started = time.process_time()
    items = cluster(args.nodes, args.scale, args.seed)
    simulation = settled(items)
    settle_s = time.process_time() - started
    loop = simulation.operator.disruption
    timed = Timed(loop)
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    first = one_pass(loop, timed)
    if profiler is not None:
        profiler.disable()
    samples = []
    for _ in range(args.repeat):
        if profiler is not None:
            profiler.enable()
        samples.append(one_pass(loop, timed))
        if profiler is not None:
            profiler.disable()
    if profiler is not None:
        profiler.dump_stats(args.profile)
    pods = sum(1 for item in items if item["kind"] == "Pod")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MIB
    median = statistics.median(samples) if samples else first
    print(f"cluster: {args.nodes} nodes, {pods} pods; loaded and settled in {settle_s:.1f} s CPU")
    print(f"first pass (every verdict worked out): {first:.2f} s CPU")
    if samples:
        print(
            f"later passes: {median:.2f} s CPU median, {max(samples):.2f} s max of "
            f"{len(samples)} (target {TARGET_S:.0f} s)"
        )
    print("last pass by method: " + ", ".join(f"{k} {v:.2f} s" for k, v in timed.seconds.items()))
    found = (
        f"{len(timed.found.candidates)} node(s), {timed.found.describe()}"
        if timed.found is not None
        else "nothing"
    )
    print(f"found: {found}")
    print(f"peak RSS: {rss:.0f} MB")
    return 0 if median <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
