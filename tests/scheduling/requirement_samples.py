"""Karpenter's requirement samples (``pkg/scheduling/requirement(s)_test.go``) and grid parsers.

Karpenter checks every pair of fourteen sample requirements on one key. The same samples are
used by the table tests, each named by a short token (``A`` is ``In [A]``, ``!12`` is
``NotIn [1 2]``, ``>1`` is ``Gt 1``, ``*`` is ``Exists``, ``-`` is ``DoesNotExist``), and each
table is a grid: one row per left-hand sample, one cell per right-hand sample in :data:`ORDER`.
"""

from __future__ import annotations

from nodewright.scheduling.requirements import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, Requirement

K = "key"
MAX_INT64 = 2**63 - 1


def req(operator: str, *values: str, min_values: int | None = None, key: str = K) -> Requirement:
    return Requirement.of(key, operator, values, min_values)


def complement(
    excluded: tuple[str, ...] = (), low: int | None = None, high: int | None = None
) -> Requirement:
    """A complement set on ``key`` with exclusive integer bounds, as intersections build them."""
    return Requirement(K, True, frozenset(excluded), low, high)


#: Karpenter's fourteen samples (its ``exists``, ``doesNotExist``, ``inA`` ... ``lessThan9``).
SPECS: dict[str, tuple[str, tuple[str, ...]]] = {
    "*": (EXISTS, ()),
    "-": (DOES_NOT_EXIST, ()),
    "A": (IN, ("A",)),
    "B": (IN, ("B",)),
    "AB": (IN, ("A", "B")),
    "!A": (NOT_IN, ("A",)),
    "1": (IN, ("1",)),
    "9": (IN, ("9",)),
    "19": (IN, ("1", "9")),
    "!12": (NOT_IN, ("1", "2")),
    ">1": ("Gt", ("1",)),
    ">9": ("Gt", ("9",)),
    "<1": ("Lt", ("1",)),
    "<9": ("Lt", ("9",)),
}
ORDER = tuple(SPECS)
SAMPLES = {token: req(op, *values) for token, (op, values) in SPECS.items()}
#: Results of intersections that are none of the samples.
DERIVED = {
    "!A12": complement(("A", "1", "2")),
    ">1!2": complement(("2",), low=1),  # >= 2, but not 2 (1 fell outside the bound)
    "<9!12": complement(("1", "2"), high=9),
    "2..8": complement(low=1, high=9),
}
RESULTS = {**SAMPLES, **DERIVED}
#: minValues Karpenter gives each sample in its "with flexibility" tables.
FLEXIBILITY = {token: 2 if token in ("AB", "19", "!12") else 1 for token in ORDER}


def grid(text: str) -> dict[tuple[str, str], str]:
    """Parse ``row: cell cell ...`` lines into ``{(row, column): cell}`` over :data:`ORDER`."""
    cells: dict[tuple[str, str], str] = {}
    for line in text.strip().splitlines():
        row, _, rest = line.partition(":")
        values = rest.split()
        assert len(values) == len(ORDER), line
        for column, value in zip(ORDER, values, strict=True):
            cells[(row.strip(), column)] = value
    return cells


def flags(text: str, columns: tuple[str, ...]) -> dict[tuple[str, str], bool]:
    """Parse ``row: Y.Y..`` lines (Y = true, . = false) over ``columns``."""
    cells: dict[tuple[str, str], bool] = {}
    for line in text.strip().splitlines():
        row, _, rest = line.partition(":")
        marks = rest.strip()
        assert len(marks) == len(columns), line
        for column, mark in zip(columns, marks, strict=True):
            cells[(row.strip(), column)] = mark == "Y"
    return cells


#: Values probed by the membership and label tables.
PROBES = ("A", "B", "1", "2", "9")
