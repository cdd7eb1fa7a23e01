"""The shape the Kubernetes API server accepts for its own kinds: field names and value types.

nodewright's models of Pods, Deployments and the other built-in kinds keep only the fields
it uses, and keep the rest as they are (so an object read from a cluster and written back
loses nothing). A manifest is checked against the full shape first, as ``kubectl apply``
with the server's strict field validation would: an unknown field (``spce:``, a typo in a
field nodewright ignores, a field at the wrong level), a value of the wrong type
(``replicas: "3"``, ``labels: [a]``) or a quantity that is not one (``cpu: lots``) is an
error naming the field, wherever it is.

The table (``kubeschema.json``) is generated from the Kubernetes OpenAPI schema by
``scripts/generate_kube_schema.py``.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from nodewright.api.excerpt import excerpt
from nodewright.api.quantity import QuantityError, parse_quantity

_TABLE = Path(__file__).with_name("kubeschema.json")

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class MapKey(str):
    """A location part that is a key of a map (rendered ``labels[app]``), not a field."""


Location = tuple[str | int, ...]


@dataclass(frozen=True)
class SchemaProblem:
    """A value that does not fit the schema: where (field names, map keys, list indexes)
    and what is wrong."""

    location: Location
    message: str


@functools.cache
def _table() -> Mapping[str, Any]:
    loaded: Mapping[str, Any] = json.loads(_TABLE.read_text(encoding="utf-8"))
    return loaded


def kubernetes_version() -> str:
    """The Kubernetes version whose schema the table holds."""
    return str(_table()["kubernetes"])


def schema_problems(
    document: Mapping[str, object], api_version: str, kind: str
) -> list[SchemaProblem]:
    """Everything in ``document`` that the API server's schema for ``kind`` refuses.

    Kinds without a table entry (Karpenter's, providers') are checked only in ``metadata``;
    their own models reject unknown fields.
    """
    table = _table()
    problems: list[SchemaProblem] = []
    root = table["kinds"].get(f"{api_version}/{kind}")
    if root is not None:
        _check(document, root, (), problems)
    elif "metadata" in document:
        _check(document["metadata"], "meta.v1.ObjectMeta", ("metadata",), problems)
    return problems


def _check(
    value: object, expression: str, location: Location, problems: list[SchemaProblem]
) -> None:
    """Check ``value`` against a type expression of the table (see the generator)."""
    if value is None or expression == "any":
        return  # null is the same as absent, as the API server reads it
    if expression.startswith("[]"):
        if not isinstance(value, list):
            problems.append(SchemaProblem(location, f"must be a list, got {excerpt(value)}"))
            return
        for index, item in enumerate(value):
            _check(item, expression[2:], (*location, index), problems)
        return
    if expression.startswith("{}"):
        if not isinstance(value, Mapping):
            problems.append(SchemaProblem(location, f"must be a mapping, got {excerpt(value)}"))
            return
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(
                    SchemaProblem(location, f"keys must be strings, got {excerpt(key)}")
                )
                continue
            _check(item, expression[2:], (*location, MapKey(key)), problems)
        return
    scalar = _SCALARS.get(expression)
    if scalar is not None:
        message = scalar(value)
        if message is not None:
            problems.append(SchemaProblem(location, message))
        return
    _check_object(value, expression, location, problems)


def _check_object(
    value: object, type_name: str, location: Location, problems: list[SchemaProblem]
) -> None:
    entry = _table()["types"][type_name]
    fields: Mapping[str, str] = entry["fields"]
    if not isinstance(value, Mapping):
        problems.append(SchemaProblem(location, f"must be a mapping, got {excerpt(value)}"))
        return
    for key, item in value.items():
        if not isinstance(key, str):
            problems.append(
                SchemaProblem(location, f"field names must be strings, got {excerpt(key)}")
            )
            continue
        expression = fields.get(key)
        if expression is None:
            message = unknown_field_message(key, fields, top_level=not location)
            problems.append(SchemaProblem((*location, key), message))
            continue
        _check(item, expression, (*location, key), problems)
    for required in entry.get("required", ()):
        if value.get(required) is None:
            problems.append(SchemaProblem((*location, required), "required field is missing"))


def unknown_field_message(
    name: str, known: Mapping[str, object] | list[str], *, top_level: bool = False
) -> str:
    """``unknown field 'spce'; did you mean 'spec'?`` (or the known fields when few).

    At the top level of an object, a metadata field (``name:`` indented one step too little)
    gets that hint instead.
    """
    if top_level and name in _table()["types"]["meta.v1.ObjectMeta"]["fields"]:
        return f"unknown field {excerpt(name)} at the top level; indent it under metadata"
    names = sorted(known)
    message = f"unknown field {excerpt(name)}"
    close = difflib.get_close_matches(name[:100], names, n=1, cutoff=0.6)
    if close:
        return f"{message}; did you mean {close[0]!r}?"
    if len(names) <= 12:
        return f"{message}; known fields: {', '.join(names)}"
    return message


# --- scalars -----------------------------------------------------------------------------------


def _string(value: object) -> str | None:
    return None if isinstance(value, str) else f"must be a string, got {excerpt(value)}"


def _integer(bounds: tuple[int, int]) -> Any:
    def check(value: object) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"must be an integer, got {excerpt(value)}"
        if not bounds[0] <= value <= bounds[1]:
            return f"must be between {bounds[0]} and {bounds[1]}, got {excerpt(value)}"
        return None

    return check


def _number(value: object) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return None
    return f"must be a number, got {excerpt(value)}"


def _boolean(value: object) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {excerpt(value)}"


def _int_or_string(value: object) -> str | None:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    return f"must be an integer or a string, got {excerpt(value)}"


def _quantity(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"must be a quantity such as '500m', '2' or '4Gi', got {excerpt(value)}"
    try:
        parse_quantity(value)
    except QuantityError:
        return f"must be a quantity such as '500m', '2' or '4Gi', got {excerpt(value)}"
    return None


def _time(value: object) -> str | None:
    if isinstance(value, datetime | date):
        return None  # YAML reads an unquoted timestamp as one
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            pass
        else:
            return None
    return f"must be a time such as '2024-01-31T12:00:00Z', got {excerpt(value)}"


_SCALARS = {
    "string": _string,
    "int32": _integer(_INT32),
    "int64": _integer(_INT64),
    "number": _number,
    "boolean": _boolean,
    "int-or-string": _int_or_string,
    "quantity": _quantity,
    "time": _time,
}
