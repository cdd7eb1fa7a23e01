"""What a command is: its name and help, the arguments it takes, and how it runs.

Every ``nodewright`` subcommand is one module of this package holding one :class:`Command`;
:mod:`nodewright.commands` collects them into the parser. A command returns its exit status:
:data:`EXIT_OK`, or :data:`EXIT_INVALID_INPUT` after printing each problem as one ``error:``
line on stderr that names the file, object and field (never a traceback).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

EXIT_OK = 0
EXIT_INVALID_INPUT = 2


def _no_arguments(_: argparse.ArgumentParser) -> None:
    return None


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser, given its arguments only when it is used: adding them may import
    what that command alone needs (``run``'s settings), which the other commands never pay for.
    """

    def __init__(
        self,
        *args: Any,
        add_arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._add_arguments: Callable[[argparse.ArgumentParser], None] | None = add_arguments

    def _complete(self) -> None:
        add_arguments, self._add_arguments = self._add_arguments, None
        if add_arguments is not None:
            add_arguments(self)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._complete()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._complete()
        return super().format_usage()

    def format_help(self) -> str:
        self._complete()
        return super().format_help()


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
        """Add the command to the subparsers of ``nodewright`` (made with ``parser_class=``
        :class:`CommandParser`); its arguments are added when the command is used."""
        if self.epilog is None:
            parser = commands.add_parser(
                self.name,
                help=self.help,
                description=self.description,
                add_arguments=self.add_arguments,
            )
        else:
            # Kept as written, so the description is wrapped here.
            parser = commands.add_parser(
                self.name,
                help=self.help,
                description=textwrap.fill(self.description or "", 78) or None,
                epilog=self.epilog,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                add_arguments=self.add_arguments,
            )
        parser.set_defaults(handler=self.run)
