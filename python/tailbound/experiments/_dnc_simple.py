"""A simple deterministic (100th percentile) bound for the SNC reproductions' DNC curve.

Not the DNC engine (another helper's): only the textbook token-bucket bound for ``n`` flows that
share a whole path of constant-rate servers, used to draw the thesis's DNC reference line in
Figs. 4.7 and 4.8.

* A trace conforms to the token bucket ``(r, b(r))`` with the smallest burst
  ``b(r) = max_{j <= k} (sum_{i=j..k} w_i - r (t_k - t_j))`` (work ``w`` in bytes).
* Servers of rate ``C`` in tandem form one server of rate ``C`` (min-plus convolution), so all
  flows of the path pay their bursts once. With the other flows at equal or higher priority (blind
  multiplexing, as the SNC analyses assume), flow 0's delay is at most
  ``(b_0 + sum_j b_j) / (C - sum_j r_j)`` over the other flows ``j``, if ``sum_j r_j < C``.
* Rates: every flow gets ``r = alpha · C / n``; every ``alpha`` gives a valid bound and we report
  the best over ``alpha`` in ``0.05, 0.10, …, 0.95`` (a fair-share allocation, not PriorityMeister's
  optimised one).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def min_burst(time_s: NDArray[np.float64], work: NDArray[np.float64], rate: float) -> float:
    """Smallest bucket size (work) for which the arrivals conform to rate ``rate`` (work/s).

    >>> float(min_burst(np.array([0.0, 0.0, 1.0]), np.array([5.0, 5.0, 5.0]), 2.0))  # 15 - 2
    13.0
    """
    cumulative = np.cumsum(work)
    before = cumulative - work  # work strictly before each arrival
    start = np.minimum.accumulate(before - rate * time_s)
    return float(np.max(cumulative - rate * time_s - start))


def shared_path_delay(
    flows: list[tuple[NDArray[np.float64], NDArray[np.float64]]], capacity: float
) -> float:
    """DNC delay bound (seconds) of flow 0 among ``flows`` (time, work) sharing a path of
    constant-rate servers of ``capacity`` work/s; best fair-share rate allocation."""
    n = len(flows)
    best = np.inf
    for alpha in np.arange(1, 20) * 0.05:
        rate = alpha * capacity / n
        bursts = [min_burst(t, w, rate) for t, w in flows]
        others_rate = rate * (n - 1)
        if others_rate < capacity:
            best = min(best, sum(bursts) / (capacity - others_rate))
    return float(best)
