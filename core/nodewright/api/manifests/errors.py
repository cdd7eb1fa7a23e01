"""The problems loading reports: one (:class:`ManifestError`), several together
(:class:`ManifestErrors`), a kind nothing serves, and warnings."""

from __future__ import annotations

import re
from collections.abc import Iterable

from nodewright.api.excerpt import cut, printable


class ManifestError(ValueError):
    """One problem in one manifest: where, which object, which field, what is wrong."""

    def __init__(
        self,
        source: str,
        message: str,
        *,
        kind: str = "",
        name: str = "",
        field: str = "",
    ) -> None:
        self.source = source
        self.kind = kind
        self.name = name
        self.field = _BRACKETED.sub(_shorten_key, field)
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.source] if self.source else []
        if self.kind:
            parts.append(f'{self.kind} "{self.name}"' if self.name else self.kind)
        if self.field:
            parts.append(self.field)
        parts.append(self.message)
        return printable(cut(": ".join(parts)))

    @property
    def errors(self) -> list[ManifestError]:
        """``[self]``, so callers can treat ManifestError and ManifestErrors alike."""
        return [self]


_BRACKETED = re.compile(r"\[([^\]]{81,})\]")


def _shorten_key(match: re.Match[str]) -> str:
    """A map key in a field path, cut like a quoted value (a label key can be 2 MB)."""
    key = match.group(1)
    return f"[{key[:37]}...{key[-37:]}]"


class UnknownKindError(ManifestError):
    """A document of a kind no model serves (a NodeClass whose provider is not installed,
    a kind nodewright does not read, a retired version)."""

    def __init__(
        self, source: str, message: str, *, api_version: str, kind: str, name: str
    ) -> None:
        self.api_version = api_version
        super().__init__(source, message, kind=kind, name=name)


class ManifestWarning(ManifestError):
    """Something loading changed or guessed (a field conversion dropped, an empty file):
    worth telling, not worth refusing."""


class ManifestErrors(ValueError):
    """Several manifest problems, reported together."""

    def __init__(self, errors: Iterable[ManifestError]) -> None:
        self.errors = list(errors)
        super().__init__(str(self))

    def __str__(self) -> str:
        count = len(self.errors)
        heading = f"{count} problem{'s' if count != 1 else ''} in manifests:"
        return "\n".join([heading, *(f"  {error}" for error in self.errors)])
