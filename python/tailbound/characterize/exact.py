"""The exact r-b curve: every breakpoint of ``b(r)``, no grid error.

``b(r) = max over intervals of (work − r · duration)`` is convex and piecewise linear in ``r``.
The Rust core (``crates/tailbound-core/src/rb/exact.rs``) finds all its breakpoints between the
mean rate and the peak rate by intersecting tangents: evaluate ``b`` and the interval attaining
it at two rates, intersect the two tangent lines ``W − r·D``, evaluate at the intersection, and
recurse where ``b`` lies above the tangents. Every level of the recursion is one multi-rate pass
over the trace. When a curve has hundreds of breakpoints (cumulative work that is a smooth
concave function of time), ``method="auto"`` hands over to a divide-and-conquer route over the
trace (``rb/hull.rs``, ``O(n log² n)``) that gives the same curve without evaluating rates. See
``docs/characterize.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tailbound.characterize.rbcurve import RbCurve, mean_rate
from tailbound.traces.trace import Trace


@dataclass(frozen=True)
class ExactResult:
    """The exact curve's vertices and lines, and how much work finding them took.

    ``work[k] − r · duration[k]`` (seconds of work) is the line of the segment from
    ``rates[k]`` to ``rates[k + 1]``; the last line is flat (``duration == 0``) unless the
    curve is a single point.
    """

    rates: NDArray[np.float64]
    buckets: NDArray[np.float64]
    work: NDArray[np.float64]
    duration: NDArray[np.float64]
    passes: int
    evaluations: int
    method: str


def exact_rb_points(
    time: ArrayLike,
    tokens: ArrayLike,
    min_rate: float,
    *,
    threads: int = 1,
    method: str = "auto",
) -> ExactResult:
    """The exact curve of requests at ``time`` (s) with ``tokens`` (s of work) from ``min_rate``.

    ``method``: ``"tangents"`` (tangent intersections, batched passes of rbGen), ``"hull"``
    (divide and conquer over the trace) or ``"auto"`` (tangents, switching to the hull route
    when a recursion level has more than 128 rates to evaluate). All give the same curve;
    :attr:`ExactResult.method` says which one ran.

    Examples
    --------
    >>> # unit requests at 0, 1 and 1.5 s: b(r) = max(3 - 1.5 r, 2 - 0.5 r, 1)
    >>> e = exact_rb_points([0.0, 1.0, 1.5], [1.0, 1.0, 1.0], 0.5)
    >>> e.rates.tolist(), e.buckets.tolist(), e.duration.tolist()
    ([0.5, 1.0, 2.0], [2.25, 1.5, 1.0], [1.5, 0.5, 0.0])
    """
    from tailbound import _core

    t = np.ascontiguousarray(time, dtype=np.float64)
    w = np.ascontiguousarray(tokens, dtype=np.float64)
    rates, buckets, work, duration, passes, evaluations, used = _core.exact_rb_curve(
        t, w, float(min_rate), threads, method
    )
    return ExactResult(rates, buckets, work, duration, passes, evaluations, used)


def exact_rb_curve(
    trace: Trace, model: object, *, threads: int = 1, method: str = "auto"
) -> RbCurve:
    """The exact r-b curve of ``trace`` at the stage of ``model`` (a token model).

    Its points are the mean rate (total work ÷ the trace's duration) and every breakpoint above
    it, up to the peak rate, above which the curve stays at its last bucket (the most work
    arriving at one instant). Between points the curve is linear, exactly. ``method`` as in
    :func:`exact_rb_points`.
    """
    tokens = model.tokens(trace)  # type: ignore[attr-defined]
    mean = mean_rate(tokens, trace.duration)
    result = exact_rb_points(trace.time, tokens, mean, threads=threads, method=method)
    return RbCurve(result.rates, result.buckets, mean, getattr(model, "stage", None), trace.name)
