"""The simple DNC token-bucket bound used for the reproductions' DNC curve."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.characterize import rbgen
from tailbound.experiments._dnc_simple import shared_path_delay


def fifo_max_delay(time_s: np.ndarray, work: np.ndarray, capacity: float) -> float:
    """Largest delay of a FIFO queue served at ``capacity`` (exact, sequential)."""
    free_at, worst = 0.0, 0.0
    for t, w in zip(time_s, work, strict=True):
        free_at = max(free_at, t) + w / capacity
        worst = max(worst, free_at - t)
    return worst


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 3))
def test_dnc_bound_covers_the_worst_simulated_delay(seed: int, flows: int) -> None:
    rng = np.random.default_rng(seed)
    traces = []
    for _ in range(flows):
        n = int(rng.integers(5, 60))
        traces.append((np.sort(rng.random(n) * 2.0), rng.exponential(100.0, n)))
    capacity = 2000.0
    bound = shared_path_delay(traces, capacity)
    merged_t = np.concatenate([t for t, _ in traces])
    merged_w = np.concatenate([w for _, w in traces])
    order = np.argsort(merged_t, kind="stable")
    assert bound >= fifo_max_delay(merged_t[order], merged_w[order], capacity) - 1e-12


def test_min_burst_is_tight() -> None:
    """The bursts the bound pays are rbGen's (the smallest bucket at each rate)."""
    t = np.array([0.0, 0.5, 1.0])
    w = np.array([4.0, 4.0, 4.0])
    # at rate 4/s the worst window is all three arrivals: 12 - 4 * 1 = 8
    assert rbgen(t, w, [4.0])[0] == 8.0
    assert rbgen(t, w, [100.0])[0] == 4.0  # fast enough: one request
