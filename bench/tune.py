"""``nodewright tune`` in parallel: the same tune run with 1 worker process and with 2, each
timed in CPU (every process of the run, workers included) and wall time.

    uv run --all-packages python bench/tune.py                    # 64 variants, --jobs 1 and 2
    uv run --all-packages python bench/tune.py --variants 16 --jobs 2

The snapshot is a generated EKS dump of 30 nodes and 300 pods (``bench/whatif_dump.py``,
seed 1), tuned on the offline AWS catalog with a one-hour scenario: ``web`` and ``worker``
scaled up (96 -> 200 and 48 -> 100 replicas), 20 minutes, scaled down (to 60 and 30), 40
minutes. The space is 64 combinations of instance families, capacity types, consolidation
policy and ``consolidateAfter``; a run is the baseline and ``--variants - 1`` of them drawn
with seed 1, so every run of the benchmark tunes the same variants.

CPU is read from ``/proc`` every 0.2 s for the command and every process it starts (its
forkserver and workers), each process's last reading summed; peak RSS is the most the tree
held at once. The machine is shared: CPU time is the figure to compare, and the load
average is printed with each run (wall time and the speed-up it gives are distorted by other
processes competing for the two cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import whatif_dump

SCENARIO = """\
steps:
  - scale: {kind: Deployment, name: web, namespace: default, replicas: 200}
  - scale: {kind: Deployment, name: worker, namespace: default, replicas: 100}
  - advance: 20m
  - scale: {kind: Deployment, name: web, namespace: default, replicas: 60}
  - scale: {kind: Deployment, name: worker, namespace: default, replicas: 30}
  - advance: 40m
"""

#: 4 x 2 x 2 x 4 = 64 combinations.
SPACE = """\
parameters:
  - field: spec.template.spec.requirements[karpenter.k8s.aws/instance-family]
    label: families
    values: [[m5, c5, r5], [m6i, c6i, r6i], [m6a, c6a, r6a], [m7i, c7i, r7i]]
  - field: spec.template.spec.requirements[karpenter.sh/capacity-type]
    values: [[on-demand], [spot, on-demand]]
  - field: spec.disruption.consolidationPolicy
    values: [WhenEmpty, WhenEmptyOrUnderutilized]
  - field: spec.disruption.consolidateAfter
    values: [0s, 1m, 5m, 15m]
constraints:
  maxPodPending: 5m
"""
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Measured:
    jobs: int
    cpu: float
    wall: float
    peak_rss_mb: float
    load: str
    per_variant: list[float]
    processes: int
    #: The command's own process: reading the inputs, checking the variants, ranking, and
    #: (with --jobs 1) running them.
    parent_cpu: float


def _tree(root: int) -> dict[int, tuple[float, int]]:
    """CPU seconds (user + system) and RSS bytes of ``root`` and its descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[float, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        pid, parent = int(entry), int(fields[1])
        children.setdefault(parent, []).append(pid)
        cpu = (int(fields[11]) + int(fields[12])) / _TICKS
        stats[pid] = (cpu, int(fields[21]) * _PAGE)
    found: dict[int, tuple[float, int]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found[pid] = stats[pid]
        todo.extend(children.get(pid, []))
    return found


def run(workdir: Path, jobs: int, variants: int) -> Measured:
    report = workdir / f"tune-{jobs}.json"
    command = [
        sys.executable,
        "-m",
        "nodewright.commands",
        "tune",
        "--from-dump",
        str(workdir / "dump.json"),
        "--provider-option",
        "aws.offline=us-east-1",
        "--scenario",
        str(workdir / "scenario.yaml"),
        "--space",
        str(workdir / "space.yaml"),
        "--sample",
        str(variants - 1),
        "--seed",
        "1",
        "--jobs",
        str(jobs),
        "--json",
        str(report),
    ]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last: dict[int, float] = {}
    peak = 0
    while process.poll() is None:
        tree = _tree(process.pid)
        for pid, (cpu, _) in tree.items():
            last[pid] = max(last.get(pid, 0.0), cpu)
        peak = max(peak, sum(rss for _, rss in tree.values()))
        time.sleep(0.2)
    wall = time.monotonic() - started
    if process.returncode not in (0, 1):
        raise SystemExit(f"tune --jobs {jobs} failed with exit status {process.returncode}")
    data = json.loads(report.read_text())
    return Measured(
        jobs=jobs,
        cpu=sum(last.values()),
        wall=wall,
        peak_rss_mb=peak / 1e6,
        load=f"{load} -> " + " ".join(f"{x:.1f}" for x in os.getloadavg()),
        per_variant=[v["cpuSeconds"] for v in data["variants"]],
        processes=len(last),
        parent_cpu=last.get(process.pid, 0.0),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=64, help="the baseline and N - 1 drawn")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="work in DIR and keep the dump, scenario, space and each run's tune --json there",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as folder:
        workdir = Path(folder) if args.keep is None else args.keep
        workdir.mkdir(parents=True, exist_ok=True)
        whatif_dump.write(workdir / "dump.json", 30, 300, seed=1)
        (workdir / "scenario.yaml").write_text(SCENARIO)
        (workdir / "space.yaml").write_text(SPACE)
        results = []
        for jobs in args.jobs:
            measured = run(workdir, jobs, args.variants)
            results.append(measured)
            each = measured.per_variant
            print(
                f"--jobs {jobs}: {len(each)} variants, CPU {measured.cpu:.1f} s in "
                f"{measured.processes} process(es) (the command's own "
                f"{measured.parent_cpu:.1f} s), wall {measured.wall:.1f} s, "
                f"peak RSS {measured.peak_rss_mb:.0f} MB; per variant CPU median "
                f"{statistics.median(each):.1f} s (min {min(each):.1f}, max {max(each):.1f}, "
                f"sum {sum(each):.1f}); load {measured.load}",
                flush=True,
            )
        if len(results) > 1:
            first = results[0]
            for other in results[1:]:
                print(
                    f"--jobs {other.jobs} against --jobs {first.jobs}: wall speed-up "
                    f"{first.wall / other.wall:.2f}, CPU {other.cpu / first.cpu:.2f} x"
                )
        if args.keep is not None:
            print(f"kept in {workdir}: " + ", ".join(f"tune-{j}.json" for j in args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
