"""The rate-limit choices WorkloadCompactor is compared against (thesis §5.3.1; paper §4.1).

Each picks one ``(r, b)`` per stage for a workload on its own, whatever else shares the server;
placement and the latency check are the same as WorkloadCompactor's
(:mod:`tailbound.policies.placement`, :func:`tailbound.policies.server.check`).

- **Effective bandwidth**: ``b = 0`` and the smallest ``r`` whose shaping delay stays within
  the SLO. With three stages the SLO is shared between the three shapers; the split minimises
  the sum of the three rates (greedy on a grid of 400 steps, exact for these convex decreasing
  rate-vs-delay functions up to the grid). *Choice*: the documents speak of one stage. Under a
  server model with terms beyond Eq. 5.1 (blocking by requests in service, packets) the shapers
  share only ``1 − reserve`` of the SLO (:data:`EFFECTIVE_BANDWIDTH_RESERVE`): with ``b = 0``
  the queues add nothing else, and the whole SLO spent in the shapers left no room for those
  terms, so no tenant fitted even alone.
- **k × average rate** (Silo): ``r = k ×`` the mean rate, ``b`` read off the r-b curve.
- **Knee of the r-b curve**: the point of the curve minimising ``r + b``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tailbound.characterize import RbCurve
from tailbound.policies.server import RATE_CAP, arrival_points
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH

Limits = tuple[NDArray[np.float64], NDArray[np.float64]]  # (rate[3], bucket[3])


def effective_bandwidth_rate(curve: RbCurve, delay_s: float) -> float:
    """Smallest ``r`` with ``h(α, r t) <= delay``: ``max_i α(x_i) / (x_i + d)`` over the
    breakpoints of the concave arrival curve (and at least its long-run rate).

    Examples
    --------
    >>> c = RbCurve(np.array([0.1, 1.0]), np.array([0.02, 0.0]), 0.1)
    >>> # α(t) = min(t, 0.02 + 0.1 t): the 20 ms burst arrives at full rate within 22.2 ms;
    >>> round(effective_bandwidth_rate(c, 0.1), 6)  # cleared 100 ms later: 0.0222 / 0.1222
    0.181818
    """
    xs, ys, tail = arrival_points(curve)
    if delay_s <= 0:
        return float("inf") if ys[0] > 0 else float(max(tail, ys[0]))
    return float(max(tail, float(np.max(ys / (xs + delay_s)))))


#: The share of the SLO effective bandwidth leaves to a server model's own terms (blocking by
#: less important requests in service, packet times): on wc62 with the sound model 2%, 5% and
#: 10% all give 21 servers, 20% 23, 30% 26 (0%: no tenant placed, the terms exceed nothing).
EFFECTIVE_BANDWIDTH_RESERVE = 0.05


def effective_bandwidth(
    workload: TenantCurves, steps: int = 400, reserve: float = 0.0
) -> Limits | None:
    """``b = 0`` at every stage; ``(1 − reserve)`` of the SLO is split between the three
    shapers to minimise the sum of rates (marginal-gain greedy over ``steps`` equal slices).
    ``None`` if no rate within the cap meets the SLO."""
    slo = workload.slo_s * (1.0 - reserve)
    curves = [workload.curves[s] for s in STORAGE_PATH]
    share = np.zeros(3)
    step = slo / steps
    # give every stage one slice first so no rate is infinite for a burst
    share[:] = step
    rates = np.array([effective_bandwidth_rate(c, d) for c, d in zip(curves, share, strict=True)])
    # each stage's rate with one more slice; only the stage that took it changes
    trial = np.array(
        [effective_bandwidth_rate(c, d + step) for c, d in zip(curves, share, strict=True)]
    )
    for _ in range(steps - 3):
        gain = rates - trial
        k = int(np.argmax(gain))
        share[k] += step
        rates[k] = trial[k]
        trial[k] = effective_bandwidth_rate(curves[k], share[k] + step)
    if np.any(rates > RATE_CAP):
        return None
    return rates, np.zeros(3)


def average_rate(workload: TenantCurves, k: float) -> Limits | None:
    """``r = k ×`` mean (capped at 0.999), ``b = b(r)`` from the r-b curve."""
    rates = np.array([min(k * workload.mean(s), RATE_CAP) for s in STORAGE_PATH])
    rates = np.maximum(rates, [workload.curves[s].rates[0] for s in STORAGE_PATH])
    if np.any(rates > RATE_CAP):
        return None
    buckets = np.array(
        [float(workload.curves[s].bucket_at(r)) for s, r in zip(STORAGE_PATH, rates, strict=True)]
    )
    return rates, buckets


def knee(workload: TenantCurves) -> Limits | None:
    """The point of each stage's r-b curve (vertices and the capped end) minimising ``r + b``."""
    rates, buckets = np.zeros(3), np.zeros(3)
    for s, stage in enumerate(STORAGE_PATH):
        c = workload.curves[stage]
        r = np.minimum(c.rates, RATE_CAP)
        b = c.bucket_at(r)
        i = int(np.argmin(r + b))
        rates[s], buckets[s] = r[i], b[i]
    if np.any(rates > RATE_CAP):
        return None
    return rates, buckets


@dataclass(frozen=True)
class Baseline:
    """A fixed-choice policy: ``choose(workload)`` gives its limits, or ``None`` (it cannot meet
    its SLO even alone)."""

    name: str
    choose: Callable[[TenantCurves], Limits | None]
