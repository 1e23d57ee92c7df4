"""Min-plus operators on piecewise-linear curves (Le Boudec & Thiran, ch. 3; thesis §3.2.3).

Every operator has a general path that works on any :class:`~tailbound.dnc.curves.Curve` (the
deconvolution needs a concave first and a convex second argument, the cases of network calculus
here) and closed-form fast paths for token buckets and rate-latency curves. The fast paths are
tested against the general path (``tests/dnc/``); pass ``fast=False`` to force the general one.
The sum of two curves (``f + g``, :func:`~tailbound.dnc.curves.curve_sum`) lives with the curves.

Units: time in seconds, work in seconds of service (any consistent unit works).
"""

from __future__ import annotations

import numpy as np

from tailbound.dnc import _pl
from tailbound.dnc.curves import Curve, RateLatency, TokenBucket, curve_sum, from_raw, to_raw


# --------------------------------------------------------------------------- pointwise
def curve_min(f: Curve, g: Curve) -> Curve:
    """``(f ∧ g)(t) = min(f(t), g(t))``.

    Examples
    --------
    >>> curve_min(TokenBucket(1.0, 1.0), TokenBucket(0.25, 4.0))
    f(t) = 1 + 1·t on (0, 4]; 5 + 0.25·(t − 4) on (4, ∞)
    """
    return from_raw(_pl.combine(to_raw(f), to_raw(g), np.minimum, split=True))


def curve_max(f: Curve, g: Curve) -> Curve:
    """``(f ∨ g)(t) = max(f(t), g(t))``."""
    return from_raw(_pl.combine(to_raw(f), to_raw(g), np.maximum, split=True))


def aggregate(curves: list[Curve]) -> Curve:
    """Sum of several arrival curves; the zero curve for none."""
    total: Curve = TokenBucket(0.0, 0.0)
    for c in curves:
        total = curve_sum(total, c)
    return total


# --------------------------------------------------------------------------- convolution
def convolution(f: Curve, g: Curve, *, fast: bool = True) -> Curve:
    """Min-plus convolution ``(f ⊗ g)(t) = inf_{0 <= s <= t} f(s) + g(t − s)``.

    Fast paths: two rate-latency curves give ``β_{min(R1,R2), T1+T2}``; two convex curves through
    the origin give their pieces sorted by slope; two concave curves with ``f(0) = 0`` give
    ``min(f, g)`` (Le Boudec & Thiran Thm 3.1.6, §3.1.9).

    Examples
    --------
    >>> convolution(RateLatency(0.5, 4.0), RateLatency(1.0, 1.0))
    β(t) = 0.5(t − 5)+
    """
    if fast:
        if isinstance(f, RateLatency) and isinstance(g, RateLatency):
            return RateLatency(min(f.R, g.R), f.T + g.T)
        if f.is_convex() and g.is_convex():
            return _convex_convolution(f, g)
        if f.is_concave() and g.is_concave():
            return curve_min(f, g)
    return _general_convolution(f, g)


def _convex_convolution(f: Curve, g: Curve) -> Curve:
    lengths = np.concatenate([np.diff(f.xs), [np.inf], np.diff(g.xs), [np.inf]])
    slopes = np.concatenate([f.slopes(), g.slopes()])
    order = np.argsort(slopes, kind="stable")
    xs, ys = [0.0], [0.0]
    for k in order:
        if not np.isfinite(lengths[k]):
            return from_raw((np.array(xs), np.array(ys), float(slopes[k])))
        xs.append(xs[-1] + lengths[k])
        ys.append(ys[-1] + slopes[k] * lengths[k])
    raise AssertionError("unreachable: both curves end with a ray")


def _pieces(f: Curve) -> list[tuple[float, float, float, float]]:
    """``(start, value at start+, length, slope)`` of each linear piece, the tail last."""
    s = f.slopes()
    out = [
        (float(f.xs[i]), float(f.ys[i]), float(f.xs[i + 1] - f.xs[i]), float(s[i]))
        for i in range(len(f.xs) - 1)
    ]
    out.append((float(f.xs[-1]), float(f.ys[-1]), np.inf, float(f.tail)))
    return out


def _general_convolution(f: Curve, g: Curve) -> Curve:
    """Lower envelope of the convolutions of every pair of pieces (each pair of linear pieces
    convolves into the two pieces sorted by slope), plus ``f`` and ``g`` themselves (the terms
    ``s = t`` and ``s = 0`` where the other curve is 0)."""
    parts = [
        _pl.Partial(0.0, float(f.ys[0]), [*np.diff(f.xs).tolist(), np.inf], f.slopes().tolist()),
        _pl.Partial(0.0, float(g.ys[0]), [*np.diff(g.xs).tolist(), np.inf], g.slopes().tolist()),
    ]
    for a0, ay, al, as_ in _pieces(f):
        for b0, by, bl, bs in _pieces(g):
            first, second = sorted([(as_, al), (bs, bl)])
            lengths = [first[1], second[1]] if np.isfinite(first[1]) else [first[1]]
            slopes = [first[0], second[0]] if np.isfinite(first[1]) else [first[0]]
            parts.append(_pl.Partial(a0 + b0, ay + by, lengths, slopes))
    points = np.concatenate([np.append(p.xs, p.end) for p in parts])
    return from_raw(_pl.lower_envelope(parts, points))


# --------------------------------------------------------------------------- deconvolution
def deconvolution(f: Curve, g: Curve, *, fast: bool = True) -> Curve:
    """Min-plus deconvolution ``(f ⊘ g)(t) = sup_{u >= 0} f(t + u) − g(u)``.

    With ``f`` a flow's arrival curve and ``g`` its service curve this is an arrival curve of the
    flow's output (Le Boudec & Thiran Thm 1.4.3). Fast path: a token bucket through a rate-latency
    server, ``r <= R``, leaves as ``α(t) = r t + b + r T``. The general path needs ``f`` concave
    and ``g`` convex (then ``f(t+u) − g(u)`` is concave in ``u`` and its maximum is at a
    breakpoint); it raises ``ValueError`` for other shapes and ``OverflowError`` when the result
    is infinite (``f`` grows faster than ``g``).

    Examples
    --------
    >>> deconvolution(TokenBucket(0.25, 1.0), RateLatency(0.5, 4.0))
    α(t) = 0.25t + 2
    """
    if f.tail > g.tail + 1e-15:
        raise OverflowError("f ⊘ g is infinite: the arrival rate exceeds the service rate")
    if fast and isinstance(f, TokenBucket) and isinstance(g, RateLatency):
        return TokenBucket(f.r, f.b + f.r * g.T)
    if not (f.is_concave() and g.is_convex()):
        raise ValueError("deconvolution is implemented for a concave f and a convex g")
    diffs = (f.xs[:, None] - g.xs[None, :]).reshape(-1)
    ts = np.unique(np.concatenate([[0.0], f.xs, diffs[diffs > 0]]))
    ts = np.append(ts, ts[-1] + 1.0)
    values = np.array([_deconv_at(f, g, float(t)) for t in ts])
    return from_raw((ts[:-1], values[:-1], float(values[-1] - values[-2])))


def _deconv_at(f: Curve, g: Curve, t: float) -> float:
    us = np.concatenate([[0.0], g.xs, f.xs - t])
    us = us[us >= 0]
    return float(np.max(f.right(t + us) - np.where(us > 0, g.right(us), 0.0)))


# --------------------------------------------------------------------------- deviations
def horizontal_deviation(alpha: Curve, beta: Curve, *, fast: bool = True) -> float:
    """``h(α, β) = sup_{t >= 0} inf{d >= 0 : α(t) <= β(t + d)}``: the delay bound of a flow with
    arrival curve ``α`` through a server offering ``β`` (Le Boudec & Thiran Thm 1.4.2), seconds.

    Fast paths: token bucket through rate-latency ``T + b/R`` (``r <= R``); concave ``α``
    through rate-latency ``T + max_i (α(x_i+)/R − x_i)`` over ``α``'s breakpoints. Infinite when
    ``α`` eventually grows faster than ``β``.

    Examples
    --------
    >>> horizontal_deviation(TokenBucket(0.25, 1.0), RateLatency(0.5, 4.0))
    6.0
    """
    if alpha.tail > beta.tail + 1e-15:
        return float("inf")
    if fast and isinstance(beta, RateLatency) and beta.R > 0:
        if isinstance(alpha, TokenBucket):
            return beta.T + alpha.b / beta.R
        if alpha.is_concave():
            return beta.T + float(np.max(alpha.ys / beta.R - alpha.xs))
    f, g = to_raw(alpha), to_raw(beta)
    ts = np.concatenate([alpha.xs, _pl.lower_inverse(f, beta.ys)])
    ts = np.unique(ts[np.isfinite(ts)])
    ys = _pl.evaluate(f, ts)
    delay = _pl.upper_inverse(g, ys) - ts
    return float(max(0.0, float(np.max(delay))))


def vertical_deviation(alpha: Curve, beta: Curve, *, fast: bool = True) -> float:
    """``v(α, β) = sup_{t >= 0} α(t) − β(t)``: the backlog bound (Le Boudec & Thiran Thm 1.4.1).

    Fast path: token bucket and rate-latency give ``b + r T`` (``r <= R``).

    Examples
    --------
    >>> vertical_deviation(TokenBucket(0.25, 1.0), RateLatency(0.5, 4.0))
    2.0
    """
    if alpha.tail > beta.tail + 1e-15:
        return float("inf")
    if fast and isinstance(alpha, TokenBucket) and isinstance(beta, RateLatency):
        return alpha.b + alpha.r * beta.T
    xs = np.union1d(alpha.xs, beta.xs)
    return float(max(0.0, float(np.max(alpha.right(xs) - beta.right(xs)))))


# --------------------------------------------------------------------------- leftover service
def leftover(beta: Curve, cross: Curve, *, fast: bool = True) -> Curve:
    """Service left to a lower-priority flow under static priority (or any blind multiplexing):
    ``β_L(t) = sup_{0 <= s <= t} [β(s) − α_H(s)]+`` with ``α_H`` the arrival curve of the
    higher-priority traffic and ``β`` a strict service curve of the queue (Le Boudec & Thiran
    Thm 6.2.1, thesis §3.2.3). Fluid model: a packet in service is not preempted in reality;
    tailbound's bounds ignore that blocking term, as the thesis's Eq. 5.1 does.

    Fast path: rate-latency ``β_{R,T}`` minus a token bucket ``(r, b)`` with ``r < R`` leaves
    ``β_{R − r, (b + R T)/(R − r)}``.

    Examples
    --------
    >>> leftover(RateLatency(1.0, 0.0), TokenBucket(0.5, 2.0))
    β(t) = 0.5(t − 4)+
    """
    if fast and isinstance(beta, RateLatency) and isinstance(cross, TokenBucket):
        if cross.r < beta.R:
            rate = beta.R - cross.r
            return RateLatency(rate, (cross.b + beta.R * beta.T) / rate)
    diff = _pl.combine(to_raw(beta), to_raw(cross), np.subtract, split=False)
    zero: _pl.Raw = (np.array([0.0]), np.array([0.0]), 0.0)
    positive = _pl.combine(diff, zero, np.maximum, split=True)
    return from_raw(_pl.running_max(positive))


def output_bound(alpha: Curve, beta: Curve, *, fast: bool = True) -> Curve:
    """Arrival curve of a flow's departures: ``α* = α ⊘ β`` (Le Boudec & Thiran Thm 1.4.3)."""
    return deconvolution(alpha, beta, fast=fast)
