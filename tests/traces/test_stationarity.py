"""The stationarity tests of thesis §4.3.2 (tailbound.traces.stationarity) on traces whose answer
is known by construction, and on the wc62 traces."""

from __future__ import annotations

import numpy as np
import pytest

from tailbound.traces import Trace
from tailbound.traces.stationarity import MIN_INTERVALS, per_interval, stationarity
from tailbound.traces.synthetic import poisson_trace


def trace_of_counts(counts: np.ndarray, size: int = 4096) -> Trace:
    """A trace with ``counts[k]`` requests spread evenly over second ``k``."""
    times = np.concatenate([k + (np.arange(c) + 0.5) / c for k, c in enumerate(counts) if c > 0])
    n = times.size
    return Trace.from_arrays(time=times, op=[0] * n, size=[size] * n, duration_s=len(counts))


def test_per_interval_counts_every_request_once_and_keeps_the_last_at_the_end() -> None:
    t = Trace.from_arrays(
        time=[0.0, 0.4, 1.0, 2.5, 3.0], op=[0] * 5, size=[10, 20, 30, 40, 50], duration_s=3.0
    )
    counts, volume = per_interval(t)
    assert counts.tolist() == [2, 1, 2]
    assert volume.tolist() == [30, 30, 90]


def test_poisson_arrivals_pass() -> None:
    s = stationarity(poisson_trace(50.0, 600.0, seed=1))
    assert s.passes()
    assert s.counts.adf_p < 0.01 and s.counts.kpss_p >= 0.05


def test_a_level_shift_fails_kpss() -> None:
    rng = np.random.default_rng(2)
    counts = np.concatenate([rng.poisson(20, 300), rng.poisson(60, 300)])
    s = stationarity(trace_of_counts(counts))
    assert s.counts.kpss_p < 0.05
    assert not s.passes()


def test_a_random_walk_rate_keeps_its_unit_root() -> None:
    rng = np.random.default_rng(3)
    rate = np.maximum(1.0, 500.0 + np.cumsum(rng.normal(0.0, 15.0, 600)))
    s = stationarity(trace_of_counts(rng.poisson(rate)))
    assert s.counts.adf_p >= 0.05
    assert not s.passes()


def test_bytes_are_tested_apart_from_counts() -> None:
    """Same count every second, but the second half's requests are 16× larger."""
    n = 600 * 10
    t = Trace.from_arrays(
        time=(np.arange(n) + 0.5) / 10,
        op=[1] * n,
        size=np.where(np.arange(n) < n // 2, 4096, 65536),
        duration_s=600.0,
    )
    s = stationarity(t)
    assert s.counts.passes(0.05)  # a constant series: p = 0 and 1 by definition
    assert not s.bytes.passes(0.05)
    assert not s.passes()


def test_too_short_a_trace_is_refused_with_its_name() -> None:
    t = poisson_trace(50.0, MIN_INTERVALS - 1, seed=4, name="short")
    with pytest.raises(ValueError, match="short spans 29 intervals"):
        stationarity(t)


def test_wc62_traces_pass_and_fail(wc62_dir) -> None:
    """Real traces: trace 5 passes; trace 18 (its request rate drifts) fails KPSS on both series;
    trace 14, whose second half holds a write burst 2.7x longer than any in its first half,
    passes: the tests look at levels, not at extreme seconds (module docstring)."""
    from tailbound.traces import read_trace

    def of(i: int):
        return stationarity(read_trace(wc62_dir / "traces" / f"trace{i:04d}.txt", duration_s=600.0))

    assert of(5).passes()
    eighteen = of(18)
    assert eighteen.counts.kpss_p < 0.05 and eighteen.bytes.kpss_p < 0.05
    assert of(14).passes()
