"""``nodewright plugins``: list the installed providers."""

from __future__ import annotations

import argparse
import json
import sys

from nodewright.commands.command import EXIT_INVALID_INPUT, EXIT_OK, Command
from nodewright.commands.host import load_host
from nodewright.simulation.text import print_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    """List the installed providers; exit 2 when any of them failed to load, so a script
    (or an install check) notices a broken one."""
    host = load_host()
    rows = host.describe()
    if args.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print('No providers installed. Install one, e.g.: pip install "nodewright[kwok]"')
    else:
        header = ("NAME", "DISTRIBUTION", "VERSION", "NODE CLASSES", "STATUS")
        keys = ("name", "distribution", "version", "node_classes", "status")
        print_table(header, [tuple(str(row.get(k, "")) for k in keys) for row in rows])
    broken = [row for row in rows if row.get("status", "ok") != "ok"]
    for row in broken:
        print(
            f"error: provider {row['name']} ({row['distribution']} {row['version']}): "
            f"{row['status'].removeprefix('error: ')}",
            file=sys.stderr,
        )
    return EXIT_INVALID_INPUT if broken else EXIT_OK


COMMAND = Command("plugins", help="list installed providers", run=run, add_arguments=add_arguments)
