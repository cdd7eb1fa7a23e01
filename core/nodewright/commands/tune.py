"""``nodewright tune``: run one simulation per combination of NodePool (and NodeClass)
settings a space file lists, in parallel, and rank them: the cost over the scenario, the time
pods spent pending, the disruptions, the nodes launched; the Pareto front of cost against
disruptions; and the winning settings as YAML to apply.

The inputs are those of ``simulate`` (manifests, ``--from-dump``, ``--from-cluster``, a
scenario), read and checked once; the space file and every variant's values are checked
before anything runs. Each problem is one ``error:`` line, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from nodewright.api.excerpt import cut, printable
from nodewright.cluster.objects import tune_collector
from nodewright.commands.command import EXIT_INVALID_INPUT, EXIT_OK, Command
from nodewright.commands.host import load_host, plugin_selection
from nodewright.commands.inputs import add_input_arguments, check_output_file, read_inputs
from nodewright.simulation import session
from nodewright.simulation.inputs import InputError, warn_static_without_gate
from nodewright.simulation.scenario import ScenarioError, preload
from nodewright.simulation.snapshot import SnapshotError
from nodewright.simulation.tune.distributed import ClusterError, run_on_ray
from nodewright.simulation.tune.html import render_tune_html
from nodewright.simulation.tune.job import (
    Variant,
    check_variants,
    make_job,
    targets,
    winning_manifests,
)
from nodewright.simulation.tune.local import run_here, run_processes
from nodewright.simulation.tune.progress import TuneProgress
from nodewright.simulation.tune.ranking import (
    DEFAULT_OBJECTIVE,
    OBJECTIVES,
    parse_objectives,
    rank,
)
from nodewright.simulation.tune.space import SpaceError, choose, load_space
from nodewright.simulation.tune.text import TuneReport, ordered_variants, print_tune
from nodewright.simulation.tune.worker import VariantResult

#: Ctrl-C stopped the run (the finished variants are still ranked and written).
EXIT_INTERRUPTED = 130
#: Every variant ran, and none meets the space's constraints.
EXIT_NO_WINNER = 1
#: The Ray cluster of --ray could not run the variants (those that finished are still ranked).
EXIT_CLUSTER_FAILED = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    parser.add_argument(
        "--space",
        required=True,
        metavar="FILE",
        help="the fields to vary and the values to try, and the constraints (see docs/tune.md)",
    )
    parser.add_argument(
        "--objective",
        default=",".join(DEFAULT_OBJECTIVE),
        metavar="NAME[,NAME...]",
        help=f"what to minimise, ties going to the next: {', '.join(OBJECTIVES)} "
        "(default cost: what the nodes cost over the run, in dollars)",
    )
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="run N combinations drawn at random with --seed (default: the space's sample, "
        "else all)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="worker processes on this machine (default: one per CPU core)",
    )
    where.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the variants on the Ray cluster at ADDRESS (HOST:PORT of its head, "
        "ray://HOST:PORT through Ray Client, or auto); needs nodewright[distributed]",
    )
    parser.add_argument("--json", metavar="FILE", help="write every variant's figures as JSON")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="write a web page: cost against disruptions for every variant, the Pareto front, "
        "the ranked table and the winner",
    )
    parser.add_argument(
        "--winner", metavar="FILE", help="write the winning NodePools (and NodeClasses) as YAML"
    )


def run(args: argparse.Namespace) -> int:
    tune_collector()
    host = load_host()
    try:
        for option in ("json", "html", "winner"):
            if getattr(args, option):
                check_output_file(f"--{option}", Path(getattr(args, option)))
        space = load_space(Path(args.space))
        try:
            objectives = parse_objectives(args.objective)
        except ValueError as error:
            raise InputError([f"--objective {cut(args.objective)}: {error}"]) from None
        if args.sample is not None and args.sample < 1:
            raise InputError([f"--sample {args.sample}: expected a whole number >= 1"])
        if args.jobs is not None and args.jobs < 1:
            raise InputError([f"--jobs {args.jobs}: expected a whole number >= 1"])
        inputs = read_inputs(args, host)
        inputs.scenario = preload(inputs.scenario, host, inputs.all_objects(), inputs.limits)
        for step in inputs.scenario.steps:
            warn_static_without_gate(step.objects or (), inputs.options)
        # The providers are configured once here, so one that cannot work stops the tune now.
        session.start(host, inputs)
        only, blocked = plugin_selection()
        job = make_job(space, inputs, only, blocked)
        problems = targets(space, job.all_objects())
        if problems:
            raise InputError(problems)
        combinations = choose(space, args.seed, args.sample)
        variants = [Variant(0), *(Variant(i, c) for i, c in enumerate(combinations, start=1))]
        check_variants(job, variants, host)
    except (InputError, ScenarioError, SnapshotError, SpaceError) as error:
        lines = error.lines if not isinstance(error, ScenarioError) else [str(error)]
        for line in lines:
            print(f"error: {printable(cut(line))}", file=sys.stderr)
        return EXIT_INVALID_INPUT

    processes = min(args.jobs or os.cpu_count() or 1, len(variants))
    results: list[VariantResult] = []
    progress = TuneProgress(len(variants), sys.stderr, sys.stderr.isatty())

    def finished(result: VariantResult) -> None:
        results.append(result)
        progress.update(result)

    started = time.monotonic()
    failure = ""
    progress.start()
    try:
        payload = job.dumps()
        if args.ray:
            ran = f"the Ray cluster at {args.ray}"
            interrupted = run_on_ray(payload, variants, args.ray, finished)
        elif processes == 1:
            interrupted = run_here(payload, variants, finished)
            ran = "in this process"
        else:
            interrupted = run_processes(payload, variants, processes, finished)
            ran = f"{processes} local processes"
    except ClusterError as error:
        interrupted, failure = False, str(error)
    finally:
        progress.finish()
    if failure and not results:
        print(f"error: {printable(failure)}", file=sys.stderr)
        return EXIT_CLUSTER_FAILED
    ranking = rank(results, space.constraints, objectives)
    winner = ranking.winner
    by_index = ordered_variants(variants)
    report = TuneReport(
        space=space,
        ranking=ranking,
        variants=by_index,
        winning_manifests=winning_manifests(job, by_index[winner.index], host) if winner else [],
        asked=len(variants),
        interrupted=interrupted,
        failure=failure,
        ran=ran,
        seed=args.seed,
        cpu_seconds=sum(r.cpu_seconds for r in results),
        wall_seconds=time.monotonic() - started,
    )
    print_tune(report)
    status = _write(args, report)
    if failure:
        print(f"error: {printable(failure)}", file=sys.stderr)
        return EXIT_CLUSTER_FAILED
    if status != EXIT_OK:
        return status
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if winner is not None else EXIT_NO_WINNER


def _write(args: argparse.Namespace, report: TuneReport) -> int:
    def as_json() -> str:
        return json.dumps(report.to_dict(), indent=2) + "\n"

    outputs: list[tuple[str, str | None, Callable[[], str]]] = [
        ("--json", args.json, as_json),
        ("--html", args.html, lambda: render_tune_html(report)),
        ("--winner", args.winner, report.winning_yaml),
    ]
    for option, path, render in outputs:
        if not path:
            continue
        if option == "--winner" and not report.winning_manifests:
            print(f"note: no winner, so {option} {path} is not written", file=sys.stderr)
            continue
        try:
            Path(path).write_text(render(), encoding="utf-8")
        except OSError as error:
            print(f"error: {option} {path}: cannot write: {error.strerror}", file=sys.stderr)
            return EXIT_INVALID_INPUT
    return EXIT_OK


COMMAND = Command(
    "tune",
    help="find the NodePool settings that serve a cluster best: one simulation per variant",
    description="Run the inputs of simulate once per combination of the settings a space file "
    "lists, in parallel, and rank the variants: cost over the scenario, time pods spent "
    "pending, disruptions, nodes launched; print the Pareto front of cost against "
    "disruptions and the winning NodePools as YAML to apply.",
    run=run,
    add_arguments=add_arguments,
    epilog="""\
example (from a checkout, run it as: uv run --all-packages nodewright tune ...):
  nodewright tune --from-dump examples/what-if/cluster-dump.yaml \\
      --space examples/what-if/space.yaml --html tune.html

a space file: the fields to vary, the values to try, and what a winner must meet
  parameters:
    - field: spec.disruption.consolidationPolicy
      values: [WhenEmpty, WhenEmptyOrUnderutilized]
    - field: spec.disruption.consolidateAfter
      range: {from: 0s, to: 10m, step: 5m}
    - field: spec.template.spec.requirements[karpenter.sh/capacity-type]
      values: [[on-demand], [spot, on-demand]]
  constraints:
    maxPodPending: 2m

exit status: 0 a winner found; 1 every variant ran and none meets the constraints;
2 bad input (nothing ran); 3 the Ray cluster of --ray could not run the variants;
130 interrupted (Ctrl-C; the variants that finished are ranked)

docs/tune.md is the reference; docs/tune-tutorial.md tunes the examples step by step.
""",
)
