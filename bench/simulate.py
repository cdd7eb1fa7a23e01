"""End-to-end benchmark of ``nodewright simulate``: the whole process, as a user runs it.

Each case writes its manifests (a KWOK NodePool and NodeClass, pause-pod Deployments, and for
one case existing Nodes) and a scenario into a temporary folder, runs ``nodewright simulate``
on them in a child process, and reports the child's wall time, CPU time (user + system),
peak RSS and pods per CPU second, next to the case's target:

    uv run --all-packages python bench/simulate.py                       # every case
    uv run --all-packages python bench/simulate.py --case 1k 10k          # some of them
    uv run --all-packages python bench/simulate.py --case idle --repeat 5

Before the first case it writes the bytecode of nodewright and what it runs on, as an install
has it (bench/bytecode.py); ``--no-bytecode`` leaves it out, so each child compiles what it
imports when the machine keeps no bytecode (``PYTHONDONTWRITEBYTECODE=1``).

The ``idle`` case is not a ``simulate`` run: it settles the 20,000-pod / 2,000-node cluster of
``existing-2k`` in this process, then times single passes of every controller
(``Operator.run_once``) while nothing changes, which is what ``nodewright run`` does on an idle
cluster between events. See bench/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bytecode
import diverse_mix
import reserved_catalog
import whatif_dump
import yaml

from nodewright import metrics
from nodewright.api.core import Node, Pod
from nodewright.api.manifests.loading import load_paths
from nodewright.commands.host import load_host
from nodewright.simulation.inputs import kind_registry
from nodewright.simulation.runner import Simulation

MIB = 2**20

NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "requirements": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["spot", "on-demand"],
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
            "consolidateAfter": "30s",
        },
    },
}
NODECLASS = {
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "default"},
}


def deployment(name: str, replicas: int, cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
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
                            "name": "pause",
                            "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                        }
                    ],
                },
            },
        },
    }


def existing_node(index: int) -> dict[str, Any]:
    """A Ready node nodewright did not launch (a managed node group's), 4 CPU / 16 GiB."""
    zone = f"test-zone-{'abc'[index % 3]}"
    name = f"existing-{index:04d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": "m5.xlarge",
                "topology.kubernetes.io/zone": zone,
            },
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    pods: int
    target_cpu: float | None
    target_rss_mb: float | None
    build: Callable[[Path], tuple[list[dict[str, Any]], list[dict[str, Any]]]]
    #: More ``simulate`` arguments, given the case's folder (files they name are written there).
    arguments: Callable[[Path], list[str]] | None = None
    #: Run with ``--limits large``: the case is beyond a default limit.
    large: bool = False
    #: Pods the case leaves waiting by design (behind a NodePool's limits).
    waiting: bool = False


def _objects(build: Callable[[], list[dict[str, Any]]]) -> Callable[[Path], Any]:
    def objects(_: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return build(), []

    return objects


def _no_manifests(_: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [], []


def _what_if(nodes: int, pods: int) -> Callable[[Path], list[str]]:
    """``--from-dump`` of a generated EKS cluster (bench/whatif_dump.py), offline AWS catalog."""

    def arguments(folder: Path) -> list[str]:
        dump = folder / "dump.json"
        whatif_dump.write(dump, nodes, pods)
        return ["--from-dump", str(dump), "--provider-option", "aws.offline=us-east-1"]

    return arguments


def _one_deployment(replicas: int) -> Callable[[Path], Any]:
    def build(_: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return [NODEPOOL, NODECLASS, deployment("inflate", replicas)], []

    return build


def _scale_down(_: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    steps = [
        {"scale": {"kind": "Deployment", "name": "inflate", "replicas": 3000}},
        {"advance": "10m"},
    ]
    return [NODEPOOL, NODECLASS, deployment("inflate", 10_000)], steps


def _advance(replicas: int) -> Callable[[Path], Any]:
    """``replicas`` pods (none: an empty cluster), then a week of simulated time (the limit)
    in which nothing changes: what idle time costs."""

    def build(_: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        steps = [{"advance": "168h"}]
        return [NODEPOOL, NODECLASS, deployment("inflate", replicas)], steps

    return build


def _behind_limit(replicas: int, cpu_limit: int, wait: str) -> Callable[[Path], Any]:
    """``replicas`` one-CPU pods for a NodePool whose ``limits`` allow ``cpu_limit`` CPUs:
    most of them wait, pass after pass, for ``wait`` of simulated time."""

    def build(_: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        pool = {**NODEPOOL, "spec": {**NODEPOOL["spec"], "limits": {"cpu": cpu_limit}}}
        return [pool, NODECLASS, deployment("inflate", replicas)], [{"advance": wait}]

    return build


def _existing_nodes(_: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(42)
    objects: list[dict[str, Any]] = [NODEPOOL, NODECLASS]
    objects += [existing_node(i) for i in range(2000)]
    for index in range(200):
        cpu = rng.choice(("250m", "500m", "1"))
        memory = rng.choice(("256Mi", "512Mi", "1Gi", "2Gi"))
        objects.append(deployment(f"app-{index:03d}", 100, cpu, memory))
    return objects, []


def _reserved(overlay_count: int) -> Callable[[Path], Any]:
    def build(_: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        objects = [
            NODEPOOL,
            NODECLASS,
            *reserved_catalog.overlays(overlay_count),
            deployment("inflate", 10_000),
        ]
        return objects, []

    return build


def _reserved_arguments(gated: bool) -> Callable[[Path], list[str]]:
    def arguments(folder: Path) -> list[str]:
        catalog = folder / "instance-types.json"
        catalog.write_text(json.dumps(reserved_catalog.catalog()))
        more = ["--provider-option", f"kwok.instance-types-file={catalog}"]
        if gated:
            spread = {
                "podTopologySpread": {
                    "defaultConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "ScheduleAnyway",
                        }
                    ]
                }
            }
            config = folder / "scheduler-config.yaml"
            config.write_text(yaml.safe_dump(spread))
            more += ["--feature-gates", "NodeOverlay=true", "--scheduler-config", str(config)]
        return more

    return arguments


CASES = [
    Case("1k", "1,000 pause pods (1 CPU, 1 Gi) scale-out", 1000, 2.0, 200, _one_deployment(1000)),
    Case("10k", "10,000 pods scale-out", 10_000, 10.0, 500, _one_deployment(10_000)),
    Case(
        "scale-down-10k",
        "10,000 pods, then scale to 30% and advance 10 minutes",
        10_000,
        20.0,
        500,
        _scale_down,
    ),
    Case(
        "existing-2k",
        "20,000 pods in 200 Deployments with 2,000 existing nodes",
        20_000,
        60.0,
        1000,
        _existing_nodes,
    ),
    Case("idle-168h", "an empty cluster advanced a week", 0, 2.0, None, _advance(0)),
    Case(
        "idle-168h-10",
        "10 pods advanced a week (the time limit), consolidation looking at their node",
        10,
        30.0,
        None,
        _advance(10),
    ),
    Case(
        "20k",
        "20,000 pods in one Deployment (the pod limit)",
        20_000,
        30.0,
        1500,
        _one_deployment(20_000),
    ),
    Case(
        "100k",
        "100,000 pods in one Deployment (--limits large: its pod limit)",
        100_000,
        300.0,
        2000,
        _one_deployment(100_000),
        large=True,
    ),
    Case(
        "limited-4k-1h",
        "4,000 pods, a NodePool limited to 500 CPUs: 3,500 wait an hour (--limits large)",
        4000,
        None,
        None,
        _behind_limit(4000, 500, "1h"),
        large=True,
        waiting=True,
    ),
    Case(
        "reserved-10k",
        "10,000 pods on a catalog with capacity reservations (the next case's baseline)",
        10_000,
        None,
        None,
        _reserved(0),
        _reserved_arguments(gated=False),
    ),
    Case(
        "overlays-10k",
        "the same with 50 NodeOverlays and a default zone spread (SCHEDULER_CONFIG)",
        10_000,
        None,
        None,
        _reserved(50),
        _reserved_arguments(gated=True),
    ),
    Case(
        "diverse-1.7k",
        "40 Deployments of the diverse mix (spreads, affinity, anti-affinity), 1,680 pods",
        diverse_mix.diverse_pods(1),
        3.0,
        None,
        _objects(lambda: diverse_mix.diverse(1)),
    ),
    Case(
        "diverse-5k",
        "the same, 5,040 pods (--limits large: 1,440 of them each need a node of their own)",
        diverse_mix.diverse_pods(3),
        10.0,
        None,
        _objects(lambda: diverse_mix.diverse(3)),
        large=True,
    ),
    Case(
        "diverse-18k",
        "the same, 18,480 pods (--limits large: 5,280 of them each need a node of their own)",
        diverse_mix.diverse_pods(11),
        60.0,
        1000,
        _objects(lambda: diverse_mix.diverse(11)),
        large=True,
    ),
    Case(
        "diverse-20k",
        "the same, 20,160 pods (--limits large)",
        diverse_mix.diverse_pods(12),
        60.0,
        1000,
        _objects(lambda: diverse_mix.diverse(12)),
        large=True,
    ),
    Case(
        "anti-1k",
        "1,000 pods with required hostname anti-affinity (one node each; the limit on such pods)",
        1000,
        30.0,
        None,
        _objects(lambda: diverse_mix.anti_affinity(1000)),
    ),
    Case(
        "anti-2k",
        "2,000 pods with required hostname anti-affinity (one node each; --limits large)",
        2000,
        None,
        None,
        _objects(lambda: diverse_mix.anti_affinity(2000)),
        large=True,
    ),
    Case(
        "spread-1k",
        "1,000 pods with a DoNotSchedule hostname spread (one node each; the limit)",
        1000,
        30.0,
        None,
        _objects(lambda: diverse_mix.hostname_spread(1000)),
    ),
    Case(
        "spread-3k",
        "3,000 pods with a DoNotSchedule hostname spread (one node each; --limits large)",
        3000,
        None,
        None,
        _objects(lambda: diverse_mix.hostname_spread(3000)),
        large=True,
    ),
    Case(
        "whatif-30",
        "--from-dump of a 30-node / 300-pod EKS cluster, aws.offline=us-east-1",
        300,
        3.0,
        None,
        _no_manifests,
        _what_if(30, 300),
    ),
    Case(
        "whatif-120",
        "--from-dump of a 120-node / 1,200-pod EKS cluster, aws.offline=us-east-1 (--limits large)",
        1200,
        10.0,
        None,
        _no_manifests,
        _what_if(120, 1200),
        large=True,
    ),
]
IDLE_TARGET_MS = 50.0


@dataclass
class Measurement:
    wall: float
    cpu: float
    rss_mb: float
    bound: int | None
    pending: int | None
    nodes: int | None
    exit_code: int


def write_case(case: Case, folder: Path) -> tuple[Path | None, Path | None]:
    objects, steps = case.build(folder)
    manifests = None
    if objects:
        manifests = folder / "manifests.yaml"
        manifests.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    scenario = None
    if steps:
        scenario = folder / "scenario.yaml"
        scenario.write_text(yaml.safe_dump({"steps": steps}, sort_keys=False))
    return manifests, scenario


def run_simulate(case: Case, folder: Path) -> Measurement:
    manifests, scenario = write_case(case, folder)
    report = folder / "report.json"
    command = [sys.executable, "-m", "nodewright.commands", "simulate"]
    if manifests is not None:
        command.append(str(manifests))
    if scenario is not None:
        command += ["--scenario", str(scenario)]
    if case.arguments is not None:
        command += case.arguments(folder)
    if case.large:
        command += ["--limits", "large"]
    command += ["--json", str(report)]
    started = time.perf_counter()
    with open(folder / "output.log", "wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    bound = pending = nodes = None
    if report.exists():
        data = json.loads(report.read_text())
        pods = data.get("pods", [])
        bound = sum(1 for p in pods if p.get("node"))
        pending = len(pods) - bound
        nodes = len(data.get("nodes", []))
    return Measurement(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        rss_mb=usage.ru_maxrss * 1024 / MIB,
        bound=bound,
        pending=pending,
        nodes=nodes,
        exit_code=os.waitstatus_to_exitcode(status),
    )


@dataclass(frozen=True)
class Idle:
    pass_ms: float  # median CPU of one pass of every controller
    worst_ms: float
    scrape_ms: float  # median CPU of one /metrics answer
    scrape_bytes: int
    pods: int
    nodes: int


def measure_idle(repeat: int) -> Idle:
    """Settle the ``existing-2k`` cluster in-process; time idle passes of every controller and
    the ``/metrics`` answer a Prometheus scrape gets."""
    with tempfile.TemporaryDirectory(prefix="nodewright-bench-") as tmp:
        case = next(c for c in CASES if c.name == "existing-2k")
        manifests, _ = write_case(case, Path(tmp))
        assert manifests is not None
        host = load_host()
        objects = load_paths([manifests], kind_registry(host))
        simulation = Simulation(host)
        simulation.apply(objects)
        simulation.settle()
    # What ``nodewright run`` does: every controller on every pass (a simulation leaves out
    # those with nothing to do).
    simulation.operator.skip_unchanged = False
    samples = []
    for _ in range(repeat):
        started = time.process_time()
        simulation.operator.run_once()
        samples.append((time.process_time() - started) * 1000)
    scrapes = []
    for _ in range(repeat):
        started = time.process_time()
        size = len(metrics.exposition())
        scrapes.append((time.process_time() - started) * 1000)
    pods = simulation.cluster.state.count(Pod)
    nodes = simulation.cluster.state.count(Node)
    return Idle(
        statistics.median(samples), max(samples), statistics.median(scrapes), size, pods, nodes
    )


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = [c.name for c in CASES] + ["idle"]
    parser.add_argument("--case", nargs="+", choices=names, default=names, metavar="CASE")
    parser.add_argument("--repeat", type=int, default=1, help="runs per case (medians shown)")
    parser.add_argument("--keep", action="store_true", help="keep the generated folders")
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="do not write bytecode first: each child compiles what it imports (bench/bytecode.py)",
    )
    args = parser.parse_args(argv)
    if not args.no_bytecode:
        print(f"# bytecode written first ({bytecode.precompile():.1f} s of CPU)", file=sys.stderr)

    header = (
        f"{'case':<15} {'wall s':>8} {'cpu s':>8} {'target':>7} {'rss MB':>8} {'target':>7}"
        f" {'pods/cpu s':>10} {'bound':>7} {'pending':>7} {'nodes':>6}  ok"
    )
    print(header)
    failed = False
    for case in CASES:
        if case.name not in args.case:
            continue
        runs: list[Measurement] = []
        for _ in range(args.repeat):
            folder = Path(tempfile.mkdtemp(prefix=f"nodewright-bench-{case.name}-"))
            runs.append(run_simulate(case, folder))
            if args.keep:
                print(f"# {case.name}: {folder}", file=sys.stderr)
        cpu = statistics.median(r.cpu for r in runs)
        wall = statistics.median(r.wall for r in runs)
        rss = max(r.rss_mb for r in runs)
        last = runs[-1]
        ok = (
            all(r.exit_code == 0 for r in runs)
            and (case.waiting or last.pending == 0)
            and (case.target_cpu is None or cpu <= case.target_cpu)
            and (case.target_rss_mb is None or rss <= case.target_rss_mb)
        )
        failed |= not ok
        print(
            f"{case.name:<15} {wall:>8.1f} {cpu:>8.1f} {_fmt(case.target_cpu, 0):>7}"
            f" {rss:>8.0f} {_fmt(case.target_rss_mb, 0):>7} {case.pods / cpu if cpu else 0:>10.0f}"
            f" {_fmt(last.bound, 0):>7} {_fmt(last.pending, 0):>7} {_fmt(last.nodes, 0):>6}"
            f"  {'yes' if ok else 'NO'}",
            flush=True,
        )
    if "idle" in args.case:
        idle = measure_idle(max(args.repeat, 5))
        ok = idle.pass_ms <= IDLE_TARGET_MS
        failed |= not ok
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MIB
        print(
            f"{'idle':<15} one pass of every controller, {idle.pods} pods / {idle.nodes} nodes: "
            f"{idle.pass_ms:.1f} ms CPU median, {idle.worst_ms:.1f} ms max"
            f" (target {IDLE_TARGET_MS:.0f} ms), rss {rss:.0f} MB  {'yes' if ok else 'NO'}"
        )
        print(
            f"{'scrape':<15} /metrics of that cluster: {idle.scrape_ms:.0f} ms CPU median,"
            f" {idle.scrape_bytes / MIB:.1f} MiB"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
