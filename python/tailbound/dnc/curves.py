"""Piecewise-linear curves of deterministic network calculus as immutable values.

A :class:`Curve` is a non-decreasing function of time ``t >= 0`` (seconds) whose values are work
(seconds of service at a stage, thesis §2.3.2; any unit works as long as arrival and service
agree). Conventionally ``f(0) = 0``; for ``t > 0`` the curve is the linear interpolation of the
points ``(xs[i], ys[i])`` with ``xs[0] = 0`` (so ``ys[0] = f(0+)``, the burst of an arrival
curve) and continues with slope ``tail`` after the last point.

Shapes with closed forms have their own types so operators can take fast paths:
:class:`TokenBucket` ``α(t) = r t + b`` (thesis §3.2.3), :class:`RateLatency`
``β(t) = R (t − T)+`` (Le Boudec & Thiran §1.4). :func:`token_bucket_min` builds the concave
arrival curve of several buckets (a workload's r-b curve read as an arrival curve, thesis §3.2.3:
``α(t) = min_i (r_i t + b_i)``) and :func:`convex_service` a convex service curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tailbound.dnc import _pl

_TOL = 1e-12


def _fmt(v: float) -> str:
    return f"{v:.6g}"


class Curve:
    """A non-decreasing piecewise-linear curve: points ``(xs, ys)`` for ``t > 0``, then ``tail``.

    Examples
    --------
    >>> f = Curve([0.0, 2.0], [1.0, 3.0], 0.5)
    >>> f(np.array([0.0, 1.0, 2.0, 4.0])).tolist()
    [0.0, 2.0, 3.0, 4.0]
    >>> f
    f(t) = 1 + 1·t on (0, 2]; 3 + 0.5·(t − 2) on (2, ∞)
    """

    __slots__ = ("tail", "xs", "ys")
    xs: NDArray[np.float64]
    ys: NDArray[np.float64]
    tail: float

    def __init__(self, xs: ArrayLike, ys: ArrayLike, tail: float) -> None:
        x = np.array(xs, dtype=np.float64).reshape(-1)
        y = np.array(ys, dtype=np.float64).reshape(-1)
        if x.shape != y.shape or x.shape[0] == 0:
            raise ValueError("a curve needs equally long, non-empty xs and ys")
        if x[0] != 0.0 or np.any(np.diff(x) <= 0):
            raise ValueError("curve breakpoints must start at 0 and increase strictly")
        if not (np.all(np.isfinite(y)) and np.isfinite(tail)):
            raise ValueError("curve values and tail slope must be finite")
        scale = max(1.0, float(np.max(np.abs(y))))
        if y[0] < -_TOL * scale or np.any(np.diff(y) < -1e-9 * scale) or tail < -_TOL:
            raise ValueError(f"a curve must be non-negative and non-decreasing: {x}, {y}, {tail}")
        x.flags.writeable = False
        y.flags.writeable = False
        object.__setattr__(self, "xs", x)
        object.__setattr__(self, "ys", y)
        object.__setattr__(self, "tail", float(tail))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("curves are immutable")

    # ------------------------------------------------------------------ evaluation
    def __call__(self, t: ArrayLike) -> NDArray[np.float64]:
        """``f(t)``: 0 at ``t = 0``, the interpolation for ``t > 0``."""
        t_a = np.asarray(t, dtype=np.float64)
        return np.where(t_a <= 0.0, 0.0, self.right(t_a))

    def right(self, t: ArrayLike) -> NDArray[np.float64]:
        """The right limit ``f(t+)`` (equal to ``f(t)`` except at ``t = 0``)."""
        t_a = np.asarray(t, dtype=np.float64)
        inside = np.interp(t_a, self.xs, self.ys)
        beyond = self.ys[-1] + self.tail * (t_a - self.xs[-1])
        return np.where(t_a > self.xs[-1], beyond, inside)

    def slopes(self) -> NDArray[np.float64]:
        """Slope of each piece: between consecutive points, then the tail."""
        return np.append(np.diff(self.ys) / np.diff(self.xs), self.tail)

    @property
    def burst(self) -> float:
        """``f(0+)``: the jump at the origin (the bucket of a token bucket)."""
        return float(self.ys[0])

    def is_concave(self) -> bool:
        """Slopes non-increasing (a jump at 0 is allowed: arrival curves)."""
        s = self.slopes()
        return bool(np.all(np.diff(s) <= 1e-9 * max(1.0, float(np.max(np.abs(s))))))

    def is_convex(self) -> bool:
        """Slopes non-decreasing and no jump at the origin (service curves)."""
        s = self.slopes()
        ok = np.all(np.diff(s) >= -1e-9 * max(1.0, float(np.max(np.abs(s)))))
        return bool(ok and abs(self.ys[0]) <= _TOL)

    def simplified(self) -> Curve:
        """Drop points where the slope does not change."""
        s = self.slopes()
        keep = np.ones(len(self.xs), dtype=bool)
        for i in range(1, len(self.xs)):
            left = s[i - 1]
            scale = max(1.0, abs(left), abs(s[i]))
            keep[i] = abs(s[i] - left) > 1e-9 * scale
        return Curve(self.xs[keep], self.ys[keep], self.tail)

    def equals(self, other: Curve, *, rtol: float = 1e-9, atol: float = 1e-9) -> bool:
        """Same function up to tolerance (compared on the union of breakpoints and the tail)."""
        xs = np.union1d(self.xs, other.xs)
        probe = np.append(xs, xs[-1] + 1.0)
        a, b = self.right(probe), other.right(probe)
        return bool(np.allclose(a, b, rtol=rtol, atol=atol)) and bool(
            np.isclose(self.tail, other.tail, rtol=rtol, atol=atol)
        )

    # ------------------------------------------------------------------ operators
    def __add__(self, other: Curve) -> Curve:
        return curve_sum(self, other)

    def __mul__(self, k: float) -> Curve:
        if not k >= 0:
            raise ValueError("curves scale by non-negative factors only")
        return Curve(self.xs, self.ys * k, self.tail * k)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"{self._symbol()}(t) = {self._formula()}"

    def _symbol(self) -> str:
        return "f"

    def _formula(self) -> str:
        pieces = []
        s = self.slopes()
        for i, (x, y) in enumerate(zip(self.xs.tolist(), self.ys.tolist(), strict=True)):
            last = i == len(self.xs) - 1
            end = "∞)" if last else f"{_fmt(self.xs[i + 1])}]"
            shift = "t" if x == 0 else f"(t − {_fmt(x)})"
            pieces.append(f"{_fmt(y)} + {_fmt(s[i])}·{shift} on ({_fmt(x)}, {end}")
        return "; ".join(pieces)


class TokenBucket(Curve):
    """Token-bucket arrival curve ``α(t) = r t + b`` for ``t > 0`` (rate ``r``, bucket ``b``).

    Examples
    --------
    >>> TokenBucket(0.5, 2.0)
    α(t) = 0.5t + 2
    >>> float(TokenBucket(0.5, 2.0)(4.0))
    4.0
    """

    __slots__ = ("b", "r")
    r: float
    b: float

    def __init__(self, r: float, b: float) -> None:
        if not (r >= 0 and b >= 0):
            raise ValueError(f"a token bucket needs r >= 0 and b >= 0, got r={r}, b={b}")
        super().__init__([0.0], [b], r)
        object.__setattr__(self, "r", float(r))
        object.__setattr__(self, "b", float(b))

    def _symbol(self) -> str:
        return "α"

    def _formula(self) -> str:
        return f"{_fmt(self.r)}t + {_fmt(self.b)}"


class RateLatency(Curve):
    """Rate-latency service curve ``β(t) = R (t − T)+`` (rate ``R``, latency ``T`` seconds).

    Examples
    --------
    >>> RateLatency(0.5, 4.0)
    β(t) = 0.5(t − 4)+
    >>> RateLatency(0.5, 4.0)(np.array([2.0, 6.0])).tolist()
    [0.0, 1.0]
    """

    __slots__ = ("R", "T")
    R: float
    T: float

    def __init__(self, rate: float, latency: float) -> None:
        if not (rate >= 0 and latency >= 0):
            raise ValueError(f"a rate-latency curve needs R, T >= 0, got {rate}, {latency}")
        if latency > 0:
            super().__init__([0.0, latency], [0.0, 0.0], rate)
        else:
            super().__init__([0.0], [0.0], rate)
        object.__setattr__(self, "R", float(rate))
        object.__setattr__(self, "T", float(latency))

    def _symbol(self) -> str:
        return "β"

    def _formula(self) -> str:
        if self.T == 0:
            return f"{_fmt(self.R)}t"
        return f"{_fmt(self.R)}(t − {_fmt(self.T)})+"


def constant_rate(rate: float) -> RateLatency:
    """The service curve ``β(t) = C t`` of a work-conserving queue of rate ``C`` (``T = 0``)."""
    return RateLatency(rate, 0.0)


def token_bucket_min(
    rates: Sequence[float] | ArrayLike, buckets: Sequence[float] | ArrayLike
) -> Curve:
    """The concave arrival curve ``α(t) = min_i (r_i t + b_i)`` (thesis §3.2.3).

    Redundant buckets (never the minimum for any ``t > 0``) are dropped.

    Examples
    --------
    >>> token_bucket_min([1.0, 0.25], [1.0, 4.0])
    f(t) = 1 + 1·t on (0, 4]; 5 + 0.25·(t − 4) on (4, ∞)
    >>> token_bucket_min([0.5], [2.0])
    α(t) = 0.5t + 2
    """
    r = np.asarray(rates, dtype=np.float64).reshape(-1)
    b = np.asarray(buckets, dtype=np.float64).reshape(-1)
    if r.shape != b.shape or r.size == 0:
        raise ValueError("token_bucket_min needs equally long, non-empty rates and buckets")
    if np.any(r < 0) or np.any(b < 0):
        raise ValueError("token buckets need r >= 0 and b >= 0")
    # Lower envelope of lines b_i + r_i t on t >= 0: walk from the smallest b (steepest first).
    order = np.lexsort((r, b))
    lines: list[tuple[float, float]] = []  # (r, b) in envelope order, slopes decreasing
    for i in order:
        ri, bi = float(r[i]), float(b[i])
        if lines and ri >= lines[-1][0]:
            continue  # larger bucket and no smaller rate: dominated
        while len(lines) >= 2:
            (r1, b1), (r2, b2) = lines[-2], lines[-1]
            x12 = (b2 - b1) / (r1 - r2)
            x2i = (bi - b2) / (r2 - ri)
            if x2i <= x12:
                lines.pop()
            else:
                break
        if len(lines) == 1:
            r1, b1 = lines[0]
            if (bi - b1) / (r1 - ri) <= 0:
                lines.pop()
        lines.append((ri, bi))
    if len(lines) == 1:
        return TokenBucket(*lines[0])
    xs = [0.0]
    ys = [lines[0][1]]
    for (r1, b1), (r2, b2) in pairwise(lines):
        x = (b2 - b1) / (r1 - r2)
        xs.append(x)
        ys.append(b1 + r1 * x)
    return Curve(xs, ys, lines[-1][0])


def convex_service(rates: Sequence[float], durations: Sequence[float]) -> Curve:
    """A convex service curve: 0 up to the first piece, then pieces of increasing ``rates``.

    ``durations[i]`` is how long piece ``i`` lasts (the last piece lasts forever, so
    ``len(durations) == len(rates) - 1``). A leading rate of 0 gives a latency.

    Examples
    --------
    >>> convex_service([0.0, 0.5, 1.0], [2.0, 2.0])
    f(t) = 0 + 0·t on (0, 2]; 0 + 0.5·(t − 2) on (2, 4]; 1 + 1·(t − 4) on (4, ∞)
    """
    if len(durations) != len(rates) - 1 or any(d <= 0 for d in durations):
        raise ValueError("convex_service needs len(rates) - 1 positive durations")
    if any(b < a for a, b in pairwise(rates)):
        raise ValueError("a convex service curve needs non-decreasing rates")
    xs = np.concatenate([[0.0], np.cumsum(durations)])
    ys = np.concatenate([[0.0], np.cumsum(np.asarray(rates[:-1]) * np.asarray(durations))])
    return Curve(xs, ys, rates[-1])


# --------------------------------------------------------------------------- raw form, sum
def to_raw(f: Curve) -> _pl.Raw:
    """``(xs, ys, tail)``: the form the kernels of :mod:`tailbound.dnc._pl` take."""
    return f.xs, f.ys, f.tail


def from_raw(raw: _pl.Raw) -> Curve:
    """A kernel's result as a :class:`Curve`: clamped at zero, made non-decreasing (removing
    rounding wiggles of order 1e-16) and simplified."""
    xs, ys, tail = raw
    ys = np.maximum(ys, 0.0)
    ys = np.maximum.accumulate(ys)
    return Curve(xs, ys, max(tail, 0.0)).simplified()


def curve_sum(f: Curve, g: Curve) -> Curve:
    """``(f + g)(t)``: the arrival curve of an aggregate of two flows.

    Examples
    --------
    >>> curve_sum(TokenBucket(0.5, 1.0), TokenBucket(0.25, 2.0))
    α(t) = 0.75t + 3
    """
    if isinstance(f, TokenBucket) and isinstance(g, TokenBucket):
        return TokenBucket(f.r + g.r, f.b + g.b)
    return from_raw(_pl.combine(to_raw(f), to_raw(g), np.add, split=False))
