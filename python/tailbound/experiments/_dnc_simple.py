"""A simple deterministic (100th percentile) bound for the SNC reproductions' DNC curve.

Not the DNC engine (another helper's): only the textbook token-bucket bound for ``n`` flows that
share a whole path of constant-rate servers, used to draw the thesis's DNC reference line in
Figs. 4.7 and 4.8.

* A trace conforms to the token bucket ``(r, b(r))`` with the smallest burst
  ``b(r) = max_{j <= k} (sum_{i=j..k} w_i - r (t_k - t_j))`` (work ``w`` in bytes): the r-b
  curve's bucket, computed by the project's rbGen (:func:`tailbound.characterize.rbgen`).
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

from tailbound.characterize import rbgen


def shared_path_delay(
    flows: list[tuple[NDArray[np.float64], NDArray[np.float64]]], capacity: float
) -> float:
    """DNC delay bound (seconds) of flow 0 among ``flows`` (time, work) sharing a path of
    constant-rate servers of ``capacity`` work/s; best fair-share rate allocation."""
    n = len(flows)
    rates = np.arange(1, 20) * 0.05 * capacity / n
    bursts = np.sum([rbgen(t, w, rates) for t, w in flows], axis=0)  # summed bursts per rate
    others = rates * (n - 1)
    stable = others < capacity
    return float(np.min(bursts[stable] / (capacity - others[stable]), initial=np.inf))
