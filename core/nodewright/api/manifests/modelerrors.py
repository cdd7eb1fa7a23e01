"""Pydantic's errors in the manifest's words: the camelCase path of the field, and a message
a user of ``kubectl`` recognises."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pydantic

from nodewright.api.excerpt import cut, excerpt
from nodewright.api.kubeschema import unknown_field_message
from nodewright.api.manifests.errors import ManifestError


def field_error(
    problem: Mapping[str, Any],
    *,
    model: type[pydantic.BaseModel],
    locate: Callable[[Sequence[object]], str],
    kind: str,
    name: str,
) -> ManifestError:
    """One pydantic error as a problem in the manifest, at the ``file:line`` that ``locate``
    finds for its location."""
    location: tuple[object, ...] = tuple(problem["loc"])
    path, known_fields = _render_location(model, location)
    where = locate(location)
    kind_of_problem = problem["type"]
    if kind_of_problem == "extra_forbidden":
        message = unknown_field_message(
            str(location[-1]), known_fields, top_level=len(location) == 1
        )
    elif kind_of_problem == "missing":
        message = "required field is missing"
    else:
        text = str(problem["msg"])
        if text.startswith("Input should be "):
            text = "must be " + text.removeprefix("Input should be ")
        elif text.startswith("Value error, "):
            text = text.removeprefix("Value error, ")
        text = re.sub(r"a valid dictionary or instance of \w+", "a mapping", text)
        text = text.replace("a valid dictionary", "a mapping")
        message = f"{cut(text, 200)}, got {excerpt(problem.get('input'))}"
    return ManifestError(where, message, kind=kind, name=name, field=path)


def merge_alternatives(problems: list[ManifestError]) -> list[ManifestError]:
    """One error per field when pydantic reports each branch of a union separately.

    ``minAvailable: [1]`` fails both ``int`` and ``str``; say "must be a valid integer or a
    valid string" once.
    """
    merged: list[ManifestError] = []
    for problem in problems:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and (previous.source, previous.field) == (problem.source, problem.field)
            and previous.message.startswith("must be ")
            and problem.message.startswith("must be ")
        ):
            head, _, got = previous.message.rpartition(", got ")
            other, _, other_got = problem.message.rpartition(", got ")
            if got == other_got:
                merged[-1] = ManifestError(
                    previous.source,
                    f"{head} or {other.removeprefix('must be ')}, got {got}",
                    kind=previous.kind,
                    name=previous.name,
                    field=previous.field,
                )
                continue
        merged.append(problem)
    return merged


def _render_location(
    model: type[pydantic.BaseModel], location: Sequence[object]
) -> tuple[str, list[str]]:
    """The camelCase path for a pydantic error location, and the field names known at its end.

    Walks the model's annotations so map keys render as ``labels[team]`` and list indexes as
    ``requirements[0]``; union tags pydantic adds to locations are dropped.
    """
    path = ""
    current: object = model
    known: list[str] = []
    for part in location:
        current = _unwrap_optional(current)
        origin = typing.get_origin(current)
        if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
            fields = current.model_fields
            known = [info.alias or field_name for field_name, info in fields.items()]
            path += f".{part}" if path else str(part)
            match = next(
                (info for field_name, info in fields.items() if part in (info.alias, field_name)),
                None,
            )
            current = match.annotation if match is not None else None
        elif origin is list and isinstance(part, int):
            path += f"[{part}]"
            current = typing.get_args(current)[0] if typing.get_args(current) else None
        elif origin is dict:
            path += f"[{cut(str(part), 80)}]"
            args = typing.get_args(current)
            current = args[1] if len(args) == 2 else None
        elif current is None and not isinstance(part, int):
            path += f".{part}" if path else str(part)
        elif isinstance(part, int):
            path += f"[{part}]"
        else:
            break  # a union tag such as 'int' or 'str' under a scalar field
    return path, known


def _unwrap_optional(annotation: object) -> object:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(options) == 1:
            return options[0]
    return annotation
