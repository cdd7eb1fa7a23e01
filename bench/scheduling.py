"""Scheduling benchmark with Karpenter's parameters (pkg/controllers/provisioning/scheduling/
scheduling_benchmark_test.go): 400 instance types, type i with i+1 CPU, 2(i+1) GiB and
10(i+1) pods, spot and on-demand in three zones, price 0.1 per CPU + 0.1 per GiB; one
NodePool without limits; pods with CPU in {100m, 250m, 500m, 1, 1.5} and memory from
100Mi to 4Gi. Only the plain pod mix for now (topology constraints come with the
scheduling-fidelity work).

    uv run --all-packages python bench/scheduling.py --pods 100 1000 5000

Prints pods/s, NodeClaims, total $/h and peak RSS; exits non-zero if any pod is left
unscheduled.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time

from nodewright.api.labels import ARCH_LABEL, INSTANCE_TYPE_LABEL, NODEPOOL_LABEL, OS_LABEL
from nodewright.scheduling.instancetype import InstanceType, InstanceTypeOverhead, Offering
from nodewright.scheduling.model import NodePoolTemplate, PodRequest
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import resources
from nodewright.scheduling.scheduler import solve

GIB = 2**30
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
CPUS = ("100m", "250m", "500m", "1", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")


def instance_types(count: int = 400) -> list[InstanceType]:
    types = []
    for i in range(count):
        cpu, memory_gib, pods = i + 1, 2 * (i + 1), 10 * (i + 1)
        price = 0.1 * cpu + 0.1 * memory_gib
        name = f"fake-it-{i}"
        offerings = [
            Offering(zone=zone, capacity_type=capacity_type, price=price)
            for zone in ZONES
            for capacity_type in ("spot", "on-demand")
        ]
        base = InstanceType(
            name=name,
            requirements=Requirements.from_labels(
                {INSTANCE_TYPE_LABEL: name, ARCH_LABEL: "amd64", OS_LABEL: "linux"}
            ),
            capacity=resources(cpu=cpu, memory=f"{memory_gib}Gi", pods=pods),
            overhead=InstanceTypeOverhead(kube_reserved=resources(cpu="100m", memory="10Mi")),
        )
        types.append(base.with_offerings(offerings))
    return types


def pods(count: int, rng: random.Random) -> list[PodRequest]:
    return [
        PodRequest(
            namespace="default",
            name=f"pod-{i}",
            uid=f"uid-{i}",
            requests=resources(cpu=rng.choice(CPUS), memory=rng.choice(MEMORIES), pods=1),
            order=i,
        )
        for i in range(count)
    ]


def run(count: int, catalog: list[InstanceType]) -> tuple[float, int, float, int]:
    template = NodePoolTemplate(
        name="default",
        weight=0,
        requirements=Requirements.from_labels({NODEPOOL_LABEL: "default"}),
        taints=(),
        instance_types=tuple(catalog),
    )
    batch = pods(count, random.Random(42))
    started = time.perf_counter()
    result = solve(batch, [], [template])
    elapsed = time.perf_counter() - started
    cheapest = sum(
        min(o.price for o in claim.instance_types[0].offerings) for claim in result.new_node_claims
    )
    return elapsed, len(result.new_node_claims), cheapest, len(result.errors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, nargs="+", default=[100, 1000, 5000])
    args = parser.parse_args()
    catalog = instance_types()
    widths = (7, 8, 9, 10, 9, 11)
    columns = ("pods", "seconds", "pods/s", "nodeclaims", "$/h", "unscheduled")
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    failed = False
    for count in args.pods:
        elapsed, claims, price, errors = run(count, catalog)
        failed |= errors > 0
        cells = (count, f"{elapsed:.3f}", f"{count / elapsed:.0f}", claims, f"{price:.2f}", errors)
        print(" ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak_mib:.0f} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
