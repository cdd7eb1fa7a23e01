"""Evaluating device selectors: the part of CEL that DRA selectors use, as Kubernetes does.

The one variable is ``device``: ``device.driver``, ``device.allowMultipleAllocations``,
``device.attributes[domain][id]`` and ``device.capacity[domain][id]`` (a quantity). An
attribute or capacity named without a domain takes the driver's; an unknown domain is an
empty map and a missing id is an error ("no such key"), so selectors guard with ``in`` or
``has()``. Errors follow CEL: ``false && error`` is false, ``true || error`` is true, and an
error anywhere else is the expression's error, which the allocator reports.

Evaluated: literals (int, double, string, bool, null, lists, maps), the arithmetic,
comparison, logical and ternary operators, ``in``, member access and indexes, ``has()``,
the ``all``/``exists``/``exists_one``/``map``/``filter`` macros, ``size``, the string library
(``contains``, ``startsWith``, ``endsWith``, ``matches``, ``lowerAscii``, ``upperAscii``,
``trim``, ``indexOf``, ``lastIndexOf``, ``replace``, ``split``, ``substring``, ``charAt``,
``join``), ``int()``, ``double()``, ``string()``, ``dyn()``, and Kubernetes' ``quantity()`` /
``isQuantity()`` and ``semver()`` / ``isSemver()`` with their methods (``compareTo``,
``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``asInteger``, ``asApproximateFloat``,
``isInteger``, ``sign``, ``major``, ``minor``, ``patch``). Anything else (unsigned ints, bytes,
timestamps, regular expressions Go's RE2 would treat differently) is refused when compiled,
with a :class:`~nodewright.api.cel.parse.CelUnsupported` naming it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from nodewright.api.cel.functions import (
    CelValueError,
    DomainMap,
    arithmetic,
    call,
    compare,
    equal,
    index,
    integer,
    is_number,
    no_overload,
    regex,
    type_name,
)
from nodewright.api.cel.parse import (
    Binary,
    Call,
    CelError,
    CelUnsupported,
    Comprehension,
    Conditional,
    Ident,
    Index,
    ListExpr,
    Literal,
    MapExpr,
    Node,
    Select,
    Unary,
    parse,
)
from nodewright.api.cel.values import Quantity, Semver

#: The fields of ``device`` (anything else is an undefined field, as cel-go reports).
DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
_FUNCTIONS = frozenset(
    {
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "lowerAscii",
        "upperAscii",
        "trim",
        "indexOf",
        "lastIndexOf",
        "replace",
        "split",
        "substring",
        "charAt",
        "join",
        "int",
        "double",
        "string",
        "dyn",
        "quantity",
        "isQuantity",
        "semver",
        "isSemver",
        "compareTo",
        "isGreaterThan",
        "isLessThan",
        "add",
        "sub",
        "asInteger",
        "asApproximateFloat",
        "isInteger",
        "sign",
        "major",
        "minor",
        "patch",
    }
)


@dataclass(frozen=True)
class DeviceInput:
    """What a selector sees of one device."""

    driver: str
    #: Attributes by qualified name (``gpu.example.com/model`` or ``model``): int, bool,
    #: str or :class:`Semver`.
    attributes: Mapping[str, int | bool | str | Semver]
    #: Capacities by qualified name, exact.
    capacity: Mapping[str, Fraction]
    allow_multiple_allocations: bool = False


def _domains(values: Mapping[str, Any], driver: str) -> DomainMap:
    result = DomainMap()
    for name, value in values.items():
        domain, slash, ident = name.rpartition("/")
        result.setdefault(domain if slash else driver, {})[ident] = value
    return result


def _device_value(device: DeviceInput) -> dict[str, Any]:
    return {
        "driver": device.driver,
        "allowMultipleAllocations": device.allow_multiple_allocations,
        "attributes": _domains(device.attributes, device.driver),
        "capacity": _domains({k: Quantity(v) for k, v in device.capacity.items()}, device.driver),
    }


# --- compile-time checks ------------------------------------------------------------------------


def _check(node: Node, scope: frozenset[str]) -> None:
    """Refuse what cel-go would not compile in the DRA environment, and what nodewright does
    not evaluate."""
    if isinstance(node, Ident):
        if node.name != "device" and node.name not in scope:
            raise CelError(f"undeclared reference to {node.name!r}")
    elif isinstance(node, Select):
        device = isinstance(node.operand, Ident) and node.operand.name == "device"
        if device and node.field not in DEVICE_FIELDS and "device" not in scope:
            raise CelError(f"undefined field {node.field!r} of device")
        _check(node.operand, scope)
    elif isinstance(node, Index):
        _check(node.operand, scope)
        _check(node.index, scope)
    elif isinstance(node, Call):
        if node.function not in _FUNCTIONS:
            raise CelUnsupported(f"function {node.function}() is not evaluated")
        if node.function == "matches":
            pattern = node.args[-1] if node.args else None
            if not isinstance(pattern, Literal) or not isinstance(pattern.value, str):
                raise CelUnsupported("matches() with a pattern that is not a string literal")
            regex(pattern.value)
        if node.target is not None:
            _check(node.target, scope)
        for arg in node.args:
            _check(arg, scope)
    elif isinstance(node, ListExpr):
        for item in node.items:
            _check(item, scope)
    elif isinstance(node, MapExpr):
        for key, value in node.entries:
            _check(key, scope)
            _check(value, scope)
    elif isinstance(node, Unary):
        _check(node.operand, scope)
    elif isinstance(node, Binary):
        _check(node.left, scope)
        _check(node.right, scope)
    elif isinstance(node, Conditional):
        _check(node.condition, scope)
        _check(node.then, scope)
        _check(node.otherwise, scope)
    elif isinstance(node, Comprehension):
        _check(node.target, scope)
        inner = scope | {node.variable}
        _check(node.body, inner)
        if node.transform is not None:
            _check(node.transform, inner)


# --- evaluation ---------------------------------------------------------------------------------


class _Error:
    """A CEL error value carried through ``&&``, ``||`` and the macros."""

    __slots__ = ("error",)

    def __init__(self, error: CelError) -> None:
        self.error = error


class Program:
    """A compiled selector: ``matches(device)`` is True, False, or raises the CEL error."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tree = parse(expression)
        _check(self.tree, frozenset())

    def matches(self, device: DeviceInput) -> bool:
        result = self._eval(self.tree, {"device": _device_value(device)})
        if not isinstance(result, bool):
            raise CelValueError(f"the result is a {type_name(result)}, not a bool")
        return result

    def _guarded(self, node: Node, env: dict[str, Any]) -> Any:
        try:
            return self._eval(node, env)
        except CelError as exc:
            return _Error(exc)

    def _eval(self, node: Node, env: dict[str, Any]) -> Any:
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Ident):
            return env[node.name]
        if isinstance(node, Select):
            return self._select(node, env)
        if isinstance(node, Index):
            return index(self._eval(node.operand, env), self._eval(node.index, env))
        if isinstance(node, Binary):
            return self._binary(node, env)
        if isinstance(node, Unary):
            value = self._eval(node.operand, env)
            if node.op == "!":
                if not isinstance(value, bool):
                    raise no_overload("!", value)
                return not value
            if isinstance(value, bool) or not is_number(value):
                raise no_overload("-", value)
            return integer(-value) if isinstance(value, int) else -value
        if isinstance(node, Conditional):
            condition = self._eval(node.condition, env)
            if not isinstance(condition, bool):
                raise no_overload("_?_:_", condition)
            return self._eval(node.then if condition else node.otherwise, env)
        if isinstance(node, ListExpr):
            return [self._eval(item, env) for item in node.items]
        if isinstance(node, MapExpr):
            return {self._key(k, env): self._eval(v, env) for k, v in node.entries}
        if isinstance(node, Comprehension):
            return self._comprehension(node, env)
        if isinstance(node, Call):
            target = None if node.target is None else self._eval(node.target, env)
            args = [self._eval(arg, env) for arg in node.args]
            return call(node.function, target, node.target is not None, args)
        raise CelUnsupported(f"{type(node).__name__} is not evaluated")

    def _key(self, node: Node, env: dict[str, Any]) -> Any:
        key = self._eval(node, env)
        if not isinstance(key, str | int):
            raise CelValueError(f"unsupported map key type {type_name(key)}")
        return key

    def _select(self, node: Select, env: dict[str, Any]) -> Any:
        operand = self._eval(node.operand, env)
        if not isinstance(operand, dict):
            raise CelValueError(f"type {type_name(operand)} has no field {node.field!r}")
        if node.test_only:
            return node.field in operand
        if node.field not in operand:
            if isinstance(operand, DomainMap):
                return operand[node.field]
            raise CelValueError(f"no such key: {node.field}")
        return operand[node.field]

    def _binary(self, node: Binary, env: dict[str, Any]) -> Any:
        op = node.op
        if op in ("&&", "||"):
            decisive = op == "||"
            left = self._guarded(node.left, env)
            if left is decisive:
                return decisive
            right = self._guarded(node.right, env)
            if right is decisive:
                return decisive
            for side in (left, right):
                if isinstance(side, _Error):
                    raise side.error
                if not isinstance(side, bool):
                    raise no_overload(op, side)
            return not decisive
        left = self._eval(node.left, env)
        right = self._eval(node.right, env)
        if op == "==":
            return equal(left, right)
        if op == "!=":
            return not equal(left, right)
        if op == "in":
            if isinstance(right, list):
                return any(equal(left, item) for item in right)
            if isinstance(right, dict):
                return left in right if isinstance(left, str | int) else False
            raise no_overload("in", left, right)
        if op in ("<", "<=", ">", ">="):
            return compare(op, left, right)
        return arithmetic(op, left, right)

    def _comprehension(self, node: Comprehension, env: dict[str, Any]) -> Any:
        target = self._eval(node.target, env)
        if isinstance(target, dict):
            items = list(target)
        elif isinstance(target, list):
            items = target
        else:
            raise no_overload(node.macro, target)

        def body(item: Any) -> Any:
            return self._guarded(node.body, {**env, node.variable: item})

        if node.macro in ("all", "exists"):
            decisive = node.macro == "exists"
            error: _Error | None = None
            for item in items:
                value = body(item)
                if value is decisive:
                    return decisive
                if isinstance(value, _Error):
                    error = error or value
                elif not isinstance(value, bool):
                    raise no_overload(node.macro, value)
            if error is not None:
                raise error.error
            return not decisive
        if node.macro == "exists_one":
            count = 0
            for item in items:
                value = self._eval(node.body, {**env, node.variable: item})
                if not isinstance(value, bool):
                    raise no_overload(node.macro, value)
                count += value
            return count == 1
        results = []
        for item in items:
            scope = {**env, node.variable: item}
            if node.macro == "filter":
                keep = self._eval(node.body, scope)
                if not isinstance(keep, bool):
                    raise no_overload("filter", keep)
                if keep:
                    results.append(item)
            elif node.transform is None:
                results.append(self._eval(node.body, scope))
            else:
                keep = self._eval(node.body, scope)
                if keep is True:
                    results.append(self._eval(node.transform, scope))
                elif keep is not False:
                    raise no_overload("map", keep)
        return results


@functools.lru_cache(maxsize=1024)
def compile_selector(expression: str) -> Program:
    """A compiled selector, cached by its text (a DeviceClass's selectors repeat for every
    request and device). Raises :class:`CelError` (or :class:`CelUnsupported`)."""
    return Program(expression)
