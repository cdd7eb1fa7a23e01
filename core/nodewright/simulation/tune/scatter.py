"""The tune page's chart: every variant that ran as a point of cost (x) against disruptions
(y), as an inline SVG that fills the page's width. The Pareto front is drawn as the staircase
joining its points, the winner and the baseline are labelled, a variant breaking a constraint
is a hollow point, and hovering over a point says which variants it is, what they measured
and what they set (an SVG ``title``: no script). Variants that measured the same are one
point, with a multiplication sign and their count beside it. A label goes where it covers no
point and no other label, when there is such a place beside its point."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

from nodewright.simulation.charts import nice_ticks
from nodewright.simulation.tune.ranking import Scored

#: The drawing's own units; the page scales it to its width, text with it.
WIDTH = 1000
HEIGHT = 340
_LEFT = 64
_RIGHT = 24
_TOP = 16
_BOTTOM = 48
_RADIUS = 7
#: About how wide a label's character is, in the drawing's units (bold 12 px text, drawn at
#: 1000 units across a page about 1200 px wide).
_CHAR_WIDTH = 7.0

FRONT_COLOUR = "#c2410c"
OTHER_COLOUR = "#2563a8"


@dataclass
class _Point:
    """Variants that measured the same cost and disruptions: one point."""

    cost: float
    disruptions: int
    members: list[Scored] = field(default_factory=list)

    @property
    def front(self) -> bool:
        return any(s.front for s in self.members)

    @property
    def feasible(self) -> bool:
        return any(s.feasible for s in self.members)


def cost_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round dollar values from at most ``low`` to at least ``high``, about ``count`` of
    them: steps of 1, 2, 2.5 or 5 times a power of ten. Costs close together are spread over
    the axis (it need not start at 0)."""
    if high - low < 1e-9:
        spread = max(abs(high) * 0.1, 0.0001)
        low, high = max(low - spread, 0.0), high + spread
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(first, last + 1)]


def money_label(value: float, step: float) -> str:
    """``$0.25``, ``$1.5``, ``$12``: as many decimals as the step needs, cents below $1."""
    exact = next((d for d in range(6) if abs(round(step, d) - step) < 1e-9), 5)
    decimals = max(exact, 2 if step < 1 else 0)
    return f"${value:.{decimals}f}"


def scatter(
    scored: Sequence[Scored],
    describe: Callable[[Scored], str],
    winner: int | None,
    axis_note: str,
) -> str:
    """The chart of the finished variants in ``scored``, as a ``figure``; ``describe`` gives
    each variant's hover line, ``winner`` is the winning variant's index, ``axis_note`` is
    said under the cost axis."""
    points = _points([s for s in scored if s.finished])
    if not points:
        return '<p id="chart-variants">No variant finished its run: nothing to plot.</p>'
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    x_ticks = cost_ticks(min(p.cost for p in points), max(p.cost for p in points))
    x_low, x_high = x_ticks[0], x_ticks[-1]
    x_step = x_ticks[1] - x_ticks[0]
    y_ticks = nice_ticks(max(p.disruptions for p in points), whole=True)
    y_high = y_ticks[-1]

    def x(cost: float) -> float:
        return _LEFT + (cost - x_low) / (x_high - x_low) * plot_w

    def y(disruptions: float) -> float:
        return _TOP + plot_h - disruptions / y_high * plot_h

    parts = [
        '<figure id="chart-variants" class="chart">',
        "<figcaption>What each variant cost, against the nodes it disrupted"
        ' <span class="aside">lower left is better; the line joins the Pareto front</span>'
        "</figcaption>",
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'role="img" aria-label="cost against disruptions, one point per variant">',
    ]
    for tick in y_ticks:
        parts.append(
            f'<line class="grid" x1="{_LEFT}" y1="{y(tick):.1f}" x2="{_LEFT + plot_w}" '
            f'y2="{y(tick):.1f}"/>'
            f'<text class="tick" x="{_LEFT - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">'
            f"{tick:.0f}</text>"
        )
    for tick in x_ticks:
        parts.append(
            f'<line class="grid" x1="{x(tick):.1f}" y1="{_TOP}" x2="{x(tick):.1f}" '
            f'y2="{_TOP + plot_h}"/>'
            f'<text class="tick" x="{x(tick):.1f}" y="{_TOP + plot_h + 16}" '
            f'text-anchor="middle">{escape(money_label(tick, x_step))}</text>'
        )
    parts += [
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_LEFT + plot_w}" '
        f'y2="{_TOP + plot_h}"/>',
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}"/>',
        f'<text class="unit" x="14" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_TOP + plot_h / 2:.1f})">disruptions</text>',
        f'<text class="unit" x="{_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" '
        f'text-anchor="middle">{escape(axis_note)}</text>',
    ]
    front = sorted((p for p in points if p.front), key=lambda p: p.cost)
    if len(front) > 1:
        # The staircase: from each point of the front across to the next one's cost, then
        # down to its disruptions. Nothing lies below and to the left of it.
        path = [f"M{x(front[0].cost):.1f},{y(front[0].disruptions):.1f}"]
        for point in front[1:]:
            path += [f"H{x(point.cost):.1f}", f"V{y(point.disruptions):.1f}"]
        parts.append(
            f'<path class="front-line" d="{" ".join(path)}" fill="none" '
            f'stroke="{FRONT_COLOUR}" stroke-width="2" stroke-dasharray="6 4"/>'
        )
    # The front last, so it is drawn over the others; labels after every point, each where it
    # covers no point and no other label.
    placed = [(p, x(p.cost), y(p.disruptions)) for p in sorted(points, key=lambda p: p.front)]
    for point, at_x, at_y in placed:
        parts.append(_marker(point, at_x, at_y, describe, winner))
    taken = [_Box.around(at_x, at_y, _RADIUS + 2) for _, at_x, at_y in placed]
    # The winner's label first, then the front's, so they get the best places.
    by_importance = sorted(
        placed,
        key=lambda each: (winner not in [s.index for s in each[0].members], not each[0].front),
    )
    for point, at_x, at_y in by_importance:
        words = _label(point, winner)
        if words:
            parts.append(_place(words, at_x, at_y, taken))
    parts.append("</svg></figure>")
    return "".join(parts)


def _points(scored: Sequence[Scored]) -> list[_Point]:
    by_place: dict[tuple[float, int], _Point] = {}
    for each in scored:
        place = (round(each.cost, 4), each.result.disruptions)
        by_place.setdefault(place, _Point(*place)).members.append(each)
    return list(by_place.values())


def _marker(
    point: _Point,
    at_x: float,
    at_y: float,
    describe: Callable[[Scored], str],
    winner: int | None,
) -> str:
    indexes = [s.index for s in point.members]
    classes = ["variant"]
    if point.front:
        classes.append("front")
    if not point.feasible:
        classes.append("infeasible")
    if winner in indexes:
        classes.append("winner")
    if 0 in indexes:
        classes.append("baseline")
    colour = FRONT_COLOUR if point.front else OTHER_COLOUR
    fill = colour if point.feasible else "#fff"
    title = "\n".join(describe(s) for s in point.members)
    shape = (
        f'<circle class="{" ".join(classes)}" cx="{at_x:.1f}" cy="{at_y:.1f}" r="{_RADIUS}" '
        f'fill="{fill}" stroke="{colour}" stroke-width="2" data-variants="'
        f'{" ".join(str(i) for i in indexes)}"><title>{escape(title)}</title></circle>'
    )
    if winner in indexes:
        shape = (
            f'<circle class="winner-ring" cx="{at_x:.1f}" cy="{at_y:.1f}" r="{_RADIUS + 5}" '
            f'fill="none" stroke="#176a2c" stroke-width="2.5"/>' + shape
        )
    return shape


def _label(point: _Point, winner: int | None) -> str:
    """``winner: 8``, ``as given``, the multiplication sign and how many variants measured
    the same (when more than one), or nothing."""
    indexes = [s.index for s in point.members]
    words = []
    if winner in indexes:
        words.append(f"winner: {winner}")
    if 0 in indexes:
        words.append("as given")
    if len(indexes) > 1:
        words.append(f"\u00d7{len(indexes)}")
    return ", ".join(words)


@dataclass(frozen=True)
class _Box:
    left: float
    top: float
    right: float
    bottom: float

    @classmethod
    def around(cls, at_x: float, at_y: float, half: float) -> _Box:
        return cls(at_x - half, at_y - half, at_x + half, at_y + half)

    def overlaps(self, other: _Box) -> bool:
        return not (
            self.right <= other.left
            or other.right <= self.left
            or self.bottom <= other.top
            or other.bottom <= self.top
        )

    def inside(self) -> bool:
        """Within the plot, clear of the axes' ticks (the top margin and the right one may
        hold a label)."""
        return (
            self.left >= _LEFT
            and self.top >= 0
            and self.right <= WIDTH
            and self.bottom <= HEIGHT - _BOTTOM
        )


def _place(words: str, at_x: float, at_y: float, taken: list[_Box]) -> str:
    """The label beside its point: right, left, below, above, then the four corners; the
    first place that covers no point or label and stays in the plot (else the first that
    stays in it)."""
    width = len(words) * _CHAR_WIDTH
    gap = _RADIUS + 9  # clear of the winner's ring
    below, above = at_y + gap + 10, at_y - gap
    places = (
        ("start", at_x + gap, at_y + 4),
        ("end", at_x - gap, at_y + 4),
        ("middle", at_x, below),
        ("middle", at_x, above),
        ("start", at_x + 4, below),
        ("end", at_x - 4, below),
        ("start", at_x + 4, above),
        ("end", at_x - 4, above),
    )
    chosen = None
    for anchor, text_x, text_y in places:
        left = {"start": text_x, "middle": text_x - width / 2, "end": text_x - width}[anchor]
        box = _Box(left, text_y - 11, left + width, text_y + 3)
        if not box.inside():
            continue
        if chosen is None:
            chosen = (anchor, text_x, text_y, box)
        if not any(box.overlaps(other) for other in taken):
            chosen = (anchor, text_x, text_y, box)
            break
    if chosen is None:  # a drawing too small for any place: right of the point
        chosen = ("start", at_x + gap, at_y + 4, _Box(at_x + gap, at_y - 7, at_x + gap, at_y + 7))
    anchor, text_x, text_y, box = chosen
    taken.append(box)
    return (
        f'<text class="label" x="{text_x:.1f}" y="{text_y:.1f}" text-anchor="{anchor}">'
        f"{escape(words)}</text>"
    )
