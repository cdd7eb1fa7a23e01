"""What ``nodewright tune`` shows: the variants ranked, the Pareto front of cost against
disruptions, what the winner saves against the baseline, and the winner's NodePools (and
NodeClasses) as YAML to apply; and the same as JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from nodewright.api.excerpt import cut, printable
from nodewright.simulation.text import print_table
from nodewright.simulation.tune.job import Variant
from nodewright.simulation.tune.ranking import (
    OBJECTIVES,
    Ranking,
    Scored,
    busiest_hour,
    format_duration_seconds,
)
from nodewright.simulation.tune.space import Space

#: Rows the table shows; --json has every variant.
SHOWN_ROWS = 20


@dataclass
class TuneReport:
    space: Space
    ranking: Ranking
    variants: dict[int, Variant]
    #: The winner's varied objects, as manifests to apply.
    winning_manifests: list[dict[str, Any]] = field(default_factory=list)
    #: Variants asked for, and whether Ctrl-C stopped the run before all finished.
    asked: int = 0
    interrupted: bool = False
    #: Why the run stopped before all finished, when not Ctrl-C (the Ray cluster failed).
    failure: str = ""
    #: Where it ran: ``in this process``, ``2 local processes``.
    ran: str = ""
    seed: int = 0
    #: CPU seconds of all the runs together, and of this process.
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0

    def settings(self, index: int) -> list[tuple[str, str]]:
        return self.variants[index].describe(self.space)

    def winning_yaml(self) -> str:
        return yaml.safe_dump_all(self.winning_manifests, sort_keys=False)

    def to_dict(self) -> dict[str, Any]:
        winner = self.ranking.winner
        baseline = self.ranking.baseline
        return {
            "space": self.space.source,
            "seed": self.seed,
            "objectives": list(self.ranking.objectives),
            "constraints": self.space.constraints.to_dict(),
            "horizonSeconds": self.ranking.horizon,
            "variantsAsked": self.asked,
            "variantsFinished": len(self.ranking.scored),
            "interrupted": self.interrupted,
            "failure": self.failure or None,
            "ran": self.ran,
            "cpuSeconds": round(self.cpu_seconds, 3),
            "wallSeconds": round(self.wall_seconds, 3),
            "parameters": [
                {
                    "kind": p.kind,
                    "name": p.name or None,
                    "field": p.field.text,
                    "label": p.label,
                    "values": list(p.values),
                }
                for p in self.space.parameters
            ],
            "variants": [self._variant(s) for s in self.ranking.scored],
            "front": [s.index for s in self.ranking.front],
            "winner": winner.index if winner is not None else None,
            "baseline": baseline.index if baseline is not None else None,
            "savings": savings(baseline, winner),
            "winningManifests": self.winning_manifests,
        }

    def _variant(self, scored: Scored) -> dict[str, Any]:
        result = scored.result
        variant = self.variants[result.index]
        return {
            "index": result.index,
            "rank": scored.rank,
            "baseline": variant.baseline,
            "settings": {
                self.space.parameters[s.parameter].label: s.value for s in variant.settings
            },
            "error": result.error,
            "feasible": scored.feasible,
            "violations": scored.violations,
            "front": scored.front,
            "dollarHours": round(scored.cost, 6),
            "dollarHoursOfRun": round(result.dollar_hours, 6),
            "simulatedSeconds": result.seconds,
            "pricePerHourAtEnd": result.price_per_hour,
            "currentPricePerHour": result.current_price_per_hour,
            "pendingPodSeconds": round(scored.pending, 3),
            "longestPendingSeconds": result.longest_pending,
            "longestPendingPod": result.longest_pending_pod or None,
            "podsPendingAtEnd": result.pending_pods,
            "disruptions": result.disruptions,
            "disruptionTimes": result.disruption_times,
            "mostDisruptionsInAnHour": busiest_hour(result.disruption_times),
            "nodesLaunched": result.nodes_launched,
            "nodesAtEnd": result.nodes,
            "cpuSeconds": result.cpu_seconds,
            "ranOn": result.ran_on,
        }


def print_tune(report: TuneReport) -> None:
    ranking = report.ranking
    finished = [s for s in ranking.scored if s.finished]
    objectives = ", then ".join(f"{o} ({OBJECTIVES[o]})" for o in ranking.objectives)
    print(
        f"{len(ranking.scored)} of {report.asked} variant(s) ran ({report.ran}); "
        f"ranked by {objectives}, over {format_duration_seconds(ranking.horizon)} simulated"
    )
    if report.interrupted:
        print("interrupted: the variants that had finished are ranked")
    if report.failure:
        print(f"stopped: {printable(report.failure)}; the variants that had finished are ranked")
    now = next(
        (s.result.current_price_per_hour for s in finished if s.result.current_price_per_hour),
        None,
    )
    if now is not None:
        print(f"the snapshot's nodes cost ${now:.4f}/h before the run")
    labels = [p.label for p in report.space.parameters]
    header = (
        "RANK",
        "VARIANT",
        "COST $",
        "$/H END",
        "POD·S PENDING",
        "LONGEST WAIT",
        "DISRUPTIONS",
        "NODES",
        "FRONT",
        *(label.upper() for label in labels),
        "NOTE",
    )
    rows = [_row(report, scored) for scored in ranking.scored[:SHOWN_ROWS]]
    print()
    print_table(header, rows)
    if len(ranking.scored) > SHOWN_ROWS:
        print(f"... {len(ranking.scored) - SHOWN_ROWS} more (all of them in --json)")
    if finished:
        print("\nPareto front, cost against disruptions (none cheaper without more disruptions):")
        points: dict[tuple[float, int], list[int]] = {}
        for each in ranking.front:
            points.setdefault((round(each.cost, 4), each.result.disruptions), []).append(each.index)
        for (cost, disruptions), indexes in points.items():
            shown = ", ".join(str(i) for i in indexes)
            print(f"  ${cost:.4f}, {disruptions} disruption(s): variant(s) {shown}")
    _print_verdict(report)


def _row(report: TuneReport, scored: Scored) -> tuple[str, ...]:
    result = scored.result
    values = [value for _, value in report.settings(result.index)]
    if not values:
        values = ["(as given)"] + [""] * (len(report.space.parameters) - 1)
    if not scored.finished:
        note = f"failed: {result.error}"
        return (
            str(scored.rank),
            str(result.index),
            *(["-"] * 7),
            *values,
            printable(cut(note, 120)),
        )
    note = "; ".join(scored.violations) if scored.violations else ""
    return (
        str(scored.rank),
        str(result.index),
        f"{scored.cost:.4f}",
        f"{result.price_per_hour:.4f}",
        f"{scored.pending:.0f}",
        format_duration_seconds(result.longest_pending),
        str(result.disruptions),
        str(result.nodes_launched),
        "*" if scored.front else "",
        *values,
        note,
    )


def _print_verdict(report: TuneReport) -> None:
    ranking = report.ranking
    winner, baseline = ranking.winner, ranking.baseline
    if winner is None:
        print("\nNo variant meets the constraints: relax them or widen the space.")
        return
    settings = ", ".join(f"{label}={value}" for label, value in report.settings(winner.index))
    print(f"\nWinner: variant {winner.index}" + (f" ({settings})" if settings else " (as given)"))
    saved = savings(baseline, winner)
    if baseline is not None and saved is not None and winner.index != baseline.index:
        share = saved["share"]
        shown = f" ({share:.1%})" if share is not None else ""
        print(
            f"  against the baseline (variant 0, as given): ${baseline.cost:.4f} -> "
            f"${winner.cost:.4f} over the run, saves ${saved['dollarHours']:.4f}{shown}; "
            f"${baseline.result.price_per_hour:.4f}/h -> ${winner.result.price_per_hour:.4f}/h "
            "at the end"
        )
    elif baseline is not None and winner.index == baseline.index:
        print("  the settings as given are the best of those tried")
    if report.winning_manifests:
        print("\nThe winning settings, to apply:\n")
        print(report.winning_yaml().rstrip())


def savings(baseline: Scored | None, winner: Scored | None) -> dict[str, Any] | None:
    if baseline is None or winner is None or not baseline.finished:
        return None
    saved = baseline.cost - winner.cost
    return {
        "dollarHours": round(saved, 6),
        "share": round(saved / baseline.cost, 6) if baseline.cost > 0 else None,
        "pricePerHourAtEnd": round(
            baseline.result.price_per_hour - winner.result.price_per_hour, 6
        ),
    }


def ordered_variants(variants: Sequence[Variant]) -> dict[int, Variant]:
    return {variant.index: variant for variant in variants}
