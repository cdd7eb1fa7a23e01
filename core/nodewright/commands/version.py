"""``nodewright version``: print the version."""

from __future__ import annotations

import argparse

from nodewright import __version__
from nodewright.commands.command import EXIT_OK, Command


def run(_: argparse.Namespace) -> int:
    print(f"nodewright {__version__}")
    return EXIT_OK


COMMAND = Command("version", help="print the version", run=run)
