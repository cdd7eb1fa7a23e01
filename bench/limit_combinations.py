"""What the default limits admit together (issue 32): inputs that each stay within every
default limit of ``nodewright simulate`` but combine them, run as a user runs them, and the
runs a user commonly asks for, which must run within them.

Each limit is sized alone (docs/simulate.md, "What a run at the limits costs"); these cases
put several at or near their limits at once, and the ones beyond the work a simulation may
do must be refused (exit 2, one ``error:`` line) rather than run for minutes:

    uv run --all-packages python bench/limit_combinations.py                  # every case
    uv run --all-packages python bench/limit_combinations.py --case static-1k-week
    uv run --all-packages python bench/limit_combinations.py --cpu-limit 300 --case anti-1k-churn
    uv run --all-packages python bench/limit_combinations.py --limits large   # unit cost

Each case runs in a child process with a CPU limit (``--cpu-limit`` seconds, ``RLIMIT_CPU``)
and a wall timeout, and prints the child's exit status, CPU (user + system), peak RSS, the
nodes and pods of its report, the units of work it did (the report's ``work``, or the
refusal's count) and how many a CPU-second, the load average before and after, and its
``error:`` line if it was refused. "ok" is the rule of issue 32: exit 0 within 30 s of CPU
and 1.5 GB, or exit 2 with one ``error:`` line; a case marked as a common run must exit 0.
With ``--limits large`` nothing stops at the work limit, which shows what a unit of work
costs in CPU in each case (docs/simulate.md has the table).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import diverse_mix
import whatif_dump
import yaml

MIB = 2**20
BUDGET_CPU = 30.0
BUDGET_RSS_MB = 1536.0

Objects = list[dict[str, Any]]
Steps = list[dict[str, Any]]


def _static_pool(replicas: int) -> dict[str, Any]:
    pool = json.loads(json.dumps(diverse_mix.NODEPOOL))
    pool["metadata"]["name"] = "static"
    pool["spec"]["replicas"] = replicas
    pool["spec"].pop("disruption")
    pool["spec"]["template"]["spec"]["requirements"].append(
        {"key": "karpenter.kwok.sh/instance-cpu", "operator": "In", "values": ["4"]}
    )
    return pool


def _anti(name: str, replicas: int, cpu: str = "100m") -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {"app": name}},
        "topologyKey": diverse_mix.HOSTNAME_KEY,
    }
    constraint = {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }
    return diverse_mix.deployment(name, replicas, cpu, "128Mi", constraint)


def _big_pods(replicas: int) -> Objects:
    """Pods each too big to share a node: 3 CPU on a pool of 4-CPU types."""
    pool = json.loads(json.dumps(diverse_mix.NODEPOOL))
    pool["spec"]["template"]["spec"]["requirements"].append(
        {"key": "karpenter.kwok.sh/instance-cpu", "operator": "In", "values": ["4"]}
    )
    return [pool, diverse_mix.NODECLASS, diverse_mix.deployment("big", replicas, "3", "1Gi")]


def _steps(count: int) -> Steps:
    """``count`` steps, each scaling a Deployment between 10 pods and none: a node launched
    or removed each time."""
    return [
        {"scale": {"kind": "Deployment", "name": "inflate", "replicas": 10 * (i % 2)}}
        for i in range(count)
    ]


def _churn(name: str, replicas: int, cycles: int) -> Steps:
    steps: Steps = []
    for _ in range(cycles):
        steps.append({"scale": {"kind": "Deployment", "name": name, "replicas": 0}})
        steps.append({"scale": {"kind": "Deployment", "name": name, "replicas": replicas}})
    return steps


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    build: Callable[[Path], tuple[Objects, Steps, list[str]]]
    #: A run users commonly ask for: it must run within the default limits.
    common: bool = False


def _case(objects: Objects, steps: Steps, arguments: Sequence[str] = ()) -> Callable[[Path], Any]:
    return lambda _: (objects, steps, list(arguments))


def _inflate(replicas: int, advance: str) -> Callable[[Path], Any]:
    """examples/inflate (one KWOK NodePool, a Deployment of 1-CPU pods) scaled to
    ``replicas`` and advanced."""
    manifests = Path(__file__).resolve().parents[1] / "examples" / "inflate" / "manifests"

    def build(_: Path) -> tuple[Objects, Steps, list[str]]:
        scale = {"kind": "Deployment", "name": "inflate", "namespace": "default"}
        steps: Steps = [{"scale": {**scale, "replicas": replicas}}, {"advance": advance}]
        return [], steps, [str(manifests)]

    return build


def _what_if(nodes: int, pods: int, advance: str) -> Callable[[Path], Any]:
    def build(folder: Path) -> tuple[Objects, Steps, list[str]]:
        dump = folder / "dump.json"
        whatif_dump.write(dump, nodes, pods)
        arguments = ["--from-dump", str(dump), "--provider-option", "aws.offline=us-east-1"]
        return [], [{"advance": advance}] if advance else [], arguments

    return build


WEEK: Steps = [{"advance": "168h"}]
DAY: Steps = [{"advance": "24h"}]
STATIC = ["--feature-gates", "StaticCapacity=true"]
CASES = [
    Case(
        "static-1k",
        "a static NodePool of 1,000 nodes (the static-node limit), alone",
        _case([_static_pool(1000), diverse_mix.NODECLASS], [], STATIC),
    ),
    Case(
        "steps-500",
        "500 steps (the step limit), each scaling 10 pods up or down, alone",
        _case(
            [
                diverse_mix.NODEPOOL,
                diverse_mix.NODECLASS,
                diverse_mix.deployment("inflate", 0, "1", "1Gi"),
            ],
            _steps(500),
        ),
    ),
    Case(
        "whatif-60",
        "--from-dump of 60 EKS nodes and 600 pods (the snapshot limit), alone",
        _what_if(60, 600, ""),
    ),
    Case(
        "static-1k-week",
        "a static NodePool of 1,000 nodes (the limit) advanced 168h (the limit)",
        _case([_static_pool(1000), diverse_mix.NODECLASS], WEEK, STATIC),
    ),
    Case(
        "static-1k-day",
        "the same advanced 24h",
        _case([_static_pool(1000), diverse_mix.NODECLASS], DAY, STATIC),
    ),
    Case(
        "anti-1k-day",
        "1,000 pods with hostname anti-affinity (1,000 nodes) advanced 24h",
        _case(diverse_mix.anti_affinity(1000), DAY),
    ),
    Case(
        "anti-1k-week",
        "1,000 pods with hostname anti-affinity (1,000 nodes, the limit) advanced 168h",
        _case(diverse_mix.anti_affinity(1000), WEEK),
    ),
    Case(
        "anti-1k-churn",
        "1,000 pods with hostname anti-affinity scaled to 0 and back, 5 times (10 of 500 steps)",
        _case(diverse_mix.anti_affinity(1000), _churn("anti", 1000, 5)),
    ),
    Case(
        "anti-20x1k",
        "20 Deployments of 1,000 pods with hostname anti-affinity each (20,000 pods)",
        _case(
            [diverse_mix.NODEPOOL, diverse_mix.NODECLASS]
            + [_anti(f"anti{i}", 1000) for i in range(20)],
            [],
        ),
    ),
    Case(
        "anti-5x1k-big",
        "5 Deployments of 1,000 pods with hostname anti-affinity, 1 CPU each (5,000 pods)",
        _case(
            [diverse_mix.NODEPOOL, diverse_mix.NODECLASS]
            + [_anti(f"anti{i}", 1000, "1") for i in range(5)],
            [],
        ),
    ),
    Case(
        "big-2k",
        "2,000 pods each too big to share a node (3 CPU on 4-CPU types): stopped at 1,501 nodes",
        _case(_big_pods(2000), []),
    ),
    Case(
        "big-20k",
        "20,000 such pods (the pod limit): the first pass plans 1,501 nodes and the run stops",
        _case(_big_pods(20_000), []),
    ),
    Case(
        "20k-week",
        "20,000 pods (the pod limit) in one Deployment advanced 168h",
        _case(
            [
                diverse_mix.NODEPOOL,
                diverse_mix.NODECLASS,
                diverse_mix.deployment("inflate", 20_000, "1", "1Gi"),
            ],
            WEEK,
        ),
    ),
    Case(
        "diverse-18k",
        "the diverse mix at 18,480 pods (bench/simulate.py's case)",
        _case(diverse_mix.diverse(11), []),
    ),
    Case(
        "whatif-60-week",
        "--from-dump of 60 EKS nodes and 600 pods (the snapshot limit) advanced 168h",
        _what_if(60, 600, "168h"),
    ),
    Case(
        "whatif-60-day",
        "the same advanced 24h (a common run)",
        _what_if(60, 600, "24h"),
        common=True,
    ),
    Case(
        "whatif-60-6h",
        "the same advanced 6h",
        _what_if(60, 600, "6h"),
    ),
    Case(
        "inflate-400-day",
        "examples/inflate scaled to 400 pods (5 nodes) advanced 24h (a common run)",
        _inflate(400, "24h"),
        common=True,
    ),
    Case(
        "inflate-400-week",
        "the same advanced 168h (a common run)",
        _inflate(400, "168h"),
        common=True,
    ),
    Case(
        "inflate-1k-day",
        "examples/inflate scaled to 1,000 pods, 600 of them left pending by the NodePool's "
        "CPU limit (provisioning tries them again every pass), advanced 24h",
        _inflate(1000, "24h"),
    ),
    Case(
        "anti-30-week",
        "30 pods with hostname anti-affinity (30 nodes consolidation looks at every 10 s) "
        "advanced 168h",
        _case(diverse_mix.anti_affinity(30), WEEK),
    ),
]


@dataclass
class Result:
    exit_code: int
    cpu: float
    rss_mb: float
    wall: float
    nodes: int | None
    pods: int | None
    error: str
    load: tuple[float, float]
    #: Units of work the run did: the report's, or the refusal's count.
    work: int | None = None


def run(
    case: Case, folder: Path, cpu_limit: int, wall_timeout: float, limits: str = "default"
) -> Result:
    objects, steps, arguments = case.build(folder)
    command = [sys.executable, "-m", "nodewright.commands", "simulate"]
    if objects:
        manifests = folder / "manifests.yaml"
        manifests.write_text(yaml.safe_dump_all(objects, sort_keys=False))
        command.append(str(manifests))
    if steps:
        scenario = folder / "scenario.yaml"
        scenario.write_text(yaml.safe_dump({"steps": steps}, sort_keys=False))
        command += ["--scenario", str(scenario)]
    report = folder / "report.json"
    command += [*arguments, "--limits", limits, "--json", str(report)]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with open(folder / "output.log", "wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        # Beyond the limit the child gets SIGXCPU (shown as exit -24).
        resource.prlimit(process.pid, resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 5))
        deadline = started + wall_timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                _, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.2)
    wall = time.perf_counter() - started
    nodes = pods = work = None
    if report.exists():
        data = json.loads(report.read_text())
        nodes, pods = len(data.get("nodes", [])), len(data.get("pods", []))
        work = data.get("work")
    errors = [
        line
        for line in (folder / "output.log").read_text(errors="replace").splitlines()
        if line.startswith("error:")
    ]
    done = re.search(r"the run has done ([\d,]+) units of work", " ".join(errors))
    if done is not None:
        work = int(done.group(1).replace(",", ""))
    return Result(
        exit_code=os.waitstatus_to_exitcode(status),
        cpu=usage.ru_utime + usage.ru_stime,
        rss_mb=usage.ru_maxrss * 1024 / MIB,
        wall=wall,
        nodes=nodes,
        pods=pods,
        error=" | ".join(errors),
        load=(load_before, os.getloadavg()[0]),
        work=work,
    )


def ok(result: Result, common: bool = False) -> bool:
    if result.exit_code == 2 and not common:
        return result.error.count("error:") == 1
    return result.exit_code == 0 and result.cpu <= BUDGET_CPU and result.rss_mb <= BUDGET_RSS_MB


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = [case.name for case in CASES]
    parser.add_argument("--case", nargs="+", choices=names, default=names, metavar="CASE")
    parser.add_argument("--cpu-limit", type=int, default=120, help="CPU seconds per run")
    parser.add_argument("--wall-timeout", type=float, default=900.0, help="wall seconds per run")
    parser.add_argument("--keep", action="store_true", help="keep the generated folders")
    parser.add_argument(
        "--limits", choices=["default", "large"], default="default", help="simulate's --limits"
    )
    args = parser.parse_args(argv)
    print(
        f"{'case':<16} {'exit':>4} {'cpu s':>7} {'rss MB':>7} {'wall s':>7} {'nodes':>6}"
        f" {'pods':>6} {'work':>12} {'work/cpu-s':>10} {'load':>11}  ok  error"
    )
    failed = False
    for case in CASES:
        if case.name not in args.case:
            continue
        folder = Path(tempfile.mkdtemp(prefix=f"nodewright-combo-{case.name}-"))
        result = run(case, folder, args.cpu_limit, args.wall_timeout, args.limits)
        if args.keep:
            print(f"# {case.name}: {folder}", file=sys.stderr)
        good = ok(result, case.common and args.limits == "default")
        failed |= not good
        load = f"{result.load[0]:.1f}-{result.load[1]:.1f}"
        shown = lambda value: "-" if value is None else str(value)  # noqa: E731
        work = "-" if result.work is None else f"{result.work:,}"
        rate = "-" if result.work is None else f"{result.work / max(result.cpu, 0.01):,.0f}"
        print(
            f"{case.name:<16} {result.exit_code:>4} {result.cpu:>7.1f} {result.rss_mb:>7.0f}"
            f" {result.wall:>7.1f} {shown(result.nodes):>6} {shown(result.pods):>6}"
            f" {work:>12} {rate:>10} {load:>11}  {'yes' if good else 'NO '}"
            f"  {result.error[:300]}",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
