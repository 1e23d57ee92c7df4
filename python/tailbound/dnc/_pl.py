"""Raw piecewise-linear arithmetic shared by the operators (not part of the public API).

A raw function is ``(xs, ys, tail)``: right-limit values at breakpoints ``xs`` (``xs[0] = 0``),
linear in between, slope ``tail`` after the last point. Unlike :class:`~tailbound.dnc.curves.Curve`
it may decrease or be negative (differences of curves).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

Raw = tuple[NDArray[np.float64], NDArray[np.float64], float]


def evaluate(raw: Raw, t: NDArray[np.float64]) -> NDArray[np.float64]:
    """Right-limit values of a raw function at ``t >= 0``."""
    xs, ys, tail = raw
    inside = np.interp(t, xs, ys)
    return np.where(t > xs[-1], ys[-1] + tail * (t - xs[-1]), inside)


def combine(f: Raw, g: Raw, op: Callable[[NDArray, NDArray], NDArray], *, split: bool) -> Raw:
    """``op(f, g)`` pointwise; ``split`` adds the points where ``f - g`` changes sign (for
    ``min``/``max``, where the result has a kink there)."""
    xs = np.union1d(f[0], g[0])
    if split:
        d = evaluate(f, xs) - evaluate(g, xs)
        extra = []
        for i in range(len(xs) - 1):
            if d[i] * d[i + 1] < 0:
                extra.append(xs[i] + (xs[i + 1] - xs[i]) * d[i] / (d[i] - d[i + 1]))
        dt = f[2] - g[2]
        if d[-1] * dt < 0:
            extra.append(xs[-1] - d[-1] / dt)
        xs = np.union1d(xs, np.array(extra, dtype=np.float64))
    probe = np.append(xs, xs[-1] + 1.0)
    values = op(evaluate(f, probe), evaluate(g, probe))
    return xs, values[:-1], float(values[-1] - values[-2])


def running_max(raw: Raw) -> Raw:
    """``t ↦ sup_{0 < s <= t} f(s)``: the non-decreasing closure."""
    xs, ys, tail = raw
    out_x = [float(xs[0])]
    out_y = [float(ys[0])]
    cur = float(ys[0])
    for i in range(len(xs) - 1):
        x0, x1, y0, y1 = float(xs[i]), float(xs[i + 1]), float(ys[i]), float(ys[i + 1])
        if y1 <= cur:
            out_x.append(x1)
            out_y.append(cur)
            continue
        if y0 < cur:  # rises through the current maximum inside the segment
            xc = x0 + (x1 - x0) * (cur - y0) / (y1 - y0)
            if xc > out_x[-1]:
                out_x.append(xc)
                out_y.append(cur)
        out_x.append(x1)
        out_y.append(y1)
        cur = y1
    last_y = float(ys[-1])
    if tail > 0 and last_y < cur:
        out_x.append(float(xs[-1]) + (cur - last_y) / tail)
        out_y.append(cur)
    x = np.array(out_x)
    y = np.array(out_y)
    keep = np.append(np.diff(x) > 0, True)
    return x[keep], y[keep], max(float(tail), 0.0)


def upper_inverse(raw: Raw, y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``sup{s >= 0 : f(s) <= y}`` for a non-decreasing raw function (``inf`` if never above)."""
    xs, ys, tail = raw
    y = np.asarray(y, dtype=np.float64)
    out = np.empty_like(y)
    idx = np.searchsorted(ys, y, side="right") - 1  # last point with ys <= y
    below = idx < 0
    out[below] = 0.0
    last = idx == len(xs) - 1
    if tail > 0:
        out[last] = xs[-1] + (y[last] - ys[-1]) / tail
    else:
        out[last] = np.inf
    mid = ~below & ~last
    i = idx[mid]
    slope = (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i])
    out[mid] = xs[i] + (y[mid] - ys[i]) / slope
    return out


def lower_inverse(raw: Raw, y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``inf{t >= 0 : f(t+) >= y}`` for a non-decreasing raw function (``inf`` if never)."""
    xs, ys, tail = raw
    y = np.asarray(y, dtype=np.float64)
    out = np.empty_like(y)
    idx = np.searchsorted(ys, y, side="left")  # first point with ys >= y
    first = idx == 0
    out[first] = 0.0
    beyond = idx == len(xs)
    if tail > 0:
        out[beyond] = xs[-1] + (y[beyond] - ys[-1]) / tail
    else:
        out[beyond] = np.inf
    mid = ~first & ~beyond
    i = idx[mid]
    slope = (ys[i] - ys[i - 1]) / (xs[i] - xs[i - 1])
    out[mid] = xs[i - 1] + (y[mid] - ys[i - 1]) / slope
    return out


class Partial:
    """A piecewise-linear function defined on ``[start, end]`` (``end`` may be ``inf``)."""

    __slots__ = ("end", "slopes", "start", "xs", "ys")

    def __init__(self, start: float, y0: float, lengths: list[float], slopes: list[float]):
        xs = [start]
        ys = [y0]
        for length, s in zip(lengths[:-1], slopes[:-1], strict=True):
            xs.append(xs[-1] + length)
            ys.append(ys[-1] + s * length)
        self.start = start
        self.xs = np.array(xs)
        self.ys = np.array(ys)
        self.slopes = slopes
        self.end = xs[-1] + lengths[-1]

    def at(self, t: float) -> float:
        if t < self.start - 1e-15 or t > self.end + 1e-15:
            return np.inf
        i = int(np.searchsorted(self.xs, t, side="right")) - 1
        i = max(i, 0)
        return float(self.ys[i] + self.slopes[i] * (t - self.xs[i]))

    def slope_after(self, t: float) -> float:
        i = max(int(np.searchsorted(self.xs, t, side="right")) - 1, 0)
        return self.slopes[i]


def lower_envelope(parts: list[Partial], points: NDArray[np.float64]) -> Raw:
    """The pointwise minimum of ``parts`` for ``t > 0``, as a raw function.

    ``points`` are every breakpoint and end of the parts; between consecutive points each part is
    linear or absent, and the envelope is refined at crossings until it is linear on each piece.
    """

    def env(t: float) -> tuple[float, int]:
        values = [p.at(t) for p in parts]
        k = int(np.argmin(values))
        return values[k], k

    def best_line(t0: float, t1: float) -> tuple[float, float]:
        """The part that is lowest just right of ``t0``: the lowest value at ``t0`` among the
        parts that continue past it, ties broken by the smaller slope (value at t0, slope)."""
        best: tuple[float, float] | None = None
        for p in parts:
            if p.start <= t0 < p.end:
                v, sl = p.at(t0), p.slope_after(t0)
                if (
                    best is None
                    or v < best[0] - 1e-12 * max(1.0, abs(v))
                    or (v <= best[0] + 1e-12 * max(1.0, abs(v)) and sl < best[1])
                ):
                    best = (v, sl)
        assert best is not None, "the convolution's parts cover every t > 0"
        return best

    def left_line(t1: float) -> tuple[float, float]:
        """The part that is lowest just left of ``t1``: lowest value at ``t1`` among the parts
        defined before it, ties broken by the larger slope (value at t1, slope)."""
        best: tuple[float, float] | None = None
        for p in parts:
            if p.start < t1 <= p.end:
                v = p.at(t1)
                i = max(int(np.searchsorted(p.xs, t1, side="left")) - 1, 0)
                sl = p.slopes[i]
                if (
                    best is None
                    or v < best[0] - 1e-12 * max(1.0, abs(v))
                    or (v <= best[0] + 1e-12 * max(1.0, abs(v)) and sl > best[1])
                ):
                    best = (v, sl)
        assert best is not None, "the convolution's parts cover every t > 0"
        return best

    pts = np.unique(points[np.isfinite(points)])
    pts = pts[pts >= 0]
    out_x: list[float] = []
    out_y: list[float] = []

    def emit(x: float, y: float) -> None:
        if not out_x or x > out_x[-1] + 1e-12:
            out_x.append(x)
            out_y.append(y)

    bounds = [*pts.tolist(), np.inf]
    for a, b in pairwise(bounds):
        stack = [(a, b)]
        while stack:
            t0, t1 = stack.pop()
            y0, s0 = best_line(t0, t1)
            emit(t0, min(y0, env(t0)[0]))  # the lowest part at t0 itself
            if not np.isfinite(t1):
                # refine the final ray: find where another ray overtakes
                best = None
                for p in parts:
                    if p.end == np.inf and p.at(t0) < np.inf:
                        vp, sp = p.at(t0), p.slope_after(t0 + 1.0)
                        if sp < s0 - 1e-15 and vp > y0:
                            xc = t0 + (vp - y0) / (s0 - sp)
                            if best is None or xc < best:
                                best = xc
                if best is not None and best > t0 + 1e-12:
                    stack.append((best, np.inf))
                    continue
                out_tail = s0
                return np.array(out_x), np.array(out_y), float(out_tail)
            # lowest just left of t1
            y1_line, s1 = left_line(t1)
            if abs(s1 - s0) <= 1e-12 * max(1.0, abs(s0)) or t1 - t0 < 1e-12:
                continue
            # crossing of the two lines
            xc = (y1_line - y0 - s1 * (t1 - t0)) / (s0 - s1) + t0
            if not (t0 < xc < t1):
                continue
            yc = y0 + s0 * (xc - t0)
            true_c, _ = env(xc)
            if true_c < yc - 1e-12 * max(1.0, abs(yc)):
                stack.append((xc, t1))
                stack.append((t0, xc))
            else:
                stack.append((xc, t1))
                emit(xc, yc)
    raise AssertionError("unreachable: the last interval is a ray")
