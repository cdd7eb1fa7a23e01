"""Reading a what-if dump: ``read_dump`` (what ``simulate --from-dump`` does before it
simulates) of a generated EKS dump (``bench/whatif_dump.py``), as YAML and as JSON.

    uv run --all-packages python bench/read_dump.py                 # 100 nodes, 1,000 pods
    uv run --all-packages python bench/read_dump.py --nodes 250 --pods 5000 --reads 1

Each format is read in a process of its own (so each has its own peak RSS), ``--reads``
times after one read to warm up; printed: the CPU time (user + sys, ``getrusage``) of each
read and, of that, the parsing (text to documents) alone, the process's peak RSS, and the
load average. The target (issue 29) is 1 s of CPU for a YAML dump of 1,000 pods, scaled
linearly to other sizes; the script exits 1 when the median YAML read misses it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import whatif_dump

from nodewright.api.manifests.documents import parse_documents
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import karpenter_rules, kind_registry
from nodewright.simulation.limits import LARGE
from nodewright.simulation.snapshot import DUMP_LIMITS, read_dump

#: CPU seconds for a YAML dump of 1,000 pods.
TARGET_CPU_PER_1000_PODS = 1.0


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(path: Path, reads: int) -> dict[str, object]:
    """CPU seconds of each read and of its parsing, and the peak RSS in MB."""
    host = PluginHost.load()
    registry, rules = kind_registry(host), karpenter_rules(host)
    text = path.read_text()
    read_dump(path, registry, rules, limits=LARGE)  # imports and caches warmed
    totals, parses = [], []
    for _ in range(reads):
        start = _cpu()
        snapshot = read_dump(path, registry, rules, limits=LARGE)
        totals.append(_cpu() - start)
        start = _cpu()
        if path.suffix == ".json":
            json.loads(text)
        else:
            parse_documents(text, str(path), DUMP_LIMITS)
        parses.append(_cpu() - start)
    return {
        "cpu": totals,
        "parse": parses,
        "objects": len(snapshot.objects),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reads", type=int, default=3)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # one format's process
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.reads)))
        return 0
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        for suffix in (".yaml", ".json"):
            path = Path(folder) / f"dump{suffix}"
            whatif_dump.write(path, args.nodes, args.pods, args.seed)
            child = subprocess.run(
                [sys.executable, __file__, "--measure", str(path), "--reads", str(args.reads)],
                check=True,
                capture_output=True,
                text=True,
            )
            result = json.loads(child.stdout)
            cpu, parse = result["cpu"], result["parse"]
            line = (
                f"{suffix[1:]:4}  {path.stat().st_size / 1e6:.1f} MB, "
                f"{result['objects']} objects: CPU "
                + ", ".join(f"{s:.2f}" for s in cpu)
                + f" s (median {statistics.median(cpu):.2f}; parsing "
                + f"{statistics.median(parse):.2f}), peak RSS {result['peak_rss_mb']:.0f} MB"
            )
            if suffix == ".yaml":
                target = TARGET_CPU_PER_1000_PODS * args.pods / 1000
                met = statistics.median(cpu) <= target
                failed = not met
                line += f", target {target:.2f} s {'met' if met else 'MISSED'}"
            print(line)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average {load} ({os.cpu_count()} CPUs)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
