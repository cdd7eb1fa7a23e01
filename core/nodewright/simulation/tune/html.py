"""The tune as one self-contained web page (``tune --html FILE``): the winner and what it
saves, every variant as a point of cost against disruptions with the Pareto front drawn, the
ranked table and the winning settings to apply. No script, nothing fetched from the network:
the file opens anywhere, offline, and can be attached to a ticket."""

from __future__ import annotations

from html import escape

from nodewright.simulation.page import STYLE, Number, Prose, Setting, table
from nodewright.simulation.tune.ranking import OBJECTIVES, Scored, format_duration_seconds
from nodewright.simulation.tune.scatter import scatter
from nodewright.simulation.tune.text import TuneReport, savings

_TUNE_STYLE = """
svg .label { fill: #222; font-weight: 600; }
.legend span { margin-right: 1.6em; white-space: nowrap; }
.legend svg { vertical-align: middle; margin-right: .3em; }
#variants th, #variants td { padding: 3px 7px 3px 4px; }
#variants td.prose { min-width: 10em; }
#variants td.setting { min-width: 18em; font-size: 13px; }
pre.yaml { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: .8em 1.2em;
           font-size: 13px; white-space: pre-wrap; overflow-wrap: anywhere; }
"""

_LEGEND = (
    ("#c2410c", True, "on the Pareto front (none cheaper without more disruptions)"),
    ("#2563a8", True, "another variant"),
    ("#2563a8", False, "breaks a constraint (hollow)"),
)


def render_tune_html(report: TuneReport, title: str = "nodewright tune") -> str:
    """The page for ``report``."""
    ranking = report.ranking
    winner = ranking.winner
    objectives = ", then ".join(f"{o} ({OBJECTIVES[o]})" for o in ranking.objectives)
    horizon = format_duration_seconds(ranking.horizon)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{STYLE}{_TUNE_STYLE}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
        '<p class="summary" id="tune-summary">',
        f"<span>{len(ranking.scored)} of {report.asked} variant(s) ran ({escape(report.ran)})"
        "</span>",
        f"<span>ranked by {escape(objectives)}</span>",
        f"<span>{escape(horizon)} simulated</span>",
        f"<span>space {escape(report.space.source)}, seed {report.seed}</span>",
        "</p>",
        *(
            [
                '<p class="note" id="interrupted">Interrupted: the variants that had finished are '
                "ranked.</p>"
            ]
            if report.interrupted
            else []
        ),
        *_constraints(report),
        *_headline(report),
        "<h2>Cost against disruptions</h2>",
        scatter(
            ranking.scored,
            lambda s: _describe(report, s),
            winner.index if winner is not None else None,
            f"what the nodes cost over {horizon} of simulated time, $",
        ),
        _legend(),
        "<h2>The variants, ranked</h2>",
        _variants(report),
        "<h2>The winning settings, to apply</h2>",
        (
            f'<pre class="yaml" id="winning-yaml">{escape(report.winning_yaml())}</pre>'
            if report.winning_manifests
            else '<p id="winning-yaml">No winner: no variant meets the constraints.</p>'
        ),
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _variants(report: TuneReport) -> str:
    """The ranked table; a note column only when a variant has a note."""
    scored = report.ranking.scored
    rows = [_row(report, s) for s in scored]
    noted = any(not s.finished or s.violations for s in scored)
    header = (
        "Rank",
        "Variant",
        "Cost $",
        "$/h end",
        "Pod·s pending",
        "Longest wait",
        "Disruptions",
        "Nodes",
        "Front",
        "Settings",
        *(["Note"] if noted else []),
    )
    return table("variants", header, rows if noted else [row[:-1] for row in rows])


def _constraints(report: TuneReport) -> list[str]:
    said = {k: v for k, v in report.space.constraints.to_dict().items() if v is not None}
    if not said:
        return []
    words = {
        "maxPodPending": "no pod pending longer than {}",
        "maxDisruptionsPerHour": "at most {} disruption(s) in any hour",
        "maxPendingPods": "at most {} pod(s) pending at the end",
    }
    shown = ", ".join(words[key].format(value) for key, value in said.items())
    return [f'<p id="constraints">Constraints: {escape(shown)}.</p>']


def _headline(report: TuneReport) -> list[str]:
    ranking = report.ranking
    winner, baseline = ranking.winner, ranking.baseline
    if winner is None:
        return [
            '<section class="headline" id="winner">',
            '<div class="big costs">No variant meets the constraints</div>',
            "<p>Relax them or widen the space.</p></section>",
        ]
    settings = ", ".join(f"{label}={value}" for label, value in report.settings(winner.index))
    lines = [
        '<section class="headline" id="winner">',
        f'<div class="big">Winner: variant {winner.index}</div>',
        f'<p id="winner-settings">{escape(settings or "the settings as given")}</p>',
    ]
    saved = savings(baseline, winner)
    if baseline is not None and saved is not None and winner.index != baseline.index:
        share = saved["share"]
        amount = saved["dollarHours"]
        kind = "saves" if amount >= 0 else "costs"
        shown = f" ({abs(share):.1%})" if share is not None else ""
        lines.append(
            f'<p id="winner-saves">Against the settings as given (variant 0): '
            f"${baseline.cost:.4f} &rarr; ${winner.cost:.4f} over the run, "
            f'<span class="{kind}">{kind} ${abs(amount):.4f}{shown}</span>; '
            f"${baseline.result.price_per_hour:.4f}/h &rarr; "
            f"${winner.result.price_per_hour:.4f}/h at the end.</p>"
        )
    elif baseline is not None and winner.index == baseline.index:
        lines.append('<p id="winner-saves">The settings as given are the best of those tried.</p>')
    now = winner.result.current_price_per_hour
    if now is not None:
        lines.append(f"<p>The snapshot's nodes cost ${now:.4f}/h before the run.</p>")
    lines.append("</section>")
    return lines


def _legend() -> str:
    items = []
    for colour, filled, words in _LEGEND:
        dot = (
            '<svg xmlns="http://www.w3.org/2000/svg" width="14" height="14" viewBox="0 0 14 14" '
            f'aria-hidden="true"><circle cx="7" cy="7" r="5" fill="{colour if filled else "#fff"}"'
            f' stroke="{colour}" stroke-width="2"/></svg>'
        )
        items.append(f"<span>{dot}{escape(words)}</span>")
    items.append("<span>\u00d7N: N variants that measured the same</span>")
    return '<p class="legend" id="legend">' + "".join(items) + "</p>"


def _describe(report: TuneReport, scored: Scored) -> str:
    """A variant as hovering over its point says it."""
    result = scored.result
    settings = ", ".join(f"{label}={value}" for label, value in report.settings(scored.index))
    line = (
        f"variant {scored.index} (rank {scored.rank}): ${scored.cost:.4f}, "
        f"{result.disruptions} disruption(s), {result.nodes_launched} node(s) launched, "
        f"longest wait {format_duration_seconds(result.longest_pending)}"
        f"; {settings or 'as given'}"
    )
    if scored.violations:
        line += "; breaks " + "; ".join(scored.violations)
    return line


def _row(report: TuneReport, scored: Scored) -> tuple[str, ...]:
    result = scored.result
    settings = Setting(
        ", ".join(f"{label}={value}" for label, value in report.settings(result.index))
        or "(as given)"
    )
    if not scored.finished:
        return (
            Number(str(scored.rank)),
            Number(str(result.index)),
            *(["-"] * 7),
            settings,
            Prose(f"failed: {result.error}"),
        )
    return (
        Number(str(scored.rank)),
        Number(str(result.index)),
        Number(f"{scored.cost:.4f}"),
        Number(f"{result.price_per_hour:.4f}"),
        Number(f"{scored.pending:.0f}"),
        Number(format_duration_seconds(result.longest_pending)),
        Number(str(result.disruptions)),
        Number(str(result.nodes_launched)),
        "*" if scored.front else "",
        settings,
        Prose("; ".join(scored.violations)) if scored.violations else "",
    )
