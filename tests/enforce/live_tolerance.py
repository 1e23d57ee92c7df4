"""How far a live percentile may be from the simulator's: the live replay tests' one rule."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tailbound.sim.results import WorkloadResult


def tolerance(
    simulated: WorkloadResult, p: float, live: Sequence[float], floor: float
) -> tuple[float, float, float]:
    """``(median, spread, tolerance)`` of a tenant's live ``p``-th percentiles over the runs
    against the simulated requests: ``2 · spread + floor + 3 %`` of the prediction (spread: the
    range over the runs; floor: the p99 of a lone request on the idle path, what the host adds),
    plus the percentile's sampling error. A percentile of ``n`` requests is an order statistic:
    its rank moves by ~``sqrt(n·p·(1 − p))`` between runs of one distribution, so at 3 σ the live
    ``p``-th percentile may be the simulated distribution's anywhere in
    ``p ± 3·sqrt(p(1 − p)/n)``; the larger side of that range is added."""
    predicted = simulated.percentile(p)
    median, spread = float(np.median(live)), max(live) - min(live)
    d = 3 * math.sqrt(p * (1 - p) / max(len(simulated.latency), 1))
    rank = max(
        simulated.percentile(min(p + d, 1.0)) - predicted,
        predicted - simulated.percentile(max(p - d, 0.0)),
    )
    return median, spread, 2 * spread + floor + 0.03 * predicted + rank


def rank_band(p: float, n: int) -> float:
    """``3·sqrt(p(1 − p)/n)``: how far (as a fraction) the rank of a ``p``-th percentile of ``n``
    requests moves between runs of one distribution, at 3 σ (:func:`tolerance`'s rank term)."""
    return 3 * math.sqrt(p * (1 - p) / max(n, 1))


def slo_tolerance(
    slo: float, live: Sequence[float], rank: float, floor: float
) -> tuple[float, float, float]:
    """The same rule against an SLO where no simulation predicts the live run (a controller
    on closed-loop clients): ``(median, spread, tolerance)`` of the live percentiles over the
    runs, the tolerance ``2 · spread + floor + 3 %`` of the SLO ``+ rank``, ``rank`` the
    sampling error measured on the live runs themselves (the largest distance, over the runs,
    between the percentile and the percentiles :func:`rank_band` away from it)."""
    median, spread = float(np.median(live)), max(live) - min(live)
    return median, spread, 2 * spread + floor + 0.03 * slo + rank
