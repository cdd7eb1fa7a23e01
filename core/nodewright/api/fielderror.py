"""One broken rule of an object, as every check in the API layer reports it, and the
problems of one object collected as a check finds them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FieldError:
    """One broken rule: which object, which field, and what is wrong with it."""

    kind: str
    name: str
    field: str
    message: str

    def __str__(self) -> str:
        return f'{self.kind} "{self.name}": {self.field}: {self.message}'


@dataclass
class FieldErrors:
    """Collects the problems of one object."""

    kind: str
    name: str
    errors: list[FieldError] = field(default_factory=list)

    def add(self, path: str, message: str) -> None:
        self.errors.append(FieldError(self.kind, self.name, path, message))

    def add_all(self, path: str, messages: Iterable[str]) -> None:
        for message in messages:
            self.add(path, message)


def unsupported_value(value: str, supported: Iterable[str]) -> str:
    """The API server's words for a value outside an enumeration."""
    listed = ", ".join(json.dumps(item) for item in supported)
    return f"Unsupported value: {json.dumps(value[:100])}: supported values: {listed}"


def invalid_value(value: object, detail: str) -> str:
    """The API server's words for a value a rule refuses."""
    shown = json.dumps(value[:100] if isinstance(value, str) else value)
    return f"Invalid value: {shown}: {detail}"
