"""The two value types Kubernetes adds to CEL that device selectors use: semantic versions
(version attributes, ``semver("1.2.3")``) and quantities (capacities, ``quantity("40Gi")``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction

from nodewright.api.quantity import QuantityError, exact_quantity

_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class VersionError(ValueError):
    """Text that is not a semantic version (semver.org 2.0.0)."""


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class Semver:
    """A semantic version, ordered as semver.org says (build metadata ignored)."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[int | str, ...] = ()
    build: str = ""

    @staticmethod
    def parse(text: str) -> Semver:
        match = _SEMVER.match(text)
        if match is None:
            raise VersionError(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH)")
        pre = tuple(int(p) if p.isdigit() else p for p in (match[4] or "").split(".") if p)
        return Semver(int(match[1]), int(match[2]), int(match[3]), pre, match[5] or "")

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        # A version without a pre-release ranks above any with one; numeric identifiers
        # rank below alphanumeric ones.
        parts = tuple((0, p) if isinstance(p, int) else (1, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: Semver) -> bool:
        return self._key() < other._key()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(p) for p in self.prerelease)
        return text + (f"+{self.build}" if self.build else "")


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity (``40Gi`` is 42949672960)."""

    value: Fraction

    @staticmethod
    def parse(text: str) -> Quantity:
        return Quantity(exact_quantity(text))

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __str__(self) -> str:
        value = self.value
        return str(value.numerator) if value.denominator == 1 else str(float(value))


__all__ = ["Quantity", "QuantityError", "Semver", "VersionError"]
