"""Short, printable forms of values a user wrote, for error messages.

A message quotes the offending value so the user can find it, but a value can be a 2 MB
string or a mapping with a million entries: quoting it whole makes an error line nobody can
read (and costs the memory of building it). These helpers cut a value to a few dozen
characters and say how long it really was.
"""

from __future__ import annotations

import itertools
import reprlib
from typing import Any

#: Characters of a quoted value kept in a message.
EXCERPT_LENGTH = 60
#: Longest line any single error message may print (a last-resort cut).
MAX_MESSAGE_LENGTH = 1000


class _Excerpt(reprlib.Repr):
    """``reprlib`` limits, applied to subclasses of str, dict and list as well (the YAML
    loader's marked mappings and lists would otherwise be printed in full)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxdict = 4
        self.maxlist = 4
        self.maxtuple = 4
        self.maxset = 4
        self.maxfrozenset = 4
        self.maxstring = EXCERPT_LENGTH
        self.maxlong = 40
        self.maxother = EXCERPT_LENGTH

    def repr1(self, x: Any, level: int) -> str:
        if isinstance(x, bool) or x is None:
            return repr(x)
        if isinstance(x, int) and x.bit_length() > 256:
            return f"<an integer of {len(str(x)) if x.bit_length() < 10_000 else 'many'} digits>"
        if isinstance(x, str) and type(x) is not str:
            return self.repr_str(str(x), level)
        if isinstance(x, dict) and type(x) is not dict:
            return self.repr_dict(x, level)
        if isinstance(x, list) and type(x) is not list:
            return self.repr_list(x, level)
        return super().repr1(x, level)

    def repr_dict(self, x: Any, level: int) -> str:
        """Keys in the order written (``reprlib`` sorts them, which hides the first ones)."""
        if not x:
            return "{}"
        if level <= 0:
            return "{" + self.fillvalue + "}"
        pieces = [
            f"{self.repr1(key, level - 1)}: {self.repr1(x[key], level - 1)}"
            for key in itertools.islice(x, self.maxdict)
        ]
        if len(x) > self.maxdict:
            pieces.append(self.fillvalue)
        return "{" + ", ".join(pieces) + "}"


_REPR = _Excerpt()


def excerpt(value: object) -> str:
    """``repr(value)``, cut to about :data:`EXCERPT_LENGTH` characters.

    A cut string says how long it was: ``'aaaa...aaaa' (2000000 characters)``.
    """
    try:
        text = _REPR.repr(value)
    except Exception:  # a value whose repr fails is still named by its type
        return f"<{type(value).__name__}>"
    if isinstance(value, str) and len(value) > EXCERPT_LENGTH:
        text += f" ({len(value)} characters)"
    return text


def printable(text: str) -> str:
    """``text`` with control characters (a NUL, a newline in a key) escaped, so one problem
    stays one line of plain text."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def cut(text: str, limit: int = MAX_MESSAGE_LENGTH) -> str:
    """``text`` unchanged when short, else its start and how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}... ({len(text) - limit + 40} more characters)"
