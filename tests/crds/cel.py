"""Evaluate a CRD's ``x-kubernetes-validations`` rules on an object, as the API server does.

The schema and the object are walked together; defaults are applied first (the server
defaults before it validates); at every schema node with rules each rule is evaluated with
``self`` bound to the value there. Transition rules (those using ``oldSelf``) run only when an
old object is given and has a value at that place. A rule that evaluates to anything but
``true``, or fails to evaluate (``int("x")``), is broken. Kubernetes' CEL library functions
the CRDs use (``find``, ``split``) are added to cel-python's standard environment.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import celpy.adapter
from celpy import celtypes


@dataclass(frozen=True)
class Broken:
    """One rule an object breaks."""

    path: str
    message: str
    rule: str


def _find(text: Any, pattern: Any) -> Any:
    """Kubernetes' ``<string>.find(<regex>)``: the first match, or the empty string."""
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: Any, separator: Any) -> Any:
    """Kubernetes' ``<string>.split(<string>)`` (the strings extension): the parts."""
    return celtypes.ListType([celtypes.StringType(p) for p in str(text).split(str(separator))])


_FUNCTIONS = {"find": _find, "split": _split}
_ENVIRONMENT = celpy.Environment()
_PROGRAMS: dict[str, Any] = {}


def _program(expression: str) -> Any:
    program = _PROGRAMS.get(expression)
    if program is None:
        program = _ENVIRONMENT.program(_ENVIRONMENT.compile(expression), functions=_FUNCTIONS)
        _PROGRAMS[expression] = program
    return program


def evaluate(expression: str, value: Any, old: Any = None) -> bool:
    """Whether ``expression`` holds for ``self`` = ``value`` (and ``oldSelf`` = ``old``)."""
    activation = {"self": celpy.adapter.json_to_cel(value)}
    if old is not None:
        activation["oldSelf"] = celpy.adapter.json_to_cel(old)
    try:
        result = _program(expression).evaluate(activation)
    except Exception:  # an evaluation error is a failed rule
        return False
    return isinstance(result, celtypes.BoolType) and bool(result)


def with_defaults(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` with the schema's defaults filled in (objects only, as structural defaulting)."""
    if isinstance(value, dict):
        result = dict(value)
        for name, child in (schema.get("properties") or {}).items():
            if name not in result and "default" in child:
                result[name] = copy.deepcopy(child["default"])
            if name in result:
                result[name] = with_defaults(child, result[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            known = schema.get("properties") or {}
            for name, item in list(result.items()):
                if name not in known:
                    result[name] = with_defaults(extra, item)
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [with_defaults(schema["items"], item) for item in value]
    return value


def broken_rules(
    schema: Mapping[str, Any], value: Any, old: Any = None, path: str = ""
) -> list[Broken]:
    """Every rule ``value`` breaks, ``old`` being the stored object for an update."""
    found: list[Broken] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        expression = rule["rule"]
        transition = "oldSelf" in expression
        if transition and old is None:
            continue
        if not evaluate(expression, value, old if transition else None):
            found.append(Broken(path or ".", rule.get("message", expression), expression))
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name, child_value in value.items():
            child = properties.get(name)
            if child is None and isinstance(extra, Mapping):
                child = extra
            if child is None:
                continue
            old_child = old.get(name) if isinstance(old, dict) else None
            found += broken_rules(child, child_value, old_child, f"{path}.{name}")
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            # atomic lists do not correlate items with the old object: no transition rules
            found += broken_rules(schema["items"], item, None, f"{path}[{index}]")
    return found


def validate(crd: Mapping[str, Any], obj: Any, old: Any = None) -> list[Broken]:
    """The rules a whole object (after defaulting) breaks against its CRD's schema."""
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    value = with_defaults(schema, obj)
    previous = with_defaults(schema, old) if old is not None else None
    return broken_rules(schema, value, previous)
