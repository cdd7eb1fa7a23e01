"""Fuzz the loading path: mutated manifests through ``nodewright simulate`` and ``convert``.

The property (issue 18): whatever the input, the command exits 0 or 2, prints no traceback
and no crashed controller, names the file on every ``error:`` and ``warning:`` line, keeps
each line short, and finishes in bounded time and memory.

Inputs start from valid manifests of every kind the loader reads (current and retired
versions) and are mutated with hypothesis: values replaced by awkward ones (wrong types, NUL
bytes, 64-character labels, huge numbers, deep nesting), keys renamed, dropped or added, and
the YAML text itself cut, spliced with aliases and syntax, or re-indented.

``tests/test_fuzz_inputs.py`` runs a few dozen examples in the suite. The long run:

    uv run --frozen python bench/fuzz_inputs.py --examples 2000 --keep crashes/

prints how many examples ran and how many broke the property, and with ``--keep`` writes
each breaking input to that folder (to turn into a regression test).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import copy
import io
import json
import logging
import re
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from nodewright.commands import main

#: Generous bounds: a blow-up (2.6 GB, 29 s of CPU) breaks them by orders of magnitude,
#: while a slow shared CI machine does not.
MAX_CPU_SECONDS = 30.0
MAX_PEAK_GROWTH_BYTES = 400 * 1024 * 1024
MAX_LINE_LENGTH = 2000
#: Wall-clock seconds after which a run counts as hung and is interrupted.
MAX_WALL_SECONDS = 120

NODE_CLASS = {
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "default"},
}
NODE_POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default", "labels": {"team": "a"}},
    "spec": {
        "template": {
            "metadata": {"labels": {"example.com/tier": "web"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                    {"key": "karpenter.kwok.sh/instance-cpu", "operator": "Gt", "values": ["1"]},
                ],
                "taints": [{"key": "example.com/dedicated", "effect": "NoSchedule"}],
                "expireAfter": "720h",
            },
        },
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "30s",
            "budgets": [{"nodes": "10%"}],
        },
        "limits": {"cpu": "100", "memory": "400Gi"},
        "weight": 10,
    },
}
POD_SPEC = {
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "example.com/dedicated", "operator": "Exists"}],
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ],
    "containers": [
        {
            "name": "app",
            "image": "pause",
            "resources": {
                "requests": {"cpu": "500m", "memory": "256Mi"},
                "limits": {"memory": "512Mi"},
            },
        }
    ],
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC},
    },
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "single", "namespace": "default", "labels": {"app": "single"}},
    "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
}
BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
}
V1BETA1_POOL = {
    "apiVersion": "karpenter.sh/v1beta1",
    "kind": "NodePool",
    "metadata": {"name": "old"},
    "spec": {
        "disruption": {"consolidationPolicy": "WhenUnderutilized", "expireAfter": "Never"},
        "template": {
            "spec": {
                "nodeClassRef": {
                    "apiVersion": "karpenter.kwok.sh/v1alpha1",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                ],
            }
        },
    },
}
PROVISIONER = {
    "apiVersion": "karpenter.sh/v1alpha5",
    "kind": "Provisioner",
    "metadata": {"name": "legacy"},
    "spec": {
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
        ],
        "limits": {"resources": {"cpu": 1000}},
        "provider": {
            "subnetSelector": {"karpenter.sh/discovery": "alpha"},
            "securityGroupSelector": {"karpenter.sh/discovery": "alpha"},
            "instanceProfile": "KarpenterNodeInstanceProfile",
        },
        "ttlSecondsAfterEmpty": 30,
    },
}

#: Sets of documents that simulate (or convert) as they are; each example mutates one.
SEEDS: dict[str, list[dict[str, Any]]] = {
    "current": [NODE_CLASS, NODE_POOL, DEPLOYMENT, POD, BUDGET],
    "v1beta1": [NODE_CLASS, V1BETA1_POOL, DEPLOYMENT],
    "v1alpha5": [PROVISIONER, DEPLOYMENT],
}

#: Values a mutation puts in place of another: wrong types, names the API server refuses,
#: values the loader must bound.
AWKWARD_VALUES: list[Any] = [
    None, "", " ", "lots", "UPPER_case!", "a\x00b", "x" * 64, "ü-ñ", "1e999999999", "-1",
    "2024-13-45", "Never", "In", "*", "a/b/c", "é" * 300, 0, -1, 1, 2**31, 2**63, 10**30,
    1.5, float("inf"), True, False, [], {}, [None], {"a": None}, ["x"] * 3, {"x": {"y": "z"}},
    "99999999999999999999h", "9" * 30, "1" * 5000, "0s", "1s", "100%", "101%", "@daily",
    "* * * * * *", "Gt", "Exists", "NoExecute", "karpenter.sh/nodepool", "kubernetes.io/x",
]  # fmt: skip
#: Text spliced into the YAML: syntax, aliases, control characters.
AWKWARD_TEXT = [
    "\t", ":", "- ", "[", "{", "}", "]", "&a ", "*a", "*missing", "<<: *a", "!!binary x",
    "\x00", "\ufeff", "---\n", "...\n", "? ", "'", '"', "#", "\n  ", "%YAML 1.1\n",
    "a: &a [1]\nb: *a\n", "!!python/object:os.system x", "[" * 1000, "{a: " * 600,
    "l0: &l0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n" for n in range(1, 9)
    ),
]  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in a document tree (mapping keys and list indexes)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _parent(root: Any, path: tuple[Any, ...]) -> Any:
    node = root
    for part in path[:-1]:
        node = node[part]
    return node


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"n": value}
    return value


def mutate_documents(
    draw: st.DrawFn, documents: list[Any], values: list[Any] = AWKWARD_VALUES
) -> None:
    """Mutate ``documents`` in place, one to four times: a value replaced by one of
    ``values``, a key dropped, renamed or added, a value wrapped, nested deep or grown long."""
    for _ in range(draw(st.integers(1, 4))):
        document = draw(st.sampled_from(documents))
        paths = [p for p in _paths(document) if p]
        if not paths:
            continue
        path = draw(st.sampled_from(paths))
        parent = _parent(document, path)
        key = path[-1]
        action = draw(
            st.sampled_from(["replace", "delete", "rename", "add", "wrap", "deepen", "grow"])
        )
        if action == "replace":
            parent[key] = copy.deepcopy(draw(st.sampled_from(values)))
        elif action == "delete":
            del parent[key]
        elif action == "rename" and isinstance(parent, dict):
            text = str(key)
            cut = draw(st.integers(0, max(len(text) - 1, 0)))
            parent[text[:cut] + text[cut + 1 :] or "x"] = parent.pop(key)
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["spce", "name", "extra", "x" * 70, "a\x00"]))] = "v"
        elif action == "wrap":
            parent[key] = draw(st.sampled_from([[parent[key]], {"value": parent[key]}]))
        elif action == "deepen":
            parent[key] = _nested(draw(st.sampled_from([50, 99, 101, 150])))
        elif action == "grow":
            parent[key] = "y" * draw(st.sampled_from([63, 64, 254, 70_000, 300_000]))


def mutate_text(draw: st.DrawFn, text: str) -> str:
    """``text`` with up to two edits of the YAML itself: awkward text spliced in, the rest
    cut off, a line re-indented or repeated."""
    for _ in range(draw(st.integers(0, 2))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["splice", "cut", "indent", "duplicate"]))
        if action == "splice":
            text = text[:position] + draw(st.sampled_from(AWKWARD_TEXT)) + text[position:]
        elif action == "cut":
            text = text[:position]
        elif action == "indent":
            start = text.rfind("\n", 0, position) + 1
            text = text[:start] + draw(st.sampled_from([" ", "  ", ""])) + text[start:].lstrip(" ")
        else:
            start = text.rfind("\n", 0, position) + 1
            end = text.find("\n", position)
            end = len(text) if end < 0 else end + 1
            text = text[:end] + text[start:end] + text[end:]
    return text


@st.composite
def _mutated_tree(draw: st.DrawFn) -> list[dict[str, Any]]:
    seed = draw(st.sampled_from(sorted(SEEDS)))
    documents = copy.deepcopy(SEEDS[seed])
    mutate_documents(draw, documents)
    return documents


@st.composite
def manifests(draw: st.DrawFn) -> tuple[str, str]:
    """A manifest file: its text and suffix (``.yaml`` or ``.json``)."""
    documents = draw(_mutated_tree())
    if draw(st.integers(0, 9)) == 0:
        return json.dumps(documents[0], indent=draw(st.sampled_from([None, 2, "\t"]))), ".json"
    text = yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True)
    return mutate_text(draw, text), ".yaml"


@dataclass
class Outcome:
    command: str
    exit_code: int | str
    stdout: str
    stderr: str
    cpu_seconds: float
    #: How much the process's peak memory grew during the run (a blow-up shows here; a
    #: run that stays below an earlier peak shows 0).
    peak_bytes: int
    #: How the run broke the property; empty when it held.
    violations: list[str] = field(default_factory=list)


#: A controller that raised one of Python's own exceptions (a bug, not a reported problem
#: such as a provider's ``TemporaryProviderError``).
_BUILTIN_EXCEPTIONS = sorted(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)
_CRASHED_CONTROLLER = re.compile(rf"\tERROR\t.*: ({'|'.join(_BUILTIN_EXCEPTIONS)}): ")


class _Hung(BaseException):
    """Raised into a run that did not answer within :data:`MAX_WALL_SECONDS`."""


def _interrupt(signum: int, frame: object) -> None:
    raise _Hung


def _peak_rss() -> int:
    """The process's peak resident memory so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_command(command: str, path: Path) -> Outcome:
    """Run ``nodewright COMMAND PATH`` in this process and check the property."""
    return run_argv([command, str(path)], (str(path),))


def run_argv(argv: list[str], named: tuple[str, ...]) -> Outcome:
    """Run ``nodewright ARGV`` in this process and check the property, each ``error:`` or
    ``warning:`` line naming one of ``named`` (the input's file, or the option given).

    CPU time is the calling thread's (other jobs on the machine do not count). A run that
    has not answered after :data:`MAX_WALL_SECONDS` is interrupted and counts as hung (the
    main thread only: SIGALRM).
    """
    stdout, stderr = io.StringIO(), io.StringIO()
    rss_before = _peak_rss()
    started = time.thread_time()
    exit_code: int | str
    previous = signal.signal(signal.SIGALRM, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, MAX_WALL_SECONDS)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            exit_code = main(argv)
    except _Hung:
        exit_code = f"no answer within {MAX_WALL_SECONDS} s"
    except SystemExit as exit_:
        exit_code = exit_.code if exit_.code == 2 else f"SystemExit({exit_.code})"
    except BaseException as error:  # the property: nothing escapes
        exit_code = f"{type(error).__name__}: {str(error)[:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        cpu = time.thread_time() - started
        growth = max(0, _peak_rss() - rss_before)
        logging.getLogger("nodewright").handlers.clear()
    outcome = Outcome(
        " ".join(argv[:1]), exit_code, stdout.getvalue(), stderr.getvalue(), cpu, growth
    )
    outcome.violations = _violations(outcome, named)
    return outcome


def _violations(outcome: Outcome, named: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    if outcome.exit_code not in (0, 2):
        found.append(f"exit {outcome.exit_code}")
    if "Traceback" in outcome.stdout + outcome.stderr:
        found.append("traceback printed")
    crashed = _CRASHED_CONTROLLER.search(outcome.stdout)
    if crashed:
        found.append(f"a controller crashed: {outcome.stdout[crashed.start() :][:200]!r}")
    for line in outcome.stderr.splitlines():
        told = line.startswith(("error:", "warning:")) or ": error: " in line  # argparse's
        if told and not any(name in line for name in named):
            found.append(f"line naming none of {named}: {line[:200]!r}")
        if len(line) > MAX_LINE_LENGTH:
            found.append(f"line of {len(line)} characters")
    if outcome.cpu_seconds > MAX_CPU_SECONDS:
        found.append(f"{outcome.cpu_seconds:.1f} s of CPU")
    if outcome.peak_bytes > MAX_PEAK_GROWTH_BYTES:
        found.append(f"peak memory grew by {outcome.peak_bytes // 2**20} MiB")
    return found


def check_input(text: str, suffix: str) -> list[Outcome]:
    """``convert`` and ``simulate`` on one input, each with its outcome."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"manifests{suffix}"
        path.write_text(text, encoding="utf-8")
        return [run_command(command, path) for command in ("convert", "simulate")]


def fuzz(
    examples: int, record: Callable[[str, str, list[Outcome]], None], seed: int | None = None
) -> None:
    """Run ``examples`` generated inputs through :func:`check_input`, recording each.

    Without a seed the inputs are the same on every run (hypothesis derandomized).
    """

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(manifests())
    def one(manifest: tuple[str, str]) -> None:
        text, suffix = manifest
        record(text, suffix, check_input(text, suffix))

    (one if seed is None else hypothesis_seed(seed)(one))()


def main_fuzz(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, help="random seed (default: derandomized)")
    parser.add_argument("--keep", type=Path, help="write each breaking input into this folder")
    args = parser.parse_args(argv)
    counts = {"examples": 0, "broken": 0, "exit0": 0, "exit2": 0}
    worst_cpu = 0.0
    worst_peak = 0
    signatures: dict[str, int] = {}
    started = time.perf_counter()

    def record(text: str, suffix: str, outcomes: list[Outcome]) -> None:
        nonlocal worst_cpu, worst_peak
        counts["examples"] += 1
        broken = [o for o in outcomes if o.violations]
        for outcome in outcomes:
            counts[f"exit{outcome.exit_code}"] = counts.get(f"exit{outcome.exit_code}", 0) + 1
            worst_cpu = max(worst_cpu, outcome.cpu_seconds)
            worst_peak = max(worst_peak, outcome.peak_bytes)
        if not broken:
            return
        counts["broken"] += 1
        for outcome in broken:
            signature = f"{outcome.command}: {outcome.violations[0][:120]}"
            signatures[signature] = signatures.get(signature, 0) + 1
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            number = counts["broken"]
            (args.keep / f"broken-{number:04d}{suffix}").write_text(text, encoding="utf-8")
            (args.keep / f"broken-{number:04d}.txt").write_text(
                "\n".join(f"{o.command}: {o.violations}\n{o.stderr[:2000]}" for o in broken)
            )

    fuzz(args.examples, record, args.seed)
    elapsed = time.perf_counter() - started
    print(
        f"{counts['examples']} examples ({2 * counts['examples']} runs) in {elapsed:.0f} s: "
        f"{counts['broken']} broke the property; exit 0: {counts['exit0']}, exit 2: "
        f"{counts['exit2']}; slowest run {worst_cpu:.2f} s CPU; largest growth of peak memory "
        f"{worst_peak / 2**20:.0f} MiB"
    )
    for signature, count in sorted(signatures.items(), key=lambda item: -item[1]):
        print(f"  {count:5d}  {signature}")
    return 1 if counts["broken"] else 0


if __name__ == "__main__":
    sys.exit(main_fuzz())
