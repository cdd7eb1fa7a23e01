"""The search space of ``nodewright tune``: which fields of which NodePools (or NodeClasses)
to vary, the values to try, how many combinations to draw, and the constraints a variant must
meet to win.

A space file is YAML, read with the manifests' limits::

    parameters:
      - field: spec.disruption.consolidationPolicy      # of every NodePool
        values: [WhenEmpty, WhenEmptyOrUnderutilized]
      - field: spec.disruption.consolidateAfter
        range: {from: 0s, to: 10m, step: 5m}
      - field: spec.template.spec.requirements[karpenter.sh/capacity-type]
        values: [[spot], [on-demand], [spot, on-demand]]
      - kind: KWOKNodeClass                               # default: NodePool
        name: default                                     # default: every object of the kind
        field: spec.nodeRegistrationDelay
        values: [5s, 30s]
    sample: 20                     # draw 20 of the combinations (with --seed); default: all
    constraints:
      maxPodPending: 2m            # no pod pending longer than this
      maxDisruptionsPerHour: 4     # in any hour of the run
      maxPendingPods: 0            # pods still pending when the run ends

Every problem is a :class:`SpaceError` line naming the file, line and key.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from nodewright.api.duration import DurationError, format_duration, parse_duration
from nodewright.api.excerpt import excerpt
from nodewright.api.manifests.documents import at_line, line_of, parse_yaml
from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.files import read_manifest
from nodewright.simulation.tune.fields import FieldPath, FieldPathError, parse_field_path

#: The most values one parameter may list or a range may make.
MAX_VALUES = 1_000
#: The most variants one tune runs (draw fewer with ``sample``).
MAX_VARIANTS = 10_000
_SPACE_KEYS = ("parameters", "sample", "constraints")
_PARAMETER_KEYS = ("kind", "name", "field", "label", "values", "range")
_RANGE_KEYS = ("from", "to", "step")
CONSTRAINT_KEYS = ("maxPodPending", "maxDisruptionsPerHour", "maxPendingPods")


class SpaceError(ValueError):
    """A space file that cannot be used; each line names the file, line and key."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


@dataclass(frozen=True)
class Parameter:
    """One field to vary and the values to try."""

    kind: str
    #: The object's name; empty: every object of ``kind``.
    name: str
    field: FieldPath
    values: tuple[object, ...]
    #: How tables name it (``consolidateAfter``).
    label: str
    #: ``space.yaml:4: parameters[0]``, for messages.
    where: str


@dataclass(frozen=True)
class Constraints:
    max_pod_pending: timedelta | None = None
    max_disruptions_per_hour: int | None = None
    max_pending_pods: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "maxPodPending": (
                format_duration(self.max_pod_pending) if self.max_pod_pending is not None else None
            ),
            "maxDisruptionsPerHour": self.max_disruptions_per_hour,
            "maxPendingPods": self.max_pending_pods,
        }


@dataclass(frozen=True)
class Space:
    source: str
    parameters: tuple[Parameter, ...]
    sample: int | None = None
    constraints: Constraints = field(default_factory=Constraints)

    @property
    def combinations(self) -> int:
        return math.prod(len(p.values) for p in self.parameters)


@dataclass(frozen=True)
class Setting:
    """One parameter's value in a variant."""

    parameter: int
    value: object


def load_space(path: Path) -> Space:
    """Read and check a space file."""
    try:
        document = parse_yaml(read_manifest(path), str(path))
    except ManifestError as error:
        raise SpaceError([str(error)]) from None
    return parse_space(document, str(path))


def parse_space(document: object, source: str) -> Space:
    """The space a parsed document describes; :class:`SpaceError` with every problem."""
    reader = _Reader(document, source)
    space = reader.space()
    if reader.problems:
        raise SpaceError(reader.problems)
    assert space is not None
    return space


def choose(space: Space, seed: int, sample: int | None = None) -> list[tuple[Setting, ...]]:
    """The combinations to run, in order: all of them, or ``sample`` (the space's when not
    given) drawn at random with ``seed``. The same space and seed always choose the same."""
    count = sample if sample is not None else space.sample
    total = space.combinations
    if count is None or count >= total:
        if total > MAX_VARIANTS:
            raise SpaceError(
                [
                    f"{space.source}: the parameters make {total} combinations; tune runs at "
                    f"most {MAX_VARIANTS}: give sample: N (or --sample N) to draw N of them"
                ]
            )
        indexes: Sequence[int] = range(total)
    else:
        indexes = sorted(random.Random(seed).sample(range(total), count))
    return [tuple(_combination(space, index)) for index in indexes]


def _combination(space: Space, index: int) -> Iterator[Setting]:
    """The ``index``-th combination, the last parameter varying fastest."""
    sizes = [len(p.values) for p in space.parameters]
    digits = []
    for size in reversed(sizes):
        index, digit = divmod(index, size)
        digits.append(digit)
    for number, (parameter, digit) in enumerate(
        zip(space.parameters, reversed(digits), strict=True)
    ):
        yield Setting(number, parameter.values[digit])


def render_value(value: object) -> str:
    """A value as a table shows it: ``30s``, ``spot,on-demand``, ``{nodes: 10%}``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "(unset)"
    if isinstance(value, list):
        return ",".join(render_value(v) for v in value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k}: {render_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    return str(value)


class _Reader:
    def __init__(self, document: object, source: str) -> None:
        self.document = document
        self.source = source
        self.problems: list[str] = []

    def where(self, *location: object) -> str:
        line = line_of(self.document, location) if isinstance(self.document, Mapping) else None
        path = ""
        for part in location:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        return f"{at_line(self.source, line)}: {path}" if path else at_line(self.source, line)

    def problem(self, location: tuple[object, ...], message: str) -> None:
        self.problems.append(f"{self.where(*location)}: {message}")

    def space(self) -> Space | None:
        document = self.document
        if not isinstance(document, Mapping):
            got = "an empty file" if document is None else f"a {type(document).__name__}"
            self.problems.append(
                f"{self.source}: a space is a mapping with parameters (and sample, "
                f"constraints), got {got}"
            )
            return None
        for key in document:
            if key not in _SPACE_KEYS:
                self.problem((key,), f"unknown key; expected one of {', '.join(_SPACE_KEYS)}")
        raw = document.get("parameters")
        if not isinstance(raw, list) or not raw:
            self.problem(
                ("parameters",),
                "expected a list of parameters, each with field and values (or range)",
            )
            raw = []
        parameters = [self.parameter(item, index) for index, item in enumerate(raw)]
        sample = self.count(document.get("sample"), ("sample",), minimum=1)
        constraints = self.constraints(document.get("constraints"))
        kept = tuple(p for p in parameters if p is not None)
        return Space(self.source, kept, sample, constraints)

    def parameter(self, raw: object, index: int) -> Parameter | None:
        at: tuple[object, ...] = ("parameters", index)
        if not isinstance(raw, Mapping):
            self.problem(at, "expected a mapping with field and values (or range)")
            return None
        before = len(self.problems)
        for key in raw:
            if key not in _PARAMETER_KEYS:
                self.problem((*at, key), f"unknown key; expected {', '.join(_PARAMETER_KEYS)}")
        kind = self.text(raw.get("kind", "NodePool"), (*at, "kind"))
        name = self.text(raw.get("name", ""), (*at, "name"), empty=True)
        path: FieldPath | None = None
        given = raw.get("field")
        if not isinstance(given, str) or not given:
            self.problem((*at, "field"), "expected a field path such as spec.weight")
        else:
            try:
                path = parse_field_path(given)
            except FieldPathError as error:
                self.problem((*at, "field"), str(error))
        label = raw.get("label")
        if label is not None and not isinstance(label, str):
            self.problem((*at, "label"), f"expected a string, got {excerpt(label)}")
        values = self.values(raw, at)
        if len(self.problems) > before or path is None or not values:
            return None
        return Parameter(
            kind=kind,
            name=name,
            field=path,
            values=tuple(values),
            label=label or path.label,
            where=self.where(*at),
        )

    def values(self, raw: Mapping[str, object], at: tuple[object, ...]) -> list[object]:
        if ("values" in raw) == ("range" in raw):
            self.problem(at, "give either values (a list) or range (from, to, step)")
            return []
        if "values" in raw:
            values = raw["values"]
            if not isinstance(values, list) or not values:
                self.problem((*at, "values"), "expected a non-empty list of values to try")
                return []
            if len(values) > MAX_VALUES:
                self.problem((*at, "values"), f"{len(values)} values; at most {MAX_VALUES}")
                return []
            return [_plain(v) for v in values]
        return self.range(raw["range"], (*at, "range"))

    def range(self, raw: object, at: tuple[object, ...]) -> list[object]:
        if not isinstance(raw, Mapping) or set(raw) != set(_RANGE_KEYS):
            self.problem(
                at, "expected {from, to, step}: numbers (10, 50, 10) or durations (0s, 10m, 1m)"
            )
            return []
        bounds = [raw["from"], raw["to"], raw["step"]]
        if all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds):
            start, stop, step = (float(b) for b in bounds)
            whole = all(isinstance(b, int) for b in bounds)
            return self.steps(start, stop, step, at, int if whole else float)
        if all(isinstance(b, str) for b in bounds):
            try:
                start, stop, step = (parse_duration(str(b)).total_seconds() for b in bounds)
            except DurationError as error:
                self.problem(at, str(error))
                return []
            if any(s != int(s) for s in (start, stop, step)):
                self.problem(at, "durations in whole seconds")
                return []
            seconds = self.steps(start, stop, step, at, int)
            return [format_duration(timedelta(seconds=float(s))) for s in seconds]  # type: ignore[arg-type]
        self.problem(at, "from, to and step are all numbers or all durations (such as 30s)")
        return []

    def steps(
        self, start: float, stop: float, step: float, at: tuple[object, ...], kind: type
    ) -> list[object]:
        if not math.isfinite(start + stop + step) or step <= 0:
            self.problem((*at, "step"), "expected a step greater than 0")
            return []
        if stop < start:
            self.problem((*at, "to"), "expected to >= from")
            return []
        count = math.floor((stop - start) / step + 1e-9) + 1
        if count > MAX_VALUES:
            self.problem(at, f"makes {count} values; at most {MAX_VALUES}")
            return []
        return [kind(round(start + i * step, 9)) for i in range(count)]

    def constraints(self, raw: object) -> Constraints:
        if raw is None:
            return Constraints()
        at: tuple[object, ...] = ("constraints",)
        if not isinstance(raw, Mapping):
            self.problem(at, f"expected a mapping of {', '.join(CONSTRAINT_KEYS)}")
            return Constraints()
        for key in raw:
            if key not in CONSTRAINT_KEYS:
                self.problem(
                    (*at, key), f"unknown constraint; expected {', '.join(CONSTRAINT_KEYS)}"
                )
        pending: timedelta | None = None
        given = raw.get("maxPodPending")
        if given is not None:
            try:
                pending = parse_duration(given) if isinstance(given, str) else None
            except DurationError as error:
                self.problem((*at, "maxPodPending"), str(error))
            else:
                if pending is None:
                    self.problem(
                        (*at, "maxPodPending"),
                        f"expected a duration such as 2m, got {excerpt(given)}",
                    )
        return Constraints(
            max_pod_pending=pending,
            max_disruptions_per_hour=self.count(
                raw.get("maxDisruptionsPerHour"), (*at, "maxDisruptionsPerHour")
            ),
            max_pending_pods=self.count(raw.get("maxPendingPods"), (*at, "maxPendingPods")),
        )

    def count(self, value: object, at: tuple[object, ...], minimum: int = 0) -> int | None:
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            self.problem(at, f"expected a whole number >= {minimum}, got {excerpt(value)}")
            return None
        return value

    def text(self, value: object, at: tuple[object, ...], empty: bool = False) -> str:
        if not isinstance(value, str) or (not value and not empty):
            self.problem(at, f"expected a string, got {excerpt(value)}")
            return ""
        return value


def _plain(value: object) -> object:
    """A YAML value as plain lists, dicts and scalars (no line bookkeeping)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
