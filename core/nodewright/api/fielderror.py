"""One broken rule of an object, as every check in the API layer reports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One broken rule: which object, which field, and what is wrong with it."""

    kind: str
    name: str
    field: str
    message: str

    def __str__(self) -> str:
        return f'{self.kind} "{self.name}": {self.field}: {self.message}'
