"""Scheduling benchmark with Karpenter's parameters (pkg/controllers/provisioning/scheduling/
scheduling_benchmark_test.go): 400 instance types, one NodePool without limits, an empty
cluster, and one of three pod mixes built as real Pod objects:

* ``plain``: CPU in {100m, 250m, 500m, 1, 1.5} and memory in {100Mi ... 4Gi}, nothing else;
* ``diverse`` (Karpenter's ``makeDiversePods``): a fifth each of plain pods, zonal and
  hostname topology spread (maxSkew 1), zonal required self-affinity and hostname required
  anti-affinity;
* ``preferences`` (``makePreferencePods``): one satisfiable preferred zone and two weighted
  preferred anti-affinities, solved once with preferences respected and once ignored.

    uv run --all-packages python bench/scheduling.py --mix diverse --pods 100 1000 5000 20000

Pods are built and parsed (``pod_request``) before the clock starts; only ``solve()`` is
timed. Every result is validated (each pod placed once, each NodeClaim's cheapest type fits
its pods, required anti-affinity, affinity and topology spread hold); the run exits non-zero
on an unscheduled pod or a violation. See bench/README.md for what each figure means.

The pods and catalog are in ``scheduling_cases.py``, prices and the LP bound in
``scheduling_prices.py``, the checks of a result in ``scheduling_validation.py``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from scheduling_cases import POD_MIXES, instance_types, node_pool, pod_requests
from scheduling_prices import claim_price, lp_lower_bound
from scheduling_validation import Violation, validate

from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import SolverOptions
from nodewright.scheduling.solver.scheduler import solve

MIXES = ("plain", "diverse", "preferences")
DEFAULT_COUNTS = {"plain": (100, 1000, 5000, 20000), "diverse": (100, 1000, 5000, 20000)}
#: Karpenter runs its preference benchmarks with 4000 pods.
DEFAULT_COUNTS["preferences"] = (4000,)
PROFILE_LINES = 25


@dataclass
class Run:
    mix: str
    policy: str
    pods: int
    seconds: float
    #: CPU time of the process during the solve: steadier than wall time on a busy machine.
    cpu_seconds: float
    node_claims: int
    price: float
    unscheduled: int
    violations: list[Violation]
    bound: float | None = None
    profile: pstats.Stats | None = None

    @property
    def ratio(self) -> float | None:
        return self.price / self.bound if self.bound else None


def run(
    mix: str,
    count: int,
    catalog: Sequence[InstanceType],
    policy: str = "Respect",
    profile: bool = False,
) -> Run:
    """Build ``count`` pods of ``mix``, time one solve, and check its result."""
    pods = POD_MIXES[mix](count)
    requests = pod_requests(pods)
    template = node_pool(catalog)
    options = SolverOptions(preference_policy=policy)
    profiler = cProfile.Profile() if profile else None
    gc.collect()
    started, cpu_started = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    result = solve(requests, [], [template], options)
    if profiler is not None:
        profiler.disable()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    violations, unscheduled = validate(pods, requests, result)
    return Run(
        mix=mix,
        policy=policy,
        pods=count,
        seconds=elapsed,
        cpu_seconds=cpu,
        node_claims=len(result.new_node_claims),
        price=sum(claim_price(c) for c in result.new_node_claims),
        unscheduled=unscheduled,
        violations=violations,
        bound=lp_lower_bound(requests, catalog) if mix == "plain" else None,
        profile=pstats.Stats(profiler) if profiler is not None else None,
    )


COLUMNS = (
    ("mix", 19),
    ("pods", 6),
    ("seconds", 8),
    ("cpu s", 8),
    ("pods/s", 7),
    ("nodeclaims", 10),
    ("$/h", 9),
    ("LP bound", 9),
    ("ratio", 6),
    ("unscheduled", 11),
    ("violations", 10),
    ("peak RSS", 9),
)


def _row(cells: Sequence[object]) -> str:
    return " ".join(f"{c!s:>{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=True))


def _print_violations(violations: Sequence[Violation], show: int) -> None:
    """Counts per kind, then the first ``show`` examples of each kind."""
    by_kind: dict[str, list[Violation]] = defaultdict(list)
    for violation in violations:
        by_kind[violation.kind].append(violation)
    for kind, found in by_kind.items():
        print(f"    {len(found)} {kind} violation(s), e.g.")
        for violation in found[:show]:
            print(f"      {violation.message}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--mix", choices=MIXES, default="diverse")
    parser.add_argument("--pods", type=int, nargs="+", help="pod counts (default per mix)")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile each solve; top 25 by cumulative time"
    )
    parser.add_argument(
        "--show", type=int, default=2, help="examples per violation kind (default 2)"
    )
    args = parser.parse_args(argv)
    catalog = instance_types()
    policies = ("Respect", "Ignore") if args.mix == "preferences" else ("Respect",)
    print(_row([name for name, _ in COLUMNS]))
    failed = False
    for count in args.pods or DEFAULT_COUNTS[args.mix]:
        for policy in policies:
            result = run(args.mix, count, catalog, policy, args.profile)
            failed |= result.unscheduled > 0 or bool(result.violations)
            peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            label = f"{args.mix}/{policy.lower()}" if len(policies) > 1 else args.mix
            print(
                _row(
                    [
                        label,
                        count,
                        f"{result.seconds:.3f}",
                        f"{result.cpu_seconds:.3f}",
                        f"{count / result.seconds:.0f}",
                        result.node_claims,
                        f"{result.price:.2f}",
                        "-" if result.bound is None else f"{result.bound:.2f}",
                        "-" if result.ratio is None else f"{result.ratio:.3f}",
                        result.unscheduled,
                        len(result.violations),
                        f"{peak_mib:.0f} MiB",
                    ]
                )
            )
            _print_violations(result.violations, args.show)
            if result.profile is not None:
                result.profile.sort_stats("cumulative").print_stats(PROFILE_LINES)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
