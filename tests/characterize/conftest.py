"""Trace catalogue for the characterisation tests."""

from __future__ import annotations

import numpy as np

from tailbound.traces import Trace


def bursty_trace(n: int, seed: int, name: str = "bursty") -> Trace:
    """On/off arrivals: bursts of closely spaced requests separated by long gaps, mixed sizes."""
    rng = np.random.default_rng(seed)
    gaps = np.where(rng.random(n) < 0.05, rng.exponential(0.5, n), rng.exponential(1e-4, n))
    gaps[rng.random(n) < 0.1] = 0.0  # simultaneous arrivals
    return Trace.from_arrays(
        time=np.cumsum(gaps),
        op=rng.integers(0, 2, n),
        size=rng.choice([512, 4096, 16384, 65536, 262144], n),
        name=name,
    )
