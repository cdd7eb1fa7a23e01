"""Karpenter's requirements algebra: node label constraints as sets that intersect.

A :class:`Requirement` is a set of allowed values for one label key: a finite set (``In``,
``DoesNotExist`` as the empty set) or the complement of one (``NotIn``, ``Exists`` as the
complement of nothing), optionally bounded by integers (``Gt``, ``Lt``, ``Gte``, ``Lte``).
:class:`Requirements` maps keys to requirements. Everything here is immutable and pure.

Two asymmetries matter (``kubernetes-sigs/karpenter:pkg/scheduling/requirements.go``):
a key that only one side defines is fine when it is well known (every instance type has a
zone, so a pod may ask for one) or when the incoming operator is ``NotIn``/``DoesNotExist``;
a custom key a pod requires with ``In``/``Exists`` must be defined by the other side.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar, overload

from nodewright.api.karpenter import REQUIREMENT_OPERATORS
from nodewright.api.labels import RESTRICTED_LABELS, WELL_KNOWN_LABELS, normalize_label

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
GTE = "Gte"
LTE = "Lte"
OPERATORS = REQUIREMENT_OPERATORS

_UNBOUNDED = 2**63 - 1  # what Karpenter reports as the size of a complement set
_INT64_MIN = -(2**63)
#: What Go's ``strconv.Atoi`` accepts: an optional sign and ASCII digits, nothing else.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_T = TypeVar("_T")


class RequirementError(ValueError):
    """A requirement that cannot be built: unknown operator or a non-integer bound."""


def _as_int(value: str) -> int | None:
    """The value as a 64-bit integer, or None, exactly as Karpenter's ``strconv.Atoi`` reads it.

    Python's ``int()`` is more lenient (``" 5"``, ``"5_0"``, non-ASCII digits, unbounded
    size); a label value Karpenter treats as "not a number" must not satisfy a bound here.
    """
    if _INTEGER.fullmatch(value) is None:
        return None
    number = int(value)
    if not _INT64_MIN <= number <= _UNBOUNDED:
        return None
    return number


@dataclass(frozen=True, slots=True)
class Requirement:
    """The set of values allowed for one key.

    ``greater_than`` and ``less_than`` are exclusive integer bounds (``Gte 3`` is stored as
    ``greater_than=2``). Bounds only ever appear on complement sets.
    """

    key: str
    complement: bool
    values: frozenset[str]
    greater_than: int | None = None
    less_than: int | None = None
    min_values: int | None = None

    @classmethod
    def of(
        cls, key: str, operator: str, values: Iterable[str] = (), min_values: int | None = None
    ) -> Requirement:
        """Build a requirement from a NodeSelectorRequirement's key, operator and values."""
        key = normalize_label(key)
        vals = frozenset(str(v) for v in values)
        if operator == IN:
            return cls(key, False, vals, min_values=min_values)
        if operator == NOT_IN:
            return cls(key, True, vals, min_values=min_values)
        if operator == EXISTS:
            return cls(key, True, frozenset(), min_values=min_values)
        if operator == DOES_NOT_EXIST:
            return cls(key, False, frozenset(), min_values=min_values)
        if operator in (GT, LT, GTE, LTE):
            if len(vals) != 1:
                raise RequirementError(f"operator {operator} on {key!r} needs exactly one value")
            bound = _as_int(next(iter(vals)))
            if bound is None:
                raise RequirementError(
                    f"operator {operator} on {key!r} needs an integer, got {next(iter(vals))!r}"
                )
            if operator == GT:
                if bound == _UNBOUNDED:  # nothing is greater than the largest integer
                    return cls(key, False, frozenset(), min_values=min_values)
                return cls(key, True, frozenset(), greater_than=bound, min_values=min_values)
            if operator == GTE:
                return cls(key, True, frozenset(), greater_than=bound - 1, min_values=min_values)
            if operator == LT:
                return cls(key, True, frozenset(), less_than=bound, min_values=min_values)
            return cls(key, True, frozenset(), less_than=bound + 1, min_values=min_values)
        raise RequirementError(f"unknown operator {operator!r} on {key!r}")

    # -- set properties -------------------------------------------------------------------

    def __len__(self) -> int:
        if self.complement:
            return _UNBOUNDED - len(self.values)
        return len(self.values)

    @property
    def operator(self) -> str:
        """The operator that describes this set (bounded complements read as Exists)."""
        if self.complement:
            return NOT_IN if self.values else EXISTS
        return IN if self.values else DOES_NOT_EXIST

    def any_value(self) -> str | None:
        """One value the set allows, as Karpenter's ``Requirement.Any()`` picks it, or None
        when it allows none it could name (``DoesNotExist``, or no integer within the bounds).

        Karpenter takes an arbitrary member of an ``In`` set and a random integer within the
        bounds (from 0 unless bounded below) for ``Exists``, ``NotIn``, ``Gt`` and ``Lt``;
        here the choice is deterministic, so runs repeat: the smallest member of an ``In``
        set, else the smallest integer within the bounds that ``NotIn`` does not exclude. A
        label value never starts with ``-``, so the integers start at 0 (where Karpenter's
        choice fails on an upper bound below 0).
        """
        if not self.complement:
            return min(self.values) if self.values else None
        return _first_integer(self.values, self.greater_than, self.less_than)

    def _within_bounds(self, value: str) -> bool:
        if self.greater_than is None and self.less_than is None:
            return True
        number = _as_int(value)
        if number is None:
            return False
        if self.greater_than is not None and number <= self.greater_than:
            return False
        return not (self.less_than is not None and number >= self.less_than)

    def has(self, value: str) -> bool:
        """True when ``value`` is in the set."""
        if self.complement:
            return value not in self.values and self._within_bounds(value)
        return value in self.values and self._within_bounds(value)

    def overlaps(self, other: Requirement) -> bool:
        """True when some value is in both sets (``len(self.intersection(other)) > 0``,
        without building the intersection)."""
        if (
            self.greater_than is None
            and self.less_than is None
            and other.greater_than is None
            and other.less_than is None
        ):
            if self.complement:
                return other.complement or not other.values <= self.values
            if other.complement:
                return not self.values <= other.values
            return not self.values.isdisjoint(other.values)
        return len(self.intersection(other)) > 0

    def intersection(self, other: Requirement) -> Requirement:
        """The values allowed by both requirements; minValues takes the larger."""
        complement = self.complement and other.complement
        greater_than = _max_opt(self.greater_than, other.greater_than)
        less_than = _min_opt(self.less_than, other.less_than)
        min_values = _max_opt(self.min_values, other.min_values)
        if greater_than is not None and less_than is not None and greater_than + 1 >= less_than:
            # no integer strictly between the bounds (Karpenter: gte > lte)
            return Requirement(self.key, False, frozenset(), min_values=min_values)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        if greater_than is not None or less_than is not None:
            bounded = Requirement(self.key, True, frozenset(), greater_than, less_than)
            values = frozenset(v for v in values if bounded._within_bounds(v))
        if not complement:
            greater_than = less_than = None
        return Requirement(self.key, complement, values, greater_than, less_than, min_values)

    def __str__(self) -> str:
        """Karpenter's rendering: ``key In [a b c d e and 2 others]``, ``key Exists >=3 <=9``."""
        if self.operator in (EXISTS, DOES_NOT_EXIST):
            text = f"{self.key} {self.operator}"
        else:
            shown = sorted(self.values)
            if len(shown) > 5:
                shown = [*shown[:5], f"and {len(shown) - 5} others"]
            text = f"{self.key} {self.operator} [{' '.join(shown)}]"
        if self.greater_than is not None:
            text += f" >={self.greater_than + 1}"
        if self.less_than is not None:
            text += f" <={self.less_than - 1}"
        if self.min_values is not None:
            text += f" minValues {self.min_values}"
        return text


def _both_exclude(first: Requirement, second: Requirement) -> bool:
    """Both sides only exclude values (``NotIn``, ``DoesNotExist``): no intersection between
    them is a problem."""
    return first.operator in (NOT_IN, DOES_NOT_EXIST) and second.operator in (
        NOT_IN,
        DOES_NOT_EXIST,
    )


def _first_integer(excluded: frozenset[str], above: int | None, below: int | None) -> str | None:
    """The smallest integer label value strictly between ``above`` and ``below`` (either None:
    unbounded) that is not ``excluded``, or None. Label values are never negative."""
    highest = _UNBOUNDED if below is None else below - 1
    candidate = 0 if above is None else max(0, above + 1)
    while candidate <= highest:  # at most len(excluded) + 1 turns
        if str(candidate) not in excluded:
            return str(candidate)
        candidate += 1
    return None


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _typo_hint(key: str, well_known: Iterable[str], defined: Iterable[str]) -> str:
    """`` (typo of "topology.kubernetes.io/zone"?)`` when ``key`` looks like a label that
    exists: contained in it, or sharing the part after the prefix. Well-known labels are
    tried first, as in Karpenter; both are tried in sorted order so the hint is stable."""
    suffix = key.split("/", 1)[1] if "/" in key else key
    for group in (well_known, defined):
        for candidate in sorted(group):
            if key in candidate or candidate.endswith(suffix):
                return f' (typo of "{candidate}"?)'
    return ""


class Requirements(Mapping[str, Requirement]):
    """An immutable map from label key to :class:`Requirement`."""

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Iterable[Requirement] = ()) -> None:
        self._hash: int | None = None
        merged: dict[str, Requirement] = {}
        for requirement in items:
            existing = merged.get(requirement.key)
            merged[requirement.key] = (
                requirement if existing is None else existing.intersection(requirement)
            )
        self._items = merged

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        """One single-valued ``In`` requirement per label."""
        return cls(
            Requirement(normalize_label(k), False, frozenset((v,))) for k, v in labels.items()
        )

    @classmethod
    def of(cls, *specs: tuple[str, str, Iterable[str]]) -> Requirements:
        """Build from ``(key, operator, values)`` tuples."""
        return cls(Requirement.of(key, op, values) for key, op, values in specs)

    # -- Mapping ---------------------------------------------------------------------------

    def __getitem__(self, key: str) -> Requirement:
        return self._items[key]

    @overload
    def get(self, key: str, /) -> Requirement | None: ...
    @overload
    def get(self, key: str, default: Requirement | _T, /) -> Requirement | _T: ...
    def get(self, key: str, default: object = None, /) -> object:
        # The solver asks for keys most requirements do not have: a dict lookup rather
        # than Mapping's try/except.
        return self._items.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Requirements({', '.join(str(self._items[k]) for k in sorted(self._items))!r})"

    def __str__(self) -> str:
        """Karpenter's rendering for messages: sorted, without restricted labels (the
        placeholder hostname a NodeClaim carries while it is being sized)."""
        return ", ".join(
            str(self._items[k]) for k in sorted(self._items) if k not in RESTRICTED_LABELS
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirements):
            return NotImplemented
        return self._items == other._items

    def __hash__(self) -> int:
        # Cached: the solver keys its memo tables on requirements.
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    # -- algebra ---------------------------------------------------------------------------

    def add(self, *others: Requirements | Requirement) -> Requirements:
        """The intersection of these requirements with ``others``."""
        items: list[Requirement] = list(self._items.values())
        for other in others:
            if isinstance(other, Requirement):
                items.append(other)
            else:
                items.extend(other.values())
        return Requirements(items)

    def intersects(self, incoming: Requirements) -> list[str]:
        """Problems with keys both sides define; empty when every shared key intersects."""
        problems: list[str] = []
        for key in self._items.keys() & incoming._items.keys():
            existing = self._items[key]
            other = incoming._items[key]
            if not existing.overlaps(other) and not _both_exclude(existing, other):
                problems.append(f"key {key}, {other} not in {existing}")
        return sorted(problems)

    def meets(self, incoming: Requirements) -> bool:
        """True when every key both sides define intersects: ``not self.intersects(incoming)``
        without putting the problems into words."""
        mine, theirs = self._items, incoming._items
        if len(theirs) < len(mine):
            mine, theirs = theirs, mine
        for key, requirement in mine.items():
            other = theirs.get(key)
            if (
                other is not None
                and not requirement.overlaps(other)
                and not _both_exclude(requirement, other)
            ):
                return False
        return True

    def compatibility_problems(
        self, incoming: Requirements, allow_undefined: frozenset[str] = WELL_KNOWN_LABELS
    ) -> list[str]:
        """Why ``incoming`` cannot be satisfied together with these requirements ([] if it can).

        Keys in ``allow_undefined`` may be missing here; other keys ``incoming`` requires with
        ``In``/``Exists`` must be defined here.
        """
        for key in sorted(incoming._items.keys() - self._items.keys()):
            operator = incoming._items[key].operator
            if key in allow_undefined or operator in (NOT_IN, DOES_NOT_EXIST):
                continue
            # Karpenter stops at the first undefined label and reports nothing else.
            hint = _typo_hint(key, allow_undefined, self._items.keys())
            return [f'label "{key}" does not have known values{hint}']
        return self.intersects(incoming)

    def compatible(
        self, incoming: Requirements, allow_undefined: frozenset[str] = WELL_KNOWN_LABELS
    ) -> bool:
        """True when some node could satisfy both these requirements and ``incoming``."""
        for key, other in incoming._items.items():
            existing = self._items.get(key)
            if existing is None:
                if key in allow_undefined or other.operator in (NOT_IN, DOES_NOT_EXIST):
                    continue
                return False
            if len(existing.intersection(other)) == 0 and not (
                other.operator in (NOT_IN, DOES_NOT_EXIST)
                and existing.operator in (NOT_IN, DOES_NOT_EXIST)
            ):
                return False
        return True

    def labels(self) -> dict[str, str]:
        """Labels implied by single-valued ``In`` requirements."""
        return {
            key: next(iter(req.values))
            for key, req in self._items.items()
            if not req.complement and len(req.values) == 1
        }

    def matches_labels(self, labels: Mapping[str, str]) -> bool:
        """True when a node with exactly these labels satisfies every requirement.

        An absent label satisfies only ``NotIn`` and ``DoesNotExist``.
        """
        for key, req in self._items.items():
            value = labels.get(key)
            if value is None:
                if req.operator not in (NOT_IN, DOES_NOT_EXIST):
                    return False
            elif not req.has(value):
                return False
        return True
