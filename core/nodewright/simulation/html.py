"""The report as one self-contained web page (``simulate --html FILE``): for a cluster
snapshot the what-if first (the saving, where it comes from, which nodes go and which new ones
take their place), then the run's timeline as inline SVG charts, the node tables and the
events. No script, no style sheet or font from the network: the file opens anywhere, offline,
and can be attached to a ticket."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from html import escape

from nodewright.clock import SIMULATION_EPOCH
from nodewright.simulation.charts import Series, duration_label, step_chart
from nodewright.simulation.page import STYLE, Names, Number, Prose, table
from nodewright.simulation.report import Report
from nodewright.simulation.savings import NEGLIGIBLE
from nodewright.simulation.text import MODELLED_MARK, MODELLED_NOTE, saving_lines
from nodewright.simulation.timeline import TimelinePoint
from nodewright.simulation.whatif import WhatIf

#: Hours in an average month, for the headline's monthly figure.
HOURS_PER_MONTH = 730

#: The charts: what each shows, in which unit.
_CHARTS: tuple[tuple[Series, Callable[[TimelinePoint], float]], ...] = (
    (Series("nodes", "Nodes", "nodes", "#2a6"), lambda p: sum(n for _, n in p.nodes)),
    (Series("price", "Price of the nodes", "$/h", "#b52", money=True), lambda p: p.price_per_hour),
    (Series("pods-bound", "Pods bound", "pods", "#26b"), lambda p: p.pods_bound),
    (Series("pods-pending", "Pods pending", "pods", "#c33"), lambda p: p.pods_pending),
)


def render_html(
    report: Report, title: str = "nodewright simulate", what_if: WhatIf | None = None
) -> str:
    """The page for ``report`` (and the what-if of a cluster snapshot, when there is one)."""
    bound = sum(1 for p in report.pods if p.node)
    unpriced = sum(1 for n in report.nodes if n.price_per_hour is None)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
        *(_what_if(what_if) if what_if is not None else []),
        "<h2>The run</h2>",
        '<p class="summary" id="run-summary">',
        f"<span>{len(report.nodes)} node(s) at the end</span>",
        f"<span>${report.total_price_per_hour:.4f}/h"
        + (MODELLED_MARK if report.total_price_modelled else "")
        + (f" ({unpriced} not priced, left out)" if unpriced else "")
        + "</span>",
        f"<span>{bound} pod(s) bound, {len(report.pending)} pending</span>",
        f"<span>{escape(duration_label(report.simulated_seconds))} simulated</span>",
        f'<span id="dollar-hours">${report.dollar_hours:.4f} spent on nodes</span>',
        "</p>",
        *(f'<p class="note">{escape(note)}</p>' for note in report.notes),
        "<h2>Timeline</h2>",
        *(_chart(report, series, value) for series, value in _CHARTS),
        "<h2>Nodes at the end</h2>",
        table(
            "nodes",
            ("Node", "NodePool", "Instance type", "Zone", "Capacity", "$/h", "Pods", "Since"),
            [
                (
                    Names([n.name]),
                    n.node_pool or "-",
                    n.instance_type or "-",
                    n.zone or "-",
                    n.capacity_type or "-",
                    Number(_price(n.price_per_hour, n.price_modelled)),
                    Number(str(len(n.pods))),
                    "existing" if n.existing else _offset(n.launched_at),
                )
                for n in report.nodes
            ],
        ),
        "<h2>Nodes removed during the run</h2>",
        table(
            "removed-nodes",
            ("Node", "NodePool", "Instance type", "Capacity", "$/h", "Launched", "Removed", "Why"),
            [
                (
                    Names([r.name]),
                    r.node_pool or "-",
                    r.instance_type or "-",
                    r.capacity_type or "-",
                    Number(_price(r.price_per_hour)),
                    "existing" if r.existing else _offset(r.launched_at),
                    _offset(r.removed_at),
                    Prose(
                        (r.disruption_reason or "deleted")
                        + (f" ({r.disruption})" if r.disruption else "")
                    ),
                )
                for r in report.removed_nodes
            ],
        ),
        "<h2>Pending pods</h2>",
        table(
            "pending",
            ("Pod", "Reason"),
            [(Names([f"{p.namespace}/{p.name}"]), Prose(p.reason or "-")) for p in report.pending],
        ),
        "<h2>Events</h2>",
        table(
            "events",
            ("Time", "Type", "Reason", "Object", "Message", "Count"),
            [
                (
                    (e.get("time") or "-")[11:19] or "-",
                    e["type"],
                    e["reason"],
                    Names([e["object"]]),
                    Prose(e["message"]),
                    Number(e["count"]),
                )
                for e in report.events
            ],
        ),
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _what_if(what_if: WhatIf) -> list[str]:
    current, projected = what_if.current_price_per_hour, what_if.projected_price_per_hour
    saved = current - projected
    modelled = what_if.current_price_modelled or what_if.projected_price_modelled
    mark = MODELLED_MARK if modelled else ""
    if saved >= NEGLIGIBLE:
        share = f" ({saved / current:.0%})" if current > 0 else ""
        verdict = f'<span class="saves">Saves ${saved:,.2f}/h{mark}{share}</span>'
    elif saved <= -NEGLIGIBLE:
        verdict = f'<span class="costs">Costs ${-saved:,.2f}/h{mark} more</span>'
    else:
        verdict = "No change in cost"
    month = (
        f' <span class="month">about ${abs(saved) * HOURS_PER_MONTH:,.0f} a month</span>'
        if abs(saved) >= NEGLIGIBLE
        else ""
    )
    lines = saving_lines(what_if)
    unpriced = what_if.unpriced
    return [
        f"<h2>What-if for {escape(what_if.source)}</h2>",
        '<section class="headline" id="what-if">',
        f'<div class="big">{verdict}{month}</div>',
        '<p id="what-if-totals">'
        f"now: {len(what_if.current)} node(s), "
        f"${current:.4f}/h{MODELLED_MARK if what_if.current_price_modelled else ''}"
        f" &rarr; projected: {len(what_if.projected)} node(s), "
        f"${projected:.4f}/h{MODELLED_MARK if what_if.projected_price_modelled else ''}</p>",
        *(
            [
                '<ul class="parts" id="what-if-parts">',
                *(
                    f'<li><span class="amount">{escape(amount)}</span>{escape(words)}</li>'
                    for amount, words in lines
                ),
                "</ul>",
            ]
            if lines
            else []
        ),
        *(
            [f"<p>{len(what_if.unplaced)} pod(s) could not be placed (pending pods below).</p>"]
            if what_if.unplaced
            else []
        ),
        *(
            [
                '<p class="note" id="what-if-unpriced">Not priced (no catalog offering), left '
                f"out of the totals: {escape(', '.join(unpriced))}</p>"
            ]
            if unpriced
            else []
        ),
        *(
            [f'<p class="note">{escape(MODELLED_NOTE)} (the provider\'s notes below say which)</p>']
            if what_if.any_price_modelled
            else []
        ),
        "</section>",
        "<h2>Existing nodes removed or replaced</h2>",
        table(
            "what-if-changes",
            (
                "Existing node",
                "NodePool",
                "Instance type",
                "Capacity",
                "$/h",
                "Action",
                "Why",
                "Replaced by",
            ),
            [
                (
                    Names([c.node.name]),
                    c.node.node_pool or "-",
                    c.node.instance_type or "-",
                    c.node.capacity_type or "-",
                    Number(_price(c.node.price_per_hour, c.node.price_modelled)),
                    c.action,
                    # Karpenter's word (Consolidation/Replace) follows from these two.
                    c.reason or "deleted",
                    Names(c.replaced_by) if c.replaced_by else "-",
                )
                for c in what_if.changes
            ],
        ),
        "<h2>New nodes</h2>",
        table(
            "what-if-added",
            ("New node", "NodePool", "Instance type", "Zone", "Capacity", "$/h", "Replaces"),
            [
                (
                    Names([n.name]),
                    n.node_pool or "-",
                    n.instance_type or "-",
                    n.zone or "-",
                    n.capacity_type or "-",
                    Number(_price(n.price_per_hour, n.price_modelled)),
                    Names(n.replaces) if n.replaces else "- (launched for pods)",
                )
                for n in what_if.added
            ],
        ),
    ]


def _price(price: float | None, modelled: bool = False) -> str:
    if price is None:
        return "not priced"
    return f"{price:.4f}" + (MODELLED_MARK if modelled else "")


def _offset(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return duration_label((moment - SIMULATION_EPOCH).total_seconds())


def _chart(report: Report, series: Series, value: Callable[[TimelinePoint], float]) -> str:
    """The step chart of ``value`` over the whole run's simulated time."""
    points = report.timeline
    start = SIMULATION_EPOCH
    span = max(
        report.simulated_seconds,
        (points[-1].at - start).total_seconds() if points else 0.0,
        1.0,
    )
    data = [(point.at, float(value(point))) for point in points]
    unpriced = sum(1 for n in report.nodes if n.price_per_hour is None)
    note = ""
    if data and not any(amount for _, amount in data):
        note = "none at any time"
    elif series.money and unpriced:
        note = f"{unpriced} node(s) not priced, left out"
    return step_chart(series, start, span, data, note)
