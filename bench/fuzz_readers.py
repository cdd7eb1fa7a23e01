"""Fuzz every other reader of user input, as ``bench/fuzz_inputs.py`` fuzzes manifests.

The readers (issue 32): a scenario, a dump (``--from-dump``, YAML or JSON), the scheduler
configuration (``--scheduler-config``, a file or the document itself), the KWOK catalog file
(``--provider-option kwok.instance-types-file=``), the kubeconfig of ``--from-cluster``, and
``simulate``'s command-line options. Each starts from a valid input and is mutated as the
manifests are: values replaced by awkward ones (here also each reader's own: durations,
replica counts, option values), keys dropped, renamed, added, values wrapped, nested deep or
grown, the text cut, spliced or re-indented.

The property is ``fuzz_inputs``'s: exit 0 or 2, no traceback or crashed controller, every
``error:`` line naming the file (for an option, the option), at most 30 s of CPU and 400 MiB
of peak memory growth per input. ``tests/test_fuzz_readers.py`` runs a few seeded inputs of
each reader in the suite, without the values that cost most (a scenario at its time limit,
a workload at the pod limit: their cost is in docs/simulate.md). The long run, with them:

    uv run --frozen python bench/fuzz_readers.py --examples 300 --keep /tmp/broken
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from fuzz_inputs import AWKWARD_VALUES, Outcome, mutate_documents, mutate_text, run_argv
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ROOT / "examples" / "inflate" / "manifests"
DUMP = ROOT / "examples" / "what-if" / "cluster-dump.yaml"

READERS = ("scenario", "dump", "scheduler-config", "catalog", "kubeconfig", "options")

SCENARIO = {
    "steps": [
        {"scale": {"kind": "Deployment", "name": "inflate", "namespace": "default", "replicas": 3}},
        {"advance": "2m"},
        {"setNodeCondition": {"node": "missing", "type": "Ready", "status": "False"}},
        {"settle": "10m"},
        {"delete": {"kind": "Deployment", "name": "inflate", "namespace": "default"}},
        {"apply": "more.yaml"},
    ]
}
SCHEDULER_CONFIG = {
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
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
CATALOG = [
    {
        "name": "m5.large",
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": "2", "memory": "8Gi", "pods": "29"},
        "offerings": [
            {"zone": "test-zone-a", "capacityType": "spot", "price": 0.035},
            {
                "price": 0.096,
                "available": True,
                "requirements": [
                    {"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
                    {"key": ZONE, "operator": "In", "values": ["test-zone-b"]},
                ],
            },
        ],
    }
]  # fmt: skip
#: A kubeconfig whose API server refuses connections at once (nothing listens on port 1).
KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x",
}

#: What a scenario's steps may be given besides the awkward values: cheap times and counts.
SCENARIO_VALUES = [*AWKWARD_VALUES, "1h", "30s", "721h", 10, "NodePool", "StatefulSet", "a.yaml"]
#: The values at the documented limits, whose cost docs/simulate.md states (the long run only).
COSTLY_VALUES = ["168h", "169h", 20_000, 20_001, 1_000, 1_001]

#: Options and values to draw from: valid, wrong and awkward.
DURATIONS = ["0s", "1s", "10s", "15m", "-1s", "5q", "99999999999h", "", "1e3s"]
OPTIONS: dict[str, list[str]] = {
    "--seed": ["0", "7", "-1", "x", "99999999999999999999999", ""],
    "--batch-idle-duration": DURATIONS,
    "--batch-max-duration": DURATIONS,
    "--node-registration-delay": DURATIONS,
    "--feature-gates": [
        "NodeRepair=true",
        "SpotToSpotConsolidation=true,NodeOverlay=false",
        "Foo=true",
        "NodeRepair=maybe",
        "=",
        ",,,",
    ],
    "--preference-policy": ["Respect", "Ignore", "ignore", ""],
    "--min-values-policy": ["Strict", "BestEffort", "Lax"],
    "--provider-option": [
        "kwok.registration-delay=5s",
        "kwok.registration-delay=-5s",
        "kwok.fault-rate=launch:0.2",
        "kwok.fault-rate=launch:2",
        "kwok.fault-api-errors=launch=2,get",
        "kwok.fault-instance-quota=-1",
        "kwok.nope=1",
        "nope.x=1",
        "kwok",
        "kwok.kubelet-period=0s",
    ],
    "--scheduler-config": ["{}", "podTopologySpread: {defaultConstraints: []}", "{a:", "[1]"],
    "--json": ["@file", "@folder", "@missing"],
    "--html": ["@file", "@folder"],
    "--metrics": ["@file", "@missing"],
    "--ignore-dra-requests": [],
    "--no-ignore-dra-requests": [],
    "-v": [],
}


@dataclass(frozen=True)
class ReaderInput:
    """One input: which reader, the file's text (none for options) and the options."""

    reader: str
    text: str
    suffix: str
    options: tuple[str, ...] = ()


def _written(draw: st.DrawFn, documents: Any, json_share: int = 0) -> tuple[str, str]:
    """The documents as YAML, its text mutated too, or (one draw in ``json_share``) JSON."""
    if json_share and draw(st.integers(0, json_share - 1)) == 0:
        return json.dumps(documents, indent=draw(st.sampled_from([None, 2]))), ".json"
    text = yaml.safe_dump(documents, sort_keys=False, allow_unicode=True)
    return mutate_text(draw, text), ".yaml"


@st.composite
def reader_inputs(draw: st.DrawFn, reader: str, costly: bool = False) -> ReaderInput:
    """A mutated input for ``reader``; ``costly`` also draws the values at the limits."""
    if reader == "options":
        flags = draw(st.lists(st.sampled_from(sorted(OPTIONS)), min_size=1, max_size=4))
        options: list[str] = []
        for flag in flags:
            options.append(flag)
            if OPTIONS[flag]:
                options.append(draw(st.sampled_from(OPTIONS[flag])))
        return ReaderInput(reader, "", "", tuple(options))
    if reader == "scenario":
        values = SCENARIO_VALUES + (COSTLY_VALUES if costly else [])
        scenario = copy.deepcopy(SCENARIO)
        mutate_documents(draw, [scenario], values)
        text, suffix = _written(draw, scenario)
        return ReaderInput(reader, text, suffix)
    if reader == "dump":
        dump = yaml.safe_load(DUMP.read_text())
        mutate_documents(draw, dump["items"])
        text, suffix = _written(draw, dump, json_share=3)
        return ReaderInput(reader, text, suffix)
    seed = {"scheduler-config": SCHEDULER_CONFIG, "catalog": CATALOG, "kubeconfig": KUBECONFIG}
    document = copy.deepcopy(seed[reader])
    mutate_documents(draw, [document])
    text, suffix = _written(draw, document, json_share=4)
    return ReaderInput(reader, text, suffix)


def check_reader_input(case: ReaderInput) -> Outcome:
    """``nodewright simulate`` on one input, with its outcome."""
    with tempfile.TemporaryDirectory() as folder:
        where = Path(folder)
        path = where / f"input{case.suffix}"
        path.write_text(case.text, encoding="utf-8")
        (where / "more.yaml").write_text("")
        named: tuple[str, ...] = (str(path),)
        if case.reader == "scenario":
            argv = ["simulate", str(MANIFESTS), "--scenario", str(path)]
        elif case.reader == "dump":
            argv = ["simulate", "--from-dump", str(path)]
        elif case.reader == "scheduler-config":
            argv = ["simulate", str(MANIFESTS), "--scheduler-config", str(path)]
        elif case.reader == "catalog":
            option = f"kwok.instance-types-file={path}"
            argv = ["simulate", str(MANIFESTS), "--provider-option", option]
        elif case.reader == "kubeconfig":
            argv = ["simulate", "--from-cluster", "--kubeconfig", str(path)]
        else:
            files = {"@file": str(where / "out"), "@folder": folder}
            files["@missing"] = str(where / "missing" / "out")
            options = [files.get(option, option) for option in case.options]
            argv = ["simulate", str(MANIFESTS), *options]
            named = tuple(o for o in case.options if o.startswith("-"))
        return run_argv(argv, named)


def fuzz(
    reader: str,
    examples: int,
    record: Callable[[ReaderInput, Outcome], None],
    seed: int | None = None,
    costly: bool = False,
) -> None:
    """Run ``examples`` generated inputs of ``reader`` through :func:`check_reader_input`,
    recording each. Without a seed the inputs are the same on every run."""

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(reader_inputs(reader, costly))
    def one(case: ReaderInput) -> None:
        record(case, check_reader_input(case))

    (one if seed is None else hypothesis_seed(seed)(one))()


def main_fuzz(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=300, help="inputs per reader")
    parser.add_argument("--reader", choices=READERS, action="append", help="(default: all)")
    parser.add_argument("--seed", type=int, help="random seed (default: derandomized)")
    parser.add_argument("--keep", type=Path, help="write each breaking input into this folder")
    args = parser.parse_args(argv)
    broken: dict[str, int] = {}
    for reader in args.reader or READERS:
        _fuzz_reader(reader, args.examples, args.seed, args.keep, broken)
    for signature, count in sorted(broken.items(), key=lambda item: -item[1]):
        print(f"  {count:5d}  {signature}")
    return 1 if broken else 0


def _fuzz_reader(
    reader: str, examples: int, seed: int | None, keep: Path | None, broken: dict[str, int]
) -> None:
    """Fuzz one reader, print its figures, count what broke the property in ``broken``."""
    counts = {"examples": 0, "broken": 0, "exit 0": 0, "exit 2": 0}
    worst = {"cpu": 0.0, "peak": 0.0}
    started = time.perf_counter()

    def record(case: ReaderInput, outcome: Outcome) -> None:
        counts["examples"] += 1
        counts[f"exit {outcome.exit_code}"] = counts.get(f"exit {outcome.exit_code}", 0) + 1
        worst["cpu"] = max(worst["cpu"], outcome.cpu_seconds)
        worst["peak"] = max(worst["peak"], outcome.peak_bytes)
        if not outcome.violations:
            return
        counts["broken"] += 1
        signature = f"{case.reader}: {outcome.violations[0][:120]}"
        broken[signature] = broken.get(signature, 0) + 1
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            stem = keep / f"{case.reader}-{counts['broken']:04d}"
            stem.with_suffix(case.suffix or ".txt").write_text(case.text)
            stem.with_suffix(".why").write_text(
                f"{case.options}\n{outcome.violations}\n{outcome.stderr[:2000]}"
            )

    fuzz(reader, examples, record, seed, costly=True)
    print(
        f"{reader}: {counts['examples']} inputs in {time.perf_counter() - started:.0f} s, "
        f"{counts['broken']} broke the property (exit 0: {counts['exit 0']}, exit 2: "
        f"{counts['exit 2']}); slowest {worst['cpu']:.2f} s CPU, largest "
        f"growth of peak memory {worst['peak'] / 2**20:.0f} MiB"
    )


if __name__ == "__main__":
    sys.exit(main_fuzz())
