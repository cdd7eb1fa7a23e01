"""What nodewright's web pages share (``simulate --html``, ``tune --html``): the style sheet,
written into each page, and tables whose cells say how they lay out: names never broken,
figures right-aligned, prose the only text that wraps."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

#: Rows a table shows at most (a 100,000-pod run has as many events): the page stays light.
MAX_ROWS = 2000

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
main { max-width: 1400px; margin: 0 auto; padding: 1.5em 2em 3em; }
h1 { font-size: 1.5em; margin: 0 0 .6em; } h2 { font-size: 1.15em; margin: 1.8em 0 .4em; }
.headline { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 1em 1.4em; }
.headline .big { font-size: 2em; font-weight: 600; }
.headline .saves { color: #176a2c; } .headline .costs { color: #a3271a; }
.headline .month { font-size: .5em; font-weight: 400; color: #555; }
.parts { list-style: none; padding: 0; margin: .6em 0; }
.parts li { padding: 1px 0; }
.parts .amount { display: inline-block; min-width: 9em; font-variant-numeric: tabular-nums; }
.summary span { margin-right: 2em; white-space: nowrap; }
.note { color: #8a4b00; margin: .3em 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .4em 0; background: #fff; }
table { font-size: 14px; }
th, td { text-align: left; padding: 3px 12px 3px 6px; border-bottom: 1px solid #e3e3e3;
         vertical-align: top; white-space: nowrap; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.prose { white-space: normal; min-width: 16em; }
td.setting { white-space: normal; }
td.name span { display: block; }
.chart { margin: 1.2em 0; } .chart figcaption { font-weight: 600; }
.chart .aside { font-weight: 400; color: #555; margin-left: 1em; }
.chart svg { width: 100%; height: auto; display: block; background: #fff; }
svg text { font: 12px system-ui, sans-serif; fill: #444; }
svg .unit { fill: #222; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; }
svg .axis { stroke: #888; stroke-width: 1; }
svg .step { fill: transparent; }
svg .step:hover { fill: rgba(40, 90, 160, .12); }
"""


class Names(list[str]):
    """A cell of names (nodes, pods): never broken inside a name, one name a line."""


class Number(str):
    """A cell of a figure: right-aligned."""

    __slots__ = ()


class Prose(str):
    """A cell of sentences, which may wrap (every other cell keeps to one line)."""

    __slots__ = ()


class Setting(str):
    """A cell of a value someone chose (``[m5, c5, r5]``): it may wrap between words."""

    __slots__ = ()


def _cell(cell: str | Sequence[str]) -> str:
    if isinstance(cell, Names):
        return '<td class="name">' + "".join(f"<span>{escape(n)}</span>" for n in cell) + "</td>"
    if isinstance(cell, Number):
        return f'<td class="num">{escape(cell)}</td>'
    if isinstance(cell, Setting):
        return f'<td class="setting">{escape(cell)}</td>'
    if isinstance(cell, Prose):
        return f'<td class="prose">{escape(cell)}</td>'
    assert isinstance(cell, str)
    return f"<td>{escape(cell)}</td>"


def table(name: str, header: Sequence[str], rows: Sequence[Sequence[str | Sequence[str]]]) -> str:
    """The table ``name`` (its id), at most :data:`MAX_ROWS` rows; ``None.`` when empty."""
    if not rows:
        return f'<p id="{name}">None.</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(_cell(cell) for cell in row) + "</tr>" for row in rows[:MAX_ROWS]
    )
    more = (
        f"<p>{len(rows) - MAX_ROWS} more row(s) not shown; the JSON report has them all.</p>"
        if len(rows) > MAX_ROWS
        else ""
    )
    return (
        f'<div class="scroll"><table id="{name}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>{more}"
    )
