"""The report as one self-contained web page (``simulate --html FILE``): the timeline as
inline SVG charts, the node tables and the events. No script, no style sheet or font from the
network: the file opens anywhere, offline, and can be attached to a ticket."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from html import escape

from nodewright.clock import SIMULATION_EPOCH
from nodewright.simulation.report import Report
from nodewright.simulation.timeline import TimelinePoint
from nodewright.simulation.whatif import WhatIf

#: Rows a table shows at most (a 100,000-pod run has as many events): the page stays light.
MAX_ROWS = 2000
_WIDTH = 720
_HEIGHT = 160
_MARGIN_LEFT = 56
_MARGIN_BOTTOM = 22

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { text-align: left; padding: 2px 10px 2px 0; border-bottom: 1px solid #ddd; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.summary span { margin-right: 2em; }
svg text { font: 11px sans-serif; fill: #555; }
.note { color: #a40; }
"""


def render_html(
    report: Report, title: str = "nodewright simulate", what_if: WhatIf | None = None
) -> str:
    """The page for ``report`` (and the what-if of a cluster snapshot, when there is one)."""
    bound = sum(1 for p in report.pods if p.node)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        '<p class="summary">',
        f"<span>{len(report.nodes)} node(s) at the end</span>",
        f"<span>${report.total_price_per_hour:.4f}/h</span>",
        f"<span>{bound} pod(s) bound, {len(report.pending)} pending</span>",
        f"<span>{report.simulated_seconds:.0f} s simulated</span>",
        f'<span id="dollar-hours">${report.dollar_hours:.4f} spent on nodes</span>',
        "</p>",
        *(f'<p class="note">{escape(note)}</p>' for note in report.notes),
        *(_what_if(what_if) if what_if is not None else []),
        "<h2>Timeline</h2>",
        _chart("nodes", "Nodes", report, lambda p: sum(n for _, n in p.nodes), "#2a6"),
        _chart("price", "$/h", report, lambda p: p.price_per_hour, "#b52"),
        _chart("pods-bound", "Pods bound", report, lambda p: p.pods_bound, "#26b"),
        _chart("pods-pending", "Pods pending", report, lambda p: p.pods_pending, "#c33"),
        "<h2>Nodes at the end</h2>",
        _table(
            "nodes",
            ("Node", "NodePool", "Instance type", "Zone", "Capacity", "$/h", "Pods"),
            [
                (
                    n.name,
                    n.node_pool or "-",
                    n.instance_type or "-",
                    n.zone or "-",
                    n.capacity_type or "-",
                    f"{n.price_per_hour:.4f}" if n.price_per_hour is not None else "-",
                    str(len(n.pods)),
                )
                for n in report.nodes
            ],
        ),
        "<h2>Nodes removed during the run</h2>",
        _table(
            "removed-nodes",
            ("Node", "NodePool", "Instance type", "Capacity", "$/h", "Launched", "Removed", "Why"),
            [
                (
                    r.name,
                    r.node_pool or "-",
                    r.instance_type or "-",
                    r.capacity_type or "-",
                    f"{r.price_per_hour:.4f}" if r.price_per_hour is not None else "-",
                    _offset(r.launched_at),
                    _offset(r.removed_at),
                    (r.disruption_reason or "deleted")
                    + (f" ({r.disruption})" if r.disruption else ""),
                )
                for r in report.removed_nodes
            ],
        ),
        "<h2>Pending pods</h2>",
        _table(
            "pending",
            ("Pod", "Reason"),
            [(f"{p.namespace}/{p.name}", p.reason or "-") for p in report.pending],
        ),
        "<h2>Events</h2>",
        _table(
            "events",
            ("Time", "Type", "Reason", "Object", "Message", "Count"),
            [
                (
                    (e.get("time") or "-")[11:19] or "-",
                    e["type"],
                    e["reason"],
                    e["object"],
                    e["message"],
                    e["count"],
                )
                for e in report.events
            ],
        ),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _what_if(what_if: WhatIf) -> list[str]:
    current, projected = what_if.current_price_per_hour, what_if.projected_price_per_hour
    return [
        f"<h2>What-if for {escape(what_if.source)}</h2>",
        '<p class="summary" id="what-if">',
        f"<span>now: {len(what_if.current)} node(s), ${current:.4f}/h</span>",
        f"<span>projected: {len(what_if.projected)} node(s), ${projected:.4f}/h</span>",
        f"<span>{len(what_if.unplaced)} pod(s) not placed</span>",
        "</p>",
        _table(
            "what-if-changes",
            ("Existing node", "NodePool", "Instance type", "Capacity", "$/h", "Action", "Why"),
            [
                (
                    c.node.name,
                    c.node.node_pool or "-",
                    c.node.instance_type or "-",
                    c.node.capacity_type or "-",
                    f"{c.node.price_per_hour:.4f}" if c.node.price_per_hour is not None else "-",
                    c.action,
                    (c.reason or "deleted") + (f" ({c.disruption})" if c.disruption else ""),
                )
                for c in what_if.changes
            ],
        ),
    ]


def _offset(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return f"{(moment - SIMULATION_EPOCH).total_seconds():.0f} s"


def _table(name: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return f'<p id="{name}">None.</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows[:MAX_ROWS]
    )
    more = (
        f"<p>{len(rows) - MAX_ROWS} more row(s) not shown; the JSON report has them all.</p>"
        if len(rows) > MAX_ROWS
        else ""
    )
    return f'<table id="{name}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}'


def _chart(
    name: str,
    label: str,
    report: Report,
    value: Callable[[TimelinePoint], float],
    colour: str,
) -> str:
    """A step chart of ``value`` over the whole run's simulated time, as inline SVG."""
    plot_w, plot_h = _WIDTH - _MARGIN_LEFT - 8, _HEIGHT - _MARGIN_BOTTOM - 8
    points = report.timeline
    if not points:
        return f'<p id="chart-{name}">{escape(label)}: no steps recorded.</p>'
    start = SIMULATION_EPOCH
    span = max(report.simulated_seconds, (points[-1].at - start).total_seconds(), 1.0)
    values = [float(value(p)) for p in points]
    top = max(*values, 1e-9)

    def x(point: TimelinePoint) -> float:
        return _MARGIN_LEFT + (point.at - start).total_seconds() / span * plot_w

    def y(amount: float) -> float:
        return 8 + plot_h - amount / top * plot_h

    path = [f"M{x(points[0]):.1f},{y(values[0]):.1f}"]
    for point, amount in zip(points[1:], values[1:], strict=True):
        # The value holds until the next step changes it: a step chart.
        path += [f"H{x(point):.1f}", f"V{y(amount):.1f}"]
    path.append(f"H{_MARGIN_LEFT + plot_w:.1f}")
    shown_top = f"{top:.4f}" if top < 10 and top != int(top) else f"{top:.0f}"
    return "".join(
        [
            f'<figure id="chart-{name}"><figcaption>{escape(label)}</figcaption>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" ',
            f'viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="{escape(label)}">',
            f'<line x1="{_MARGIN_LEFT}" y1="{8 + plot_h}" x2="{_MARGIN_LEFT + plot_w}" ',
            f'y2="{8 + plot_h}" stroke="#999"/>',
            f'<line x1="{_MARGIN_LEFT}" y1="8" x2="{_MARGIN_LEFT}" y2="{8 + plot_h}" ',
            'stroke="#999"/>',
            f'<text x="{_MARGIN_LEFT - 4}" y="14" text-anchor="end">{shown_top}</text>',
            f'<text x="{_MARGIN_LEFT - 4}" y="{8 + plot_h}" text-anchor="end">0</text>',
            f'<text x="{_MARGIN_LEFT}" y="{_HEIGHT - 4}">0 s</text>',
            f'<text x="{_MARGIN_LEFT + plot_w}" y="{_HEIGHT - 4}" text-anchor="end">',
            f"{span:.0f} s</text>",
            f'<path d="{" ".join(path)}" fill="none" stroke="{colour}" stroke-width="2"/>',
            "</svg></figure>",
        ]
    )
