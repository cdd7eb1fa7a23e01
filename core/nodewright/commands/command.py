"""What a command is: its name and help, the arguments it takes, and how it runs.

Every ``nodewright`` subcommand is one module of this package holding one :class:`Command`;
:mod:`nodewright.commands` collects them into the parser. A command returns its exit status:
:data:`EXIT_OK`, or :data:`EXIT_INVALID_INPUT` after printing each problem as one ``error:``
line on stderr that names the file, object and field (never a traceback).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

EXIT_OK = 0
EXIT_INVALID_INPUT = 2


def _no_arguments(_: argparse.ArgumentParser) -> None:
    return None


@dataclass(frozen=True)
class Command:
    """One subcommand of ``nodewright``."""

    name: str
    #: The line ``nodewright --help`` shows for it.
    help: str
    #: Runs the command with its parsed arguments; returns the exit status.
    run: Callable[[argparse.Namespace], int]
    #: Adds the command's arguments to its parser.
    add_arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments
    #: The paragraph ``nodewright NAME --help`` shows (none: only the usage).
    description: str | None = None
    #: Shown after the options as written, line breaks kept (examples, exit statuses).
    epilog: str | None = None

    def register(self, commands: argparse._SubParsersAction[Any]) -> None:
        """Add the command to the subparsers of ``nodewright``."""
        if self.epilog is None:
            parser = commands.add_parser(self.name, help=self.help, description=self.description)
        else:
            # Kept as written, so the description is wrapped here.
            parser = commands.add_parser(
                self.name,
                help=self.help,
                description=textwrap.fill(self.description or "", 78) or None,
                epilog=self.epilog,
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
        self.add_arguments(parser)
        parser.set_defaults(handler=self.run)
