"""Fit the simulator's array model (``sim/array.rs``, ``docs/simulator.md`` "Arrays") to a depth
sweep: throughput and latency quantiles of one stream keeping ``D`` requests outstanding.

The model (PSLO's Fig. 4 shape; issue 26): with ``n`` requests in service each progresses at
``s(n) = 1 / (1 + β(n − 1))`` up to the knee ``K`` and ``s(K)·(K/n) / (1 + α(n − K))``
beyond it, and each request's work is multiplied by a Pareto factor of shape ``a`` and mean 1.
A closed stream of depth ``D`` keeps ``D`` requests in service, so

- its throughput is ``X(D) = D·s(D) / w`` (``w`` a request's work on one channel), and
  ``r(D) = X(D) / X(1)`` is ``D / (1 + β(D − 1))`` for ``D ≤ K`` and
  ``r(K) / (1 + α(D − K))`` beyond (:func:`relative_throughput`);
- a request's latency is ``w·m / s(D)`` with ``m`` Pareto: its ``q``-quantile is
  ``(w·x_m / s(D))·(1 − q)^(−1/a)``, a straight line of slope ``−1/a`` in ``log(1 − q)`` at
  every depth.

**The fit** (:func:`fit_array`), least squares in closed form: for every candidate knee
``K = 1 … max D``, ``β`` is the slope through the origin of ``D / r(D) − 1`` against ``D − 1``
over the depths ``≤ K`` (clipped to [0, 0.99]), ``α`` that of ``r(K) / r(D) − 1`` against
``D − K`` over the depths beyond (``r(K)`` the model's, clipped to ≥ 0); the knee kept is the one
whose model is closest to the measured ``log r`` (sum of squares; the smaller knee on a tie).
``a`` is ``−1 / slope`` of ``log`` latency against ``log(1 − q)``, pooled over the depths with an
intercept per depth (quantiles at or above :data:`TAIL_FROM`, where the tail is; clipped to at
least :data:`MIN_TAIL_SHAPE`, the model's domain being ``a > 1``; ``None`` when the latencies do
not grow with the quantile, which the model cannot take).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: Quantiles used for the tail's shape: the upper ones (a device's body is not Pareto).
TAIL_FROM = 0.9
#: The smallest tail shape the fit returns (the model needs ``a > 1``: a finite mean).
MIN_TAIL_SHAPE = 1.05
#: The largest interference the fit returns (the model needs ``β < 1``).
MAX_INTERFERENCE = 0.99


@dataclass(frozen=True)
class ArrayFit:
    """The array model's parameters fitted to a sweep: ``channels`` K, ``interference`` β,
    ``thrash`` α, ``tail_shape`` a (``None``: no tail factor), and ``residual``, the root mean
    square of ``log r`` (model against measured throughput ratios)."""

    channels: int
    interference: float
    thrash: float
    tail_shape: float | None
    residual: float

    def table(self) -> dict[str, float | int]:
        """The simulator's ``array`` table (``docs/simulator.md``)."""
        out: dict[str, float | int] = {
            "channels": self.channels,
            "interference": self.interference,
            "thrash": self.thrash,
        }
        if self.tail_shape is not None:
            out["tail_shape"] = self.tail_shape
        return out


def relative_throughput(
    depth: NDArray[np.float64], channels: int, interference: float, thrash: float
) -> NDArray[np.float64]:
    """``r(D) = X(D) / X(1)`` of the model (module documentation).

    >>> relative_throughput(np.array([1.0, 4.0, 8.0]), 4, 0.1, 0.25).round(4).tolist()
    [1.0, 3.0769, 1.5385]
    """
    d = np.asarray(depth, dtype=np.float64)
    k = float(channels)
    below = d / (1 + interference * (d - 1))
    peak = k / (1 + interference * (k - 1))
    return np.where(d <= k, below, peak / (1 + thrash * (d - k)))


def _slope_through_origin(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    denominator = float(np.sum(x * x))
    return float(np.sum(x * y)) / denominator if denominator > 0 else 0.0


def fit_throughput(
    depth: Sequence[float], iops: Sequence[float]
) -> tuple[int, float, float, float]:
    """``(K, β, α, residual)`` fitted to throughputs ``iops`` (requests per second) measured at
    ``depth`` (module documentation); the depths must include 1."""
    d = np.asarray(depth, dtype=np.float64)
    x = np.asarray(iops, dtype=np.float64)
    if d.size != x.size or d.size == 0:
        raise ValueError("expected one throughput per depth")
    if not (np.all(np.isfinite(x)) and np.all(x > 0)):
        raise ValueError(f"throughputs must be positive and finite, got {x.tolist()}")
    if 1.0 not in d:
        raise ValueError("the depths must include 1 (the throughputs are relative to it)")
    r = x / x[d == 1.0][0]
    best: tuple[float, int, float, float] | None = None
    for k in range(1, int(d.max()) + 1):
        lo, hi = d <= k, d > k
        beta = _slope_through_origin(d[lo] - 1, d[lo] / r[lo] - 1)
        beta = min(max(beta, 0.0), MAX_INTERFERENCE)
        peak = k / (1 + beta * (k - 1))
        alpha = max(_slope_through_origin(d[hi] - k, peak / r[hi] - 1), 0.0) if hi.any() else 0.0
        model = relative_throughput(d, k, beta, alpha)
        error = float(np.sum((np.log(model) - np.log(r)) ** 2))
        if best is None or error < best[0] - 1e-12:
            best = (error, k, beta, alpha)
    assert best is not None
    error, k, beta, alpha = best
    return k, beta, alpha, math.sqrt(error / d.size)


def fit_tail_shape(
    quantiles: Sequence[float], latency_s: Sequence[Sequence[float]]
) -> float | None:
    """The Pareto shape ``a`` from latency quantiles (``latency_s[i][j]``: depth ``i``'s
    ``quantiles[j]``-quantile, seconds), module documentation.

    >>> q = [0.9, 0.99, 0.999]
    >>> round(fit_tail_shape(q, [[(1 - p) ** (-1 / 3) for p in q]]), 9)
    3.0
    """
    qs = np.asarray(quantiles, dtype=np.float64)
    lat = np.asarray(latency_s, dtype=np.float64)
    use = qs >= TAIL_FROM
    if use.sum() < 2:
        raise ValueError(f"need two quantiles at or above {TAIL_FROM}, got {qs.tolist()}")
    if not (np.all(np.isfinite(lat)) and np.all(lat > 0)):
        raise ValueError("latencies must be positive and finite")
    x = np.log(1 - qs[use])
    y = np.log(lat[:, use])
    xc = x - x.mean()
    yc = y - y.mean(axis=1, keepdims=True)
    slope = float(np.sum(xc * yc)) / (float(np.sum(xc * xc)) * lat.shape[0])
    if not slope < 0:
        return None
    return max(-1.0 / slope, MIN_TAIL_SHAPE)


def fit_array(
    depth: Sequence[float],
    iops: Sequence[float],
    quantiles: Sequence[float],
    latency_s: Sequence[Sequence[float]],
) -> ArrayFit:
    """The array model fitted to a depth sweep (module documentation): throughputs ``iops``
    and latency quantiles ``latency_s[i]`` (at ``quantiles``, seconds) at each ``depth[i]``."""
    k, beta, alpha, residual = fit_throughput(depth, iops)
    return ArrayFit(k, beta, alpha, fit_tail_shape(quantiles, latency_s), residual)
