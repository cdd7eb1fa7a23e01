"""Variants compared: each scored over the same stretch of simulated time, checked against the
space's constraints, ranked by the objective, and the Pareto front of cost against
disruptions.

Runs end when their cluster settles, so they differ in length. Every variant is scored up to
the longest run (the horizon): a settled cluster goes on as it ended, at its last price with
its pending pods still pending, so a short run is charged for that time too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from nodewright.api.duration import format_duration
from nodewright.simulation.tune.space import Constraints
from nodewright.simulation.tune.worker import VariantResult

#: What ``--objective`` may name, with what each measures.
OBJECTIVES = {
    "cost": "what the nodes cost over the run",
    "pending": "pod-seconds spent pending",
    "disruptions": "nodes disrupted",
    "nodes": "nodes launched",
}
DEFAULT_OBJECTIVE = ("cost",)
_HOUR = 3600.0


@dataclass
class Scored:
    result: VariantResult
    #: Dollar-hours and pending pod-seconds up to the horizon.
    cost: float = 0.0
    pending: float = 0.0
    #: The constraints it breaks, one phrase each.
    violations: list[str] = field(default_factory=list)
    #: On the Pareto front of cost against disruptions.
    front: bool = False
    rank: int = 0

    @property
    def index(self) -> int:
        return self.result.index

    @property
    def finished(self) -> bool:
        return self.result.error is None

    @property
    def feasible(self) -> bool:
        return self.finished and not self.violations

    def value(self, objective: str) -> float:
        return {
            "cost": round(self.cost, 6),
            "pending": round(self.pending, 3),
            "disruptions": float(self.result.disruptions),
            "nodes": float(self.result.nodes_launched),
        }[objective]


@dataclass
class Ranking:
    #: Best first: the variants meeting the constraints, then the others, then failed runs.
    scored: list[Scored]
    horizon: float
    objectives: tuple[str, ...]

    @property
    def winner(self) -> Scored | None:
        best = self.scored[0] if self.scored else None
        return best if best is not None and best.feasible else None

    @property
    def baseline(self) -> Scored | None:
        return next((s for s in self.scored if s.index == 0), None)

    @property
    def front(self) -> list[Scored]:
        """The front, cheapest first."""
        return sorted((s for s in self.scored if s.front), key=lambda s: (s.cost, s.index))


def parse_objectives(text: str) -> tuple[str, ...]:
    """``cost`` or ``cost,disruptions``: what to minimise, ties going to the next;
    ValueError naming what is unknown."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [n for n in names if n not in OBJECTIVES]
    if not names or unknown:
        shown = f"unknown {', '.join(repr(n) for n in unknown)}; " if unknown else ""
        raise ValueError(f"{shown}expected one or more of {', '.join(OBJECTIVES)}, comma-separated")
    if len(set(names)) != len(names):
        raise ValueError("an objective is named twice")
    return names


def rank(
    results: Sequence[VariantResult],
    constraints: Constraints,
    objectives: Sequence[str] = DEFAULT_OBJECTIVE,
) -> Ranking:
    finished = [r for r in results if r.error is None]
    horizon = max((r.seconds for r in finished), default=0.0)
    scored = []
    for result in results:
        each = Scored(result)
        if result.error is None:
            rest = max(horizon - result.seconds, 0.0)
            each.cost = result.dollar_hours + result.price_per_hour * rest / _HOUR
            each.pending = result.pending_pod_seconds + result.pending_pods * rest
            each.violations = _violations(result, constraints)
        scored.append(each)
    _mark_front([s for s in scored if s.finished])
    order = [*objectives, *(o for o in OBJECTIVES if o not in objectives)]
    scored.sort(
        key=lambda s: (
            not s.finished,
            not s.feasible,
            *(s.value(o) if s.finished else 0.0 for o in order),
            s.index,
        )
    )
    for position, each in enumerate(scored, start=1):
        each.rank = position
    return Ranking(scored, horizon, tuple(objectives))


def busiest_hour(times: Sequence[float]) -> int:
    """The most disruptions within any one hour."""
    most, start = 0, 0
    for end, moment in enumerate(times):
        while moment - times[start] >= _HOUR:
            start += 1
        most = max(most, end - start + 1)
    return most


def _violations(result: VariantResult, constraints: Constraints) -> list[str]:
    found = []
    if constraints.max_pod_pending is not None:
        limit = constraints.max_pod_pending.total_seconds()
        if result.pending_pods:
            found.append(f"{result.pending_pods} pod(s) never scheduled")
        elif result.longest_pending > limit:
            waited = format_duration_seconds(result.longest_pending)
            found.append(f"a pod pending {waited} > {format_duration(constraints.max_pod_pending)}")
    if constraints.max_disruptions_per_hour is not None:
        most = busiest_hour(result.disruption_times)
        if most > constraints.max_disruptions_per_hour:
            found.append(f"{most} disruptions in one hour > {constraints.max_disruptions_per_hour}")
    if (
        constraints.max_pending_pods is not None
        and result.pending_pods > constraints.max_pending_pods
    ):
        found.append(
            f"{result.pending_pods} pod(s) pending at the end > {constraints.max_pending_pods}"
        )
    return found


def format_duration_seconds(seconds: float) -> str:
    """``1m30s``; under a second, ``0.4s``."""
    if seconds < 1:
        return f"{seconds:.1f}s" if seconds else "0s"
    return format_duration(timedelta(seconds=round(seconds)))


def _mark_front(scored: Sequence[Scored]) -> None:
    """Mark the variants no other beats on both cost and disruptions."""
    for each in scored:
        cost, disruptions = round(each.cost, 6), each.result.disruptions
        each.front = not any(
            round(other.cost, 6) <= cost
            and other.result.disruptions <= disruptions
            and (round(other.cost, 6) < cost or other.result.disruptions < disruptions)
            for other in scored
        )
