"""The ``nodewright`` command line: one module per subcommand, each a
:class:`~nodewright.commands.command.Command` that registers its arguments and runs itself.

Input problems (bad YAML, an invalid NodePool, a missing provider) are printed as one line
each, naming the file, object and field, and exit with status 2; never a traceback.

A new command is a module here defining ``COMMAND = Command(name, help=..., run=...,
add_arguments=...)``, listed in :data:`COMMANDS`. What it does beyond reading its arguments and
printing belongs in the layers below (``simulation``, ``service``, ...), as ``simulate`` leaves
scenarios to :mod:`nodewright.simulation.scenario`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from nodewright.commands import convert, crds, plugins, run, simulate, tune, version
from nodewright.commands.command import Command, CommandParser

#: The subcommands, in the order ``nodewright --help`` lists them.
COMMANDS: tuple[Command, ...] = (
    simulate.COMMAND,
    tune.COMMAND,
    plugins.COMMAND,
    convert.COMMAND,
    crds.COMMAND,
    run.COMMAND,
    version.COMMAND,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nodewright",
        description="A Kubernetes node autoscaler, drop-in compatible with Karpenter.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    status: int = args.handler(args)
    return status
