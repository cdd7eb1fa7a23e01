"""Kubernetes resource quantities as exact integers.

Every quantity is held in *milli-units* (``"1"`` CPU is 1000, ``"1Gi"`` memory is
1024**3 * 1000) so CPU, memory, pods and extended resources share one integer
representation and sums never drift. Fractions smaller than a milli-unit round up, as the
API server does for requests.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?$"
)


#: Digits and decimal exponent a quantity may have: far beyond any real resource, and small
#: enough that no input makes the arithmetic slow (``1e999999999`` would not finish).
_MAX_DIGITS = 50
_MAX_EXPONENT = 50


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:37]!r}..."


def parse_quantity(value: str | int | float) -> int:
    """Parse ``value`` into milli-units, rounding any remainder up."""
    if type(value) is str:
        return _parse_text(value)
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        value = repr(value)
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> int:
    """Quantities repeat (every pod of a Deployment asks for the same ``"500m"``): each text
    is parsed once."""
    text = value.strip()
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(
            f"{_shown(text)} is not a quantity (expected a number with an optional suffix "
            "such as '500m', '2', '4Gi' or '1e3')"
        )
    digits = len(match["number"])
    exponent = match["exp"]
    if digits > _MAX_DIGITS or (
        exponent is not None
        and (len(exponent.lstrip("+-")) > 3 or abs(int(exponent)) > _MAX_EXPONENT)
    ):
        raise QuantityError(
            f"{_shown(text)} is out of range for a quantity "
            f"(at most {_MAX_DIGITS} digits and an exponent of at most {_MAX_EXPONENT})"
        )
    milli = _magnitude(match) * 1000
    result = -((-milli.numerator) // milli.denominator)  # ceiling
    return -result if match["sign"] == "-" else result


def _magnitude(match: re.Match[str]) -> Fraction:
    number = Fraction(match["number"])
    if match["suffix"] in _BINARY:
        return number * _BINARY[match["suffix"]]
    if match["exp"] is not None:
        return number * Fraction(10) ** int(match["exp"])
    return number * _DECIMAL[match["suffix"] or ""]


def exact_quantity(value: str) -> Fraction:
    """The exact value of a quantity (``"1n"`` is 1/10**9, not rounded to a milli-unit):
    what CEL's ``quantity()`` compares."""
    text = value.strip()
    _parse_text(text)  # the same syntax and range checks, and their errors
    match = _PATTERN.match(text)
    assert match is not None
    number = _magnitude(match)
    return -number if match["sign"] == "-" else number


def optional_quantity(value: str | None) -> Fraction | None:
    """The exact value of ``value`` (:func:`exact_quantity`), or None when it is absent or
    not a quantity: for amounts whose check is reported elsewhere."""
    if value is None:
        return None
    try:
        return exact_quantity(value)
    except QuantityError:
        return None


def format_quantity(milli: int, resource: str = "") -> str:
    """Render milli-units the way ``kubectl`` would show them."""
    binary = resource == "memory" or resource.startswith(("hugepages-", "ephemeral-storage"))
    if binary and milli % 1000 == 0:
        units = milli // 1000
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            size = _BINARY[suffix]
            if units and units % size == 0:
                return f"{units // size}{suffix}"
        return str(units)
    if milli % 1000 == 0:
        return str(milli // 1000)
    return f"{milli}m"


_DECIMAL_SUFFIXES = {
    -9: "n",
    -6: "u",
    -3: "m",
    0: "",
    3: "k",
    6: "M",
    9: "G",
    12: "T",
    15: "P",
    18: "E",
}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def canonical_quantity(value: str) -> str:
    """``value`` as the API server writes it back (``"1.5"`` is ``"1500m"``, ``"1024Mi"`` is
    ``"1Gi"``, ``"0.5Gi"`` is ``"512Mi"``): its value rounded up to a nano-unit, in the form of
    its suffix (binary, decimal or exponent), with the largest suffix that keeps it whole."""
    text = value.strip()
    exact = exact_quantity(text)
    match = _PATTERN.match(text)
    assert match is not None
    scaled = abs(exact) * 10**9
    nanos = -(-scaled.numerator // scaled.denominator)
    sign = "-" if exact < 0 else ""
    if nanos == 0:
        return "0"
    if match["suffix"] in _BINARY and nanos % 10**9 == 0 and nanos >= 1024 * 10**9:
        units, power = nanos // 10**9, 0
        while units % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
            units, power = units // 1024, power + 1
        return f"{sign}{units}{_BINARY_SUFFIXES[power]}"
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    shift = exponent % 3  # down to a multiple of three
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if match["exp"] is not None:
        return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
    suffix = _DECIMAL_SUFFIXES.get(exponent)
    return f"{sign}{mantissa}{suffix}" if suffix is not None else f"{sign}{mantissa}e{exponent}"
