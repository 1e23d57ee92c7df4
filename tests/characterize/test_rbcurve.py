from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.characterize import RbCurve, rb_curve, rbgen, wc_rate_grid
from tailbound.characterize.reference import rbgen_brute_force, rbgen_numpy
from tailbound.errors import ConfigError
from tailbound.profiles import LinkModel
from tailbound.stages import Stage
from tailbound.traces import Trace


def algorithm_2_1(time: list[float], tokens: list[float], rates: list[float]) -> list[float]:
    """Thesis Algorithm 2.1 written out literally, for checking the vectorised routes."""
    b = [0.0] * len(rates)
    bucket = [0.0] * len(rates)
    prev = 0.0
    for t, w in zip(time, tokens, strict=True):
        for i, r in enumerate(rates):
            bucket[i] = max(bucket[i] - r * (t - prev), 0.0) + w
            b[i] = max(b[i], bucket[i])
        prev = t
    return b


small_traces = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0, 5), min_size=n, max_size=n).map(sorted),
        st.lists(st.floats(0, 1), min_size=n, max_size=n),
    )
)


@settings(max_examples=200, deadline=None)
@given(small_traces, st.lists(st.floats(0.01, 10), min_size=1, max_size=5))
def test_rbgen_routes_agree_with_algorithm_2_1(trace: tuple, rates: list[float]) -> None:
    time, tokens = trace
    expected = algorithm_2_1(time, tokens, rates)
    assert rbgen_numpy(time, tokens, rates) == pytest.approx(expected, abs=1e-9)
    assert rbgen_brute_force(time, tokens, rates) == pytest.approx(expected, abs=1e-9)
    assert rbgen(time, tokens, rates) == pytest.approx(expected, abs=1e-9)


def test_rbgen_hand_example() -> None:
    # three unit requests at 0, 1, 1.5 s; at r=0.5 the bucket peaks at 1 + 0.5 + 0.75 = 2.25
    assert rbgen([0.0, 1.0, 1.5], [1.0, 1.0, 1.0], [0.5]).tolist() == [2.25]


def test_wc_rate_grid_steps_from_full_rate_to_mean() -> None:
    grid = wc_rate_grid(0.0123)
    assert grid[0] == 0.0123 and grid[-1] == 1.0 and len(grid) == 989
    assert np.allclose(np.diff(grid[1:]), 0.001)
    assert len(wc_rate_grid(1e-9)) == 1001  # 1000 grid rates plus the mean


def test_rb_curve_of_a_trace_is_non_increasing() -> None:
    rng = np.random.default_rng(1)
    t = Trace.from_arrays(
        time=np.cumsum(rng.exponential(1e-3, 2000)),
        op=rng.integers(0, 2, 2000),
        size=[65536] * 2000,
    )
    curve = rb_curve(t, LinkModel(Stage.NET_OUT, 125e6))
    assert curve.stage == Stage.NET_OUT
    assert np.all(np.diff(curve.buckets) <= 0)
    assert curve.rates[0] == pytest.approx(curve.mean_rate)


def test_rbcurve_bucket_at_interpolates_and_is_infinite_below() -> None:
    c = RbCurve(np.array([0.1, 0.5, 1.0]), np.array([2.0, 1.0, 0.5]), 0.1)
    assert c.bucket_at([0.05, 0.3, 0.75, 2.0]).tolist() == [np.inf, 1.5, 0.75, 0.5]


def test_rbcurve_arrival_curve_is_min_of_buckets() -> None:
    c = RbCurve(np.array([0.1, 1.0]), np.array([2.0, 0.5]), 0.1)
    # at t=1: min(2 + 0.1, 0.5 + 1) = 1.5; at t=10: min(3, 10.5) = 3
    assert c.arrival_curve([0.0, 1.0, 10.0]).tolist() == pytest.approx([0.5, 1.5, 3.0])


def test_rbcurve_scaled_multiplies_rate_and_bucket() -> None:
    c = RbCurve(np.array([0.1, 1.0]), np.array([2.0, 0.5]), 0.1).scaled(1.1)
    assert c.rates.tolist() == pytest.approx([0.11, 1.1]) and c.buckets.tolist() == pytest.approx(
        [2.2, 0.55]
    )


def test_rbcurve_csv_round_trip(tmp_path: Path) -> None:
    c = RbCurve(np.array([0.1, 1.0]), np.array([2.0, 0.5]), 0.1)
    c.to_csv(tmp_path / "c.csv")
    d = RbCurve.from_csv(tmp_path / "c.csv")
    assert d.rates.tolist() == c.rates.tolist() and d.buckets.tolist() == c.buckets.tolist()


def test_rbcurve_csv_errors_name_line(tmp_path: Path) -> None:
    bad = tmp_path / "c.csv"
    bad.write_text("rate,bucket_s\n0.1,2\n0.5,x\n")
    with pytest.raises(ConfigError, match="field line 3"):
        RbCurve.from_csv(bad)


@pytest.mark.parametrize(
    ("rates", "buckets"),
    [([0.5, 0.1], [1.0, 2.0]), ([0.1, 0.5], [1.0, 2.0]), ([], []), ([0.0, 1.0], [1.0, 0.5])],
)
def test_rbcurve_rejects_malformed_points(rates: list, buckets: list) -> None:
    with pytest.raises(ValueError):
        RbCurve(np.array(rates), np.array(buckets), 0.1)
