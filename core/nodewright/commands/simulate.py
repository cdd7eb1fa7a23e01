"""``nodewright simulate``: run the controller against an in-memory cluster on a simulated
clock, from manifests or a snapshot of a real cluster, run a scenario's steps, and report.

The manifests and the scenario are checked before anything runs (:mod:`nodewright.simulation.
inputs`, :mod:`nodewright.simulation.scenario`); each problem is one ``error:`` line naming the
file, object and field, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from nodewright import metrics
from nodewright.api.excerpt import cut, printable
from nodewright.cluster.objects import tune_collector
from nodewright.commands.command import EXIT_INVALID_INPUT, EXIT_OK, Command
from nodewright.commands.host import load_host
from nodewright.commands.inputs import (
    add_input_arguments,
    check_output_file,
    configure_logging,
    read_inputs,
)
from nodewright.simulation import session
from nodewright.simulation.html import render_html
from nodewright.simulation.inputs import InputError
from nodewright.simulation.progress import ProgressLine
from nodewright.simulation.scenario import ScenarioError
from nodewright.simulation.snapshot import SnapshotError
from nodewright.simulation.text import print_report, print_what_if


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    parser.add_argument("--json", metavar="FILE", help="write a JSON report to FILE")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="write the report as one self-contained web page (timeline charts, nodes, events)",
    )
    parser.add_argument(
        "--metrics",
        metavar="FILE",
        help="write the Prometheus metrics at the end of the run (what `run` serves at /metrics)",
    )


def run(args: argparse.Namespace) -> int:
    tune_collector()
    host = load_host()
    try:
        if args.json:
            check_output_file("--json", Path(args.json))
        if args.html:
            check_output_file("--html", Path(args.html))
        if args.metrics:
            check_output_file("--metrics", Path(args.metrics))
        inputs = read_inputs(args, host)
        # Configuring providers may log their failures; they are reported below, once each.
        logging.getLogger("nodewright").handlers[:] = [logging.NullHandler()]
        simulation = session.start(host, inputs)
        # A status line while it runs, on a terminal only.
        progress = ProgressLine(simulation, sys.stderr) if sys.stderr.isatty() else None
        configure_logging(simulation.clock, args.verbose, progress)
        if progress is not None:
            simulation.on_step = progress.update
        try:
            outcome = session.run(simulation, inputs)
        finally:
            if progress is not None:
                progress.finish()
    except (InputError, ScenarioError, SnapshotError) as error:
        lines = error.lines if isinstance(error, InputError | SnapshotError) else [str(error)]
        for line in lines:
            print(f"error: {printable(cut(line))}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    report, what_if = outcome.report, outcome.what_if
    print_report(report)
    if what_if is not None:
        print_what_if(what_if)
    if args.json:
        data = report.to_dict()
        if what_if is not None:
            data["whatIf"] = what_if.to_dict()
        try:
            Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            print(f"error: --json {args.json}: cannot write: {error.strerror}", file=sys.stderr)
            return EXIT_INVALID_INPUT
    if args.html:
        try:
            Path(args.html).write_text(render_html(report, what_if=what_if), encoding="utf-8")
        except OSError as error:
            print(f"error: --html {args.html}: cannot write: {error.strerror}", file=sys.stderr)
            return EXIT_INVALID_INPUT
    if args.metrics:
        try:
            Path(args.metrics).write_bytes(metrics.exposition())
        except OSError as error:
            print(
                f"error: --metrics {args.metrics}: cannot write: {error.strerror}", file=sys.stderr
            )
            return EXIT_INVALID_INPUT
    return EXIT_OK


COMMAND = Command(
    "simulate",
    help="run the controller against an in-memory cluster with a simulated clock",
    description="Load manifests (NodePools, node classes, workloads, nodes), run nodewright "
    "against an embedded cluster until it settles, run the scenario's steps, and report.",
    run=run,
    add_arguments=add_arguments,
)
