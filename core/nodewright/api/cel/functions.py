"""The operators and functions device selectors call: CEL's equality, ordering and
arithmetic on its value types, the string library, conversions, and Kubernetes' quantity and
semver libraries. Each raises :class:`CelValueError` (CEL's "no such overload", an overflow,
a missing key ...) where cel-go returns an error value."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from nodewright.api.cel.parse import CelError, CelUnsupported
from nodewright.api.cel.values import Quantity, QuantityError, Semver, VersionError

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
#: Regular-expression syntax Python's ``re`` reads differently from Go's RE2 (or RE2
#: refuses): lookarounds, backreferences, possessive and atomic groups, conditionals.
_NOT_RE2 = re.compile(r"\(\?[=!<>(]|\\[1-9]|\(\?P=|[*+?}]\+")


class CelValueError(CelError):
    """An error value met while evaluating (no such key, no matching overload ...)."""


class DomainMap(dict[str, Any]):
    """``device.attributes`` / ``device.capacity``: an unknown domain is an empty map."""

    def __missing__(self, key: str) -> dict[str, Any]:
        return {}


@functools.lru_cache(maxsize=256)
def regex(pattern: str) -> re.Pattern[str]:
    if _NOT_RE2.search(pattern):
        raise CelUnsupported(f"regular expression {pattern!r} uses syntax RE2 does not share")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise CelError(f"invalid regular expression {pattern!r}: {exc}") from None


# --- values -------------------------------------------------------------------------------------


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null_type"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, Quantity):
        return "Quantity"
    if isinstance(value, Semver):
        return "Semver"
    return type(value).__name__


def no_overload(op: str, *values: Any) -> CelValueError:
    kinds = ", ".join(type_name(v) for v in values)
    return CelValueError(f"no such overload: {op}({kinds})")


def integer(value: int) -> int:
    if not INT_MIN <= value <= INT_MAX:
        raise CelValueError("integer overflow")
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def equal(left: Any, right: Any) -> bool:
    if is_number(left) and is_number(right):
        return bool(left == right)
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(
            equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, dict):
        if len(left) != len(right):
            return False
        return all(k in right and equal(v, right[k]) for k, v in left.items())
    return bool(left == right)


def compare(op: str, left: Any, right: Any) -> bool:
    comparable = (is_number(left) and is_number(right)) or (
        type(left) is type(right) and isinstance(left, str | bool)
    )
    if not comparable:
        raise no_overload(op, left, right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def arithmetic(op: str, left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is not type(right) or kind is bool:
        raise no_overload(op, left, right)
    if op == "+" and kind in (str, list):
        return left + right
    if kind is int:
        if op in ("/", "%") and right == 0:
            raise CelValueError("division by zero" if op == "/" else "modulus by zero")
        if op == "+":
            return integer(left + right)
        if op == "-":
            return integer(left - right)
        if op == "*":
            return integer(left * right)
        quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)
        if op == "/":
            return integer(quotient)
        return left - quotient * right
    if kind is float and op != "%":
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if right == 0:
            return float("nan") if left == 0 else float("inf") * (1 if left > 0 else -1)
        return left / right
    raise no_overload(op, left, right)


def index(operand: Any, index: Any) -> Any:
    if isinstance(operand, dict):
        if isinstance(index, bool) or not isinstance(index, str | int):
            raise CelValueError(f"unsupported key type {type_name(index)}")
        if index not in operand:
            if isinstance(operand, DomainMap) and isinstance(index, str):
                return operand[index]
            raise CelValueError(f"no such key: {index}")
        return operand[index]
    if isinstance(operand, list):
        if isinstance(index, bool) or not isinstance(index, int):
            raise no_overload("_[_]", operand, index)
        if not 0 <= index < len(operand):
            raise CelValueError(f"index out of range: {index}")
        return operand[index]
    raise no_overload("_[_]", operand, index)


def _string_method(function: str, target: str, args: list[Any]) -> Any:
    if not all(isinstance(a, str | int) and not isinstance(a, bool) for a in args):
        raise no_overload(function, target, *args)
    if function == "contains" and len(args) == 1 and isinstance(args[0], str):
        return args[0] in target
    if function == "startsWith" and len(args) == 1 and isinstance(args[0], str):
        return target.startswith(args[0])
    if function == "endsWith" and len(args) == 1 and isinstance(args[0], str):
        return target.endswith(args[0])
    if function == "matches" and len(args) == 1 and isinstance(args[0], str):
        return regex(args[0]).search(target) is not None
    if function == "lowerAscii" and not args:
        return "".join(c.lower() if c.isascii() else c for c in target)
    if function == "upperAscii" and not args:
        return "".join(c.upper() if c.isascii() else c for c in target)
    if function == "trim" and not args:
        return target.strip()
    if function in ("indexOf", "lastIndexOf") and args and isinstance(args[0], str):
        found = target.find(args[0]) if function == "indexOf" else target.rfind(args[0])
        if len(args) == 1:
            return found
    if function == "replace" and len(args) == 2 and all(isinstance(a, str) for a in args):
        return target.replace(args[0], args[1])
    if function == "split" and len(args) == 1 and isinstance(args[0], str):
        return target.split(args[0]) if args[0] else list(target)
    if function == "charAt" and len(args) == 1 and isinstance(args[0], int):
        if not 0 <= args[0] <= len(target):
            raise CelValueError(f"index out of range: {args[0]}")
        return target[args[0] : args[0] + 1]
    if function == "substring" and args and all(isinstance(a, int) for a in args):
        start = args[0]
        end = args[1] if len(args) == 2 else len(target)
        if not 0 <= start <= end <= len(target):
            raise CelValueError(f"substring out of range: {start}, {end}")
        return target[start:end]
    raise no_overload(function, target, *args)


def _quantity_method(function: str, target: Quantity, args: list[Any]) -> Any:
    if function in ("compareTo", "isGreaterThan", "isLessThan", "add", "sub") and len(args) == 1:
        other = args[0]
        if isinstance(other, int) and not isinstance(other, bool) and function in ("add", "sub"):
            other = Quantity(Fraction(other))
        if not isinstance(other, Quantity):
            raise no_overload(function, target, other)
        if function == "compareTo":
            return (target.value > other.value) - (target.value < other.value)
        if function == "isGreaterThan":
            return target.value > other.value
        if function == "isLessThan":
            return target.value < other.value
        sign = 1 if function == "add" else -1
        return Quantity(target.value + sign * other.value)
    if args:
        raise no_overload(function, target, *args)
    if function == "isInteger":
        return target.value.denominator == 1 and INT_MIN <= target.value <= INT_MAX
    if function == "asInteger":
        if target.value.denominator != 1:
            raise CelValueError("cannot convert value to integer")
        return integer(int(target.value))
    if function == "asApproximateFloat":
        return float(target.value)
    if function == "sign":
        return (target.value > 0) - (target.value < 0)
    raise no_overload(function, target)


def _semver_method(function: str, target: Semver, args: list[Any]) -> Any:
    if function in ("compareTo", "isGreaterThan", "isLessThan") and len(args) == 1:
        other = args[0]
        if not isinstance(other, Semver):
            raise no_overload(function, target, other)
        if function == "compareTo":
            return (target > other) - (target < other)
        return target > other if function == "isGreaterThan" else target < other
    if function in ("major", "minor", "patch") and not args:
        return int(getattr(target, function))
    raise no_overload(function, target, *args)


def _convert(function: str, value: Any) -> Any:
    if function == "dyn":
        return value
    if function == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float | str):
            return str(value)
        if isinstance(value, Quantity | Semver):
            return str(value)
        raise no_overload(function, value)
    if function == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float):
            if math.isnan(value) or not INT_MIN <= value <= INT_MAX:
                raise CelValueError("double out of int range")
            return int(value)
        if isinstance(value, str):
            try:
                return integer(int(value, 10))
            except ValueError:
                raise CelValueError(f"cannot convert {value!r} to int") from None
        raise no_overload(function, value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise CelValueError(f"cannot convert {value!r} to double") from None
    raise no_overload(function, value)


_PARSERS: dict[str, Callable[[str], Any]] = {"quantity": Quantity.parse, "semver": Semver.parse}


def call(function: str, target: Any, has_target: bool, args: list[Any]) -> Any:
    if function == "size":
        value = target if has_target else (args[0] if len(args) == 1 else None)
        if (has_target and args) or not isinstance(value, str | list | dict):
            raise no_overload("size", *([target] if has_target else []), *args)
        return len(value)
    if not has_target:
        if len(args) != 1:
            raise no_overload(function, *args)
        value = args[0]
        if function in ("quantity", "semver", "isQuantity", "isSemver"):
            if not isinstance(value, str):
                raise no_overload(function, value)
            parser = _PARSERS["quantity" if function.endswith("uantity") else "semver"]
            try:
                parsed = parser(value)
            except (QuantityError, VersionError) as exc:
                if function.startswith("is"):
                    return False
                raise CelValueError(str(exc)) from None
            return True if function.startswith("is") else parsed
        if function in ("int", "double", "string", "dyn"):
            return _convert(function, value)
        raise no_overload(function, *args)
    if isinstance(target, str):
        return _string_method(function, target, args)
    if isinstance(target, Quantity):
        return _quantity_method(function, target, args)
    if isinstance(target, Semver):
        return _semver_method(function, target, args)
    if function == "join" and isinstance(target, list) and len(args) <= 1:
        separator = args[0] if args else ""
        if not isinstance(separator, str) or not all(isinstance(i, str) for i in target):
            raise no_overload("join", target, *args)
        return separator.join(target)
    raise no_overload(function, target, *args)
