"""Line charts as inline SVG, drawn in Python: readable without JavaScript and in grey print.

Each series differs by colour, dash and marker, so that a black-and-white printout still tells them
apart. Each series' group carries its exact numbers (`data-steps`, `data-values`, Python's float
`repr`, `none` where a step has no value) so that a reader or a test can check what was drawn.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .series import Points

WIDTH, HEIGHT = 460, 250
LEFT, RIGHT, TOP, BOTTOM = 62, 14, 34, 42
MARKERS_UP_TO = 60  # points per series; beyond that the markers would hide the line


@dataclass(frozen=True)
class Style:
    colour: str
    dash: str  # SVG stroke-dasharray; "" is solid
    marker: str  # "circle" | "square" | "triangle"


ORIGINAL = Style("#b3261e", "", "circle")
FIXED = Style("#1f5fa8", "7 4", "square")


@dataclass(frozen=True)
class Line:
    label: str
    points: Points
    style: Style


def nice_ticks(low: float, high: float, count: int = 5) -> List[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) covering [low, high]."""
    span = high - low
    if span <= 0 or not math.isfinite(span):
        return [low]
    raw = span / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    # Counted by index, not by adding the step: near 1e16 adding 1 changes nothing.
    return [round(i * step, 12) for i in range(first, min(last, first + 4 * count) + 1)]


def _domain(values: Sequence[float], zero: bool) -> Tuple[float, float, List[float]]:
    """The value range of an axis and its ticks: the data (and 0 if asked), widened to the ticks around it."""
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if zero:
        low, high = min(low, 0.0), max(high, 0.0)
    if high == low:
        pad = abs(high) * 0.1 or 1.0
        low, high = (low, high + pad) if zero and low == 0 else (low - pad, high + pad)
    ticks = nice_ticks(low, high, 6)
    if len(ticks) > 1:
        step = ticks[1] - ticks[0]
        # So that the outermost points sit on the grid: one tick below and above the data.
        if ticks[0] > low + step * 1e-9:
            ticks.insert(0, round(ticks[0] - step, 12))
        if ticks[-1] < high - step * 1e-9:
            ticks.append(round(ticks[-1] + step, 12))
        low, high = ticks[0], ticks[-1]
    return low, high, ticks


def _fmt(value: float, ticks: Sequence[float]) -> str:
    """A tick label with the digits that tell it from its neighbours (3 significant at least)."""
    if not value:
        return "0"
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 0.0
    digits = 3
    if step:
        digits = min(15, max(3, math.ceil(math.log10(max(abs(t) for t in ticks) / step)) + 1))
    return f"{value:.{digits}g}"


def _marker(style: Style, x: float, y: float) -> str:
    fill = f'fill="{style.colour}"'
    if style.marker == "square":
        return f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" {fill}/>'
    if style.marker == "triangle":
        return f'<path d="M{x:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 3:.1f} L{x - 4:.1f},{y + 3:.1f} Z" {fill}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.2" {fill}/>'


def _data(values: Sequence[Optional[float]]) -> str:
    return " ".join("none" if v is None else repr(float(v)) for v in values)


def line_chart(title: str, y_label: str, lines: Sequence[Line], x_label: str = "step",
               zero_based: bool = False, kind: str = "", caption: str = "") -> str:
    """A `<figure>` holding one SVG line chart: axes with ticks and labels, a legend, one group per line.

    `title` names the chart on its own (the SVG's title); `caption`, shown above it, defaults to it.
    """
    drawn = [line for line in lines if line.points]
    xs = [s for line in drawn for s in line.points.steps]
    ys = [v for line in drawn for v in line.points.values if v is not None and math.isfinite(v)]
    x_low, x_high = (min(xs), max(xs)) if xs else (0, 1)
    if x_low == x_high:
        x_low, x_high = x_low - 1, x_high + 1
    y_low, y_high, y_ticks = _domain(ys, zero_based)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(step: float) -> float:
        return LEFT + (step - x_low) / (x_high - x_low) * plot_w

    def py(value: float) -> float:
        return TOP + (y_high - value) / (y_high - y_low) * plot_h

    out: List[str] = [
        f'<svg class="chart" data-kind="{html.escape(kind)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'font-family="sans-serif" font-size="11">',
        f"<title>{html.escape(title)}</title>",
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888" stroke-width="1"/>',
    ]
    for tick in y_ticks:
        y = py(tick)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd" stroke-width="1"/>')
        out.append(f'<text x="{LEFT - 5}" y="{y + 4:.1f}" text-anchor="end">{_fmt(tick, y_ticks)}</text>')
    x_ticks = [t for t in nice_ticks(x_low, x_high, 6) if float(t).is_integer()] or [float(x_low)]
    for tick in x_ticks:
        x = px(tick)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + plot_h}" y2="{TOP + plot_h + 4}" stroke="#555"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{int(tick)}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">{html.escape(x_label)}</text>')
    out.append(f'<text transform="translate(13 {TOP + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f"{html.escape(y_label)}</text>")
    # Legend, above the plot: a short stroke in the series' style, its marker and its name.
    x = LEFT
    for line in lines:
        style = line.style
        dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
        out.append(f'<g class="legend"><line x1="{x}" x2="{x + 26}" y1="16" y2="16" stroke="{style.colour}" '
                   f'stroke-width="2.2"{dash}/>{_marker(style, x + 13, 16)}'
                   f'<text x="{x + 32}" y="20">{html.escape(line.label)}'
                   f'{"" if line.points else " (no data)"}</text></g>')
        x += 44 + 7 * len(line.label) + (50 if not line.points else 0)
    for line in lines:
        style = line.style
        dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
        out.append(f'<g class="series" data-series="{html.escape(line.label)}" '
                   f'data-steps="{" ".join(str(s) for s in line.points.steps)}" '
                   f'data-values="{_data(line.points.values)}">')
        # A value that is missing or not finite breaks the line there.
        runs: List[List[Tuple[float, float]]] = [[]]
        for step, value in zip(line.points.steps, line.points.values):
            if value is None or not math.isfinite(value):
                runs.append([])
                continue
            runs[-1].append((px(step), py(value)))
        for run in runs:
            if len(run) > 1:
                coords = " ".join(f"{a:.1f},{b:.1f}" for a, b in run)
                out.append(f'<polyline points="{coords}" fill="none" stroke="{style.colour}" stroke-width="2.2"'
                           f'{dash} stroke-linejoin="round"/>')
        points = [p for run in runs for p in run]
        if len(points) <= MARKERS_UP_TO:
            out.extend(_marker(style, a, b) for a, b in points)
        out.append("</g>")
    out.append("</svg>")
    return (f'<figure class="chart-box"><figcaption>{html.escape(caption or title)}</figcaption>'
            + "".join(out) + "</figure>")
