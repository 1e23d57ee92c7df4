"""Charts as inline SVG, drawn on the server: they show without JavaScript, need no network and
no build step, and print. Each chart is an ``<svg role="img">`` with a ``<title>`` and a
``<desc>`` for screen readers; the pages put the same numbers in a table beside it.

Two shapes: :func:`line_chart` (series of points against a linear x axis, with horizontal
reference lines such as a bound or an SLO, and series drawn as markers only, such as the Plan's
chosen token buckets on an r-b curve) and :func:`bar_chart` (groups of bars per category, with
reference lines). Every text is XML-escaped; non-finite values are left out of the scales and
the drawing.

>>> svg = line_chart("t", [Series("p99", [(0, 1.0), (1, 2.0)])], x_label="x", y_label="y")
>>> svg.startswith("<svg") and "p99" in svg and "<polyline" in svg
True
>>> nice_ticks(0, 0.0093)
[0.0, 0.002, 0.004, 0.006, 0.008, 0.01]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

#: Series colours (the Okabe–Ito palette, distinguishable with colour-blindness) and dashes, so
#: that the series differ without colour too.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 4")
#: Reference lines' colours (bound, SLO, ...).
REF_COLOURS = ("#7a1f1f", "#444444", "#6a3d9a")
#: The legend's column on the right of the plot (px) and the characters a label keeps.
LEGEND_PX = 210
LEGEND_CHARS = 32


@dataclass(frozen=True)
class Series:
    """One series: its label and ``(x, y)`` points; ``markers`` draws points only (no line)."""

    label: str
    points: Sequence[tuple[float, float]]
    markers: bool = False


@dataclass(frozen=True)
class Ref:
    """A horizontal reference line at ``y`` (a bound, an SLO)."""

    label: str
    y: float


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[low, high]`` (steps of 1, 2 or 5 × 10^k)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        high = low + 1.0
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    start = math.floor(low / step) * step
    ticks, k = [], 0
    while True:
        t = start + k * step
        ticks.append(round(t, 12))
        if t >= high - 1e-12 * step:
            return ticks
        k += 1


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def si_seconds(v: float) -> str:
    """A duration for an axis: ``12 ms``, ``1.5 s``, ``250 µs``."""
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1:
        return f"{v:.3g} s"
    if a >= 1e-3:
        return f"{v * 1e3:.3g} ms"
    return f"{v * 1e6:.3g} µs"


def plain(v: float) -> str:
    return f"{v:.3g}"


class _Frame:
    """The plotting area of a chart of ``width`` × ``height`` pixels and its scales."""

    #: Margins (px); the right one holds the legend.
    LEFT, RIGHT, TOP, BOTTOM = 72, LEGEND_PX + 16, 34, 48

    def __init__(
        self,
        width: int,
        height: int,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        log_y: bool = False,
    ) -> None:
        self.width, self.height, self.log_y = width, height, log_y
        self.x_ticks = nice_ticks(min(xs, default=0.0), max(xs, default=1.0))
        self.x0, self.x1 = self.x_ticks[0], self.x_ticks[-1]
        positive = [y for y in ys if y > 0]
        if log_y and positive:
            low = math.floor(math.log10(min(positive)))
            high = max(low + 1, math.ceil(math.log10(max(positive))))
            self.y_ticks = [10.0**k for k in range(low, high + 1)]
        else:
            self.log_y = False
            self.y_ticks = nice_ticks(min(0.0, *ys) if ys else 0.0, max(ys, default=1.0))
        self.y0, self.y1 = self._t(self.y_ticks[0]), self._t(self.y_ticks[-1])

    def _t(self, y: float) -> float:
        return math.log10(y) if self.log_y else y

    def px(self, x: float) -> float:
        span = self.width - self.LEFT - self.RIGHT
        return self.LEFT + (x - self.x0) / ((self.x1 - self.x0) or 1.0) * span

    def py(self, y: float) -> float:
        """The pixel row of ``y`` (on a log scale, a non-positive ``y`` sits on the axis)."""
        if self.log_y and y <= 0:
            return float(self.height - self.BOTTOM)
        span = self.height - self.TOP - self.BOTTOM
        t = self._t(y)
        return self.height - self.BOTTOM - (t - self.y0) / ((self.y1 - self.y0) or 1.0) * span

    @property
    def base(self) -> float:
        """The pixel row bars grow from: zero, or the axis on a log scale."""
        return (
            float(self.height - self.BOTTOM) if self.log_y else self.py(max(0.0, self.y_ticks[0]))
        )

    def axes(
        self,
        x_label: str,
        y_label: str,
        x_format: Callable[[float], str] | None,
        y_format: Callable[[float], str],
    ) -> list[str]:
        out = []
        bottom, top = self.height - self.BOTTOM, self.TOP
        for t in self.y_ticks:
            y = self.py(t)
            out.append(
                f'<line x1="{self.LEFT}" x2="{self.width - self.RIGHT}" y1="{y:.1f}" '
                f'y2="{y:.1f}" class="grid"/>'
                f'<text x="{self.LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                f"{escape(y_format(t))}</text>"
            )
        if x_format is not None:
            for t in self.x_ticks:
                x = self.px(t)
                out.append(
                    f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 4}" '
                    f'class="axis"/><text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle">'
                    f"{escape(x_format(t))}</text>"
                )
        out.append(
            f'<line x1="{self.LEFT}" x2="{self.width - self.RIGHT}" y1="{bottom}" '
            f'y2="{bottom}" class="axis"/><line x1="{self.LEFT}" x2="{self.LEFT}" y1="{top}" '
            f'y2="{bottom}" class="axis"/>'
            f'<text x="{(self.LEFT + self.width - self.RIGHT) / 2:.1f}" y="{self.height - 8}" '
            f'text-anchor="middle" class="label">{escape(x_label)}</text>'
            f'<text x="14" y="{(top + bottom) / 2:.1f}" text-anchor="middle" class="label" '
            f'transform="rotate(-90 14 {(top + bottom) / 2:.1f})">{escape(y_label)}</text>'
        )
        return out


def _svg(width: int, height: int, title: str, desc: str, body: list[str], key: str) -> str:
    ident = "chart-" + "".join(c if c.isalnum() else "-" for c in key)[:60]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-labelledby="{ident}-t {ident}-d">'
        f'<title id="{ident}-t">{escape(title)}</title><desc id="{ident}-d">{escape(desc)}</desc>'
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" class="title">{escape(title)}'
        f"</text>{''.join(body)}</svg>"
    )


def _legend(frame: _Frame, items: list[tuple[str, str, str, bool]]) -> list[str]:
    """Legend entries (label, colour, dash, marker) in the right margin, one per line (a label
    longer than :data:`LEGEND_CHARS` is cut, whole in the chart's description)."""
    out = []
    x = frame.width - LEGEND_PX
    for i, (label, colour, dash, marker) in enumerate(items):
        y = frame.TOP + 8 + 14 * i
        glyph = (
            f'<rect x="{x + 4}" y="{y - 10}" width="12" height="10" fill="{colour}"/>'
            if dash == "box"
            else f'<circle cx="{x + 10}" cy="{y - 4}" r="3.5" fill="{colour}"/>'
            if marker
            else f'<line x1="{x}" x2="{x + 20}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" '
            f'stroke-width="2" stroke-dasharray="{dash}"/>'
        )
        shown = label if len(label) <= LEGEND_CHARS else label[: LEGEND_CHARS - 1] + "…"
        out.append(f'{glyph}<text x="{x + 26}" y="{y}" class="legend">{escape(shown)}</text>')
    return out


def line_chart(
    title: str,
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    refs: Sequence[Ref] = (),
    x_format: Callable[[float], str] = plain,
    y_format: Callable[[float], str] = plain,
    width: int = 760,
    height: int = 320,
    log_y: bool = False,
) -> str:
    """An SVG line chart of ``series`` with reference lines ``refs`` (module docstring);
    ``log_y`` draws the y axis on a log scale (decades)."""
    pts = [(x, y) for s in series for x, y in s.points if _finite(x) and _finite(y)]
    ys = [y for _, y in pts] + [r.y for r in refs if _finite(r.y)]
    frame = _Frame(width, height, [x for x, _ in pts], ys, log_y=log_y)
    body = frame.axes(x_label, y_label, x_format, y_format)
    legend: list[tuple[str, str, str, bool]] = []
    for i, r in enumerate(refs):
        if not _finite(r.y):
            continue
        colour = REF_COLOURS[i % len(REF_COLOURS)]
        y = frame.py(r.y)
        body.append(
            f'<line x1="{frame.LEFT}" x2="{width - frame.RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="4 4" class="ref"/>'
        )
        legend.append((f"{r.label} ({y_format(r.y)})", colour, "4 4", False))
    for i, s in enumerate(series):
        colour, dash = COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]
        good = [(frame.px(x), frame.py(y)) for x, y in s.points if _finite(x) and _finite(y)]
        if not s.markers and len(good) > 1:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in good)
            body.append(
                f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2" '
                f'stroke-dasharray="{dash}" class="series" data-series="{escape(s.label)}"/>'
            )
        if s.markers or len(good) <= 12:
            body.extend(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{4 if s.markers else 2.5}" '
                f'fill="{colour}" class="point" data-series="{escape(s.label)}"/>'
                for x, y in good
            )
        legend.append((s.label, colour, dash, s.markers))
    body.extend(_legend(frame, legend))
    desc = "; ".join(f"{s.label}: {len(s.points)} points" for s in series) + "".join(
        f"; {r.label} at {y_format(r.y)}" for r in refs if _finite(r.y)
    )
    return _svg(width, height, title, desc, body, title)


def bar_chart(
    title: str,
    categories: Sequence[str],
    groups: Sequence[tuple[str, Sequence[float | None]]],
    *,
    y_label: str,
    refs: Sequence[Ref] = (),
    y_format: Callable[[float], str] = plain,
    width: int = 760,
    height: int = 320,
    log_y: bool = False,
) -> str:
    """An SVG bar chart: for each of ``categories`` one bar per group ``(label, values)``
    (a value None or non-finite draws no bar), with reference lines ``refs``; ``log_y`` draws
    the y axis on a log scale (decades: latencies of microseconds beside seconds)."""
    ys = [v for _, vs in groups for v in vs if v is not None and _finite(v)]
    ys += [r.y for r in refs if _finite(r.y)]
    frame = _Frame(width, height, [0.0, 1.0], ys, log_y=log_y)
    body = frame.axes("", y_label, None, y_format)
    span = width - frame.LEFT - frame.RIGHT
    slot = span / max(1, len(categories))
    bar = slot * 0.8 / max(1, len(groups))
    base = frame.base
    for c, name in enumerate(categories):
        left = frame.LEFT + c * slot + slot * 0.1
        body.append(
            f'<text x="{left + slot * 0.4:.1f}" y="{height - frame.BOTTOM + 16}" '
            f'text-anchor="middle">{escape(name)}</text>'
        )
        for g, (label, values) in enumerate(groups):
            v = values[c] if c < len(values) else None
            if v is None or not _finite(v):
                continue
            top = frame.py(v)
            body.append(
                f'<rect x="{left + g * bar:.1f}" y="{min(top, base):.1f}" width="{bar * 0.92:.1f}" '
                f'height="{abs(base - top):.1f}" fill="{COLOURS[g % len(COLOURS)]}" class="bar" '
                f'data-series="{escape(label)}"><title>{escape(name)}, {escape(label)}: '
                f"{escape(y_format(v))}</title></rect>"
            )
    legend = [
        (label, COLOURS[g % len(COLOURS)], "box", False) for g, (label, _) in enumerate(groups)
    ]
    for i, r in enumerate(refs):
        if _finite(r.y):
            colour = REF_COLOURS[i % len(REF_COLOURS)]
            y = frame.py(r.y)
            body.append(
                f'<line x1="{frame.LEFT}" x2="{width - frame.RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="4 4" class="ref"/>'
            )
            legend.append((f"{r.label} ({y_format(r.y)})", colour, "4 4", False))
    body.extend(_legend(frame, legend))
    desc = f"{len(categories)} categories, {len(groups)} bars each: " + ", ".join(
        label for label, _ in groups
    )
    return _svg(width, height, title, desc, body, title)
