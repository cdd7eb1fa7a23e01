"""The web page's charts: one value of the run over simulated time, as an inline SVG step
chart that fills the page's width, with round axis ticks, gridlines, the unit, and the value
of every step on hover (an SVG ``title``: no script)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

#: The drawing's own units; the page scales it to its width, text with it.
WIDTH = 1000
HEIGHT = 180
_LEFT = 70
_RIGHT = 16
_TOP = 12
_BOTTOM = 40
#: Round time steps for the time axis, in seconds.
_TIME_STEPS = (
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    604800,
)


@dataclass(frozen=True)
class Series:
    """What one chart shows."""

    name: str
    title: str
    #: The values' unit, written on the axis (``nodes``, ``$/h``, ``pods``).
    unit: str
    colour: str
    #: Whole numbers (counts), or money.
    money: bool = False


def nice_ticks(top: float, *, whole: bool, count: int = 5) -> list[float]:
    """Round values from 0 up to at least ``top``, about ``count`` of them: steps of 1, 2,
    2.5 or 5 times a power of ten (whole numbers only for counts)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if whole:
        step = max(1.0, math.ceil(step))
    steps = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(steps + 1)]


def time_ticks(span: float, count: int = 8) -> list[float]:
    """Round moments (seconds from the start) from 0 to ``span``, at most ``count`` + 1."""
    step = next((s for s in _TIME_STEPS if span / s <= count), _TIME_STEPS[-1])
    return [i * step for i in range(int(span // step) + 1)]


def duration_label(seconds: float) -> str:
    """``0``, ``45 s``, ``5 min``, ``1 h``, ``1 h 30 min``, ``2 d``: a round time tick."""
    whole = round(seconds)
    if whole == 0:
        return "0"
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, secs = divmod(whole, 60)
        return f"{minutes} min" + (f" {secs} s" if secs else "")
    if whole < 86400 or whole % 86400:
        hours, rest = divmod(whole, 3600)
        return f"{hours} h" + (f" {rest // 60} min" if rest // 60 else "")
    return f"{whole // 86400} d"


def clock_label(seconds: float) -> str:
    """``0:07:32``: a moment of the run, for hover text."""
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def value_label(value: float, series: Series, step: float = 0.0) -> str:
    """A value as the axis or the hover text writes it: ``12``, ``$1.25``, ``$0.0123``."""
    if not series.money:
        return f"{value:.0f}"
    if step:
        # As many decimals as the step needs, and cents below a dollar: $0.50, $2.5, $10.
        exact = next((d for d in range(5) if abs(round(step, d) - step) < 1e-9), 4)
        decimals = max(exact, 2 if step < 1 else 0)
    else:
        decimals = 4
    return f"${value:.{decimals}f}"


def step_chart(
    series: Series,
    start: datetime,
    span: float,
    points: Sequence[tuple[datetime, float]],
    note: str = "",
) -> str:
    """The chart of ``points`` (each value holds until the next point) over ``span`` seconds
    from ``start``, as a ``figure`` with an inline SVG; ``note`` is said beside its title."""
    if not points:
        return f'<p id="chart-{series.name}">{escape(series.title)}: no steps recorded.</p>'
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    span = max(span, 1.0)
    values = [value for _, value in points]
    ticks = nice_ticks(max(values), whole=not series.money)
    top = ticks[-1]
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0

    def x(seconds: float) -> float:
        return _LEFT + min(max(seconds, 0.0), span) / span * plot_w

    def y(value: float) -> float:
        return _TOP + plot_h - value / top * plot_h

    parts = [
        f'<figure id="chart-{series.name}" class="chart">',
        f"<figcaption>{escape(series.title)}"
        + (f' <span class="aside">{escape(note)}</span>' if note else "")
        + "</figcaption>",
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{escape(series.title)}">',
    ]
    for tick in ticks:
        parts.append(
            f'<line class="grid" x1="{_LEFT}" y1="{y(tick):.1f}" x2="{_LEFT + plot_w}" '
            f'y2="{y(tick):.1f}"/>'
            f'<text class="tick" x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">'
            f"{escape(value_label(tick, series, step))}</text>"
        )
    for moment in time_ticks(span):
        parts.append(
            f'<line class="grid" x1="{x(moment):.1f}" y1="{_TOP}" x2="{x(moment):.1f}" '
            f'y2="{_TOP + plot_h}"/>'
            f'<text class="tick" x="{x(moment):.1f}" y="{_TOP + plot_h + 16}" '
            f'text-anchor="middle">{escape(duration_label(moment))}</text>'
        )
    parts += [
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_LEFT + plot_w}" '
        f'y2="{_TOP + plot_h}"/>',
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}"/>',
        f'<text class="unit" x="14" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_TOP + plot_h / 2:.1f})">{escape(series.unit)}</text>',
        f'<text class="unit" x="{_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 4}" '
        'text-anchor="middle">simulated time</text>',
    ]
    # A step starts where the value changes (the run's points mark changes of anything).
    steps = [p for i, p in enumerate(points) if i == 0 or p[1] != points[i - 1][1]]
    offsets = [(moment - start).total_seconds() for moment, _ in steps]
    values = [value for _, value in steps]
    path = [f"M{x(offsets[0]):.1f},{y(values[0]):.1f}"]
    for offset, value in zip(offsets[1:], values[1:], strict=True):
        # The value holds until the next step changes it: a step chart.
        path += [f"H{x(offset):.1f}", f"V{y(value):.1f}"]
    path.append(f"H{x(span):.1f}")
    parts.append(
        f'<path d="{" ".join(path)}" fill="none" stroke="{series.colour}" stroke-width="2.5"/>'
    )
    # One band per step, carrying its value: hovering anywhere over the step shows it.
    ends = [*offsets[1:], span]
    for begin, end, value in zip(offsets, ends, values, strict=True):
        if end <= begin:
            continue
        shown = _with_unit(value, series)
        parts.append(
            f'<rect class="step" x="{x(begin):.1f}" y="{_TOP}" '
            f'width="{max(x(end) - x(begin), 0.5):.1f}" height="{plot_h}">'
            f"<title>{clock_label(begin)} to {clock_label(end)}: {escape(shown)}</title></rect>"
        )
    parts.append("</svg></figure>")
    return "".join(parts)


def _with_unit(value: float, series: Series) -> str:
    """``$0.3041/h``, ``1 node``, ``10 pods``: a value as hovering over it shows it."""
    if series.money:
        return f"{value_label(value, series)}/h"
    unit = series.unit[:-1] if value == 1 and series.unit.endswith("s") else series.unit
    return f"{value_label(value, series)} {unit}"
