from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.characterize import RbCurve, exact_rb_curve, exact_rb_points, rb_curve, rbgen
from tailbound.characterize.reference import rbgen_brute_force
from tailbound.profiles import LinkModel, SsdProfile, stage_model
from tailbound.stages import Stage
from tailbound.traces import Trace
from tailbound.traces.readers import read_trace

from .conftest import bursty_trace


def assert_matches_dense_grid(time: np.ndarray, tokens: np.ndarray, mean: float) -> None:
    """The exact curve equals rbGen on a dense grid (within rounding), and at its vertices."""
    e = exact_rb_points(time, tokens, mean)
    assert np.all(np.diff(e.rates) > 0) and np.all(np.diff(e.buckets) <= 0)
    assert e.rates[0] == mean
    top = max(2 * e.rates[-1], mean * 1.5, 1e-9)
    grid = np.concatenate([np.linspace(mean, top, 3000), e.rates])
    dense = rbgen(time, tokens, grid)
    exact = np.interp(grid, e.rates, e.buckets)  # constant beyond the last vertex
    span = float(time[-1] - time[0]) if len(time) else 0.0
    tol = 1e-10 * (dense + grid * span + 1e-300)
    assert np.all(exact >= dense - tol), "exact curve below rbGen"
    assert np.all(exact <= dense + tol), "exact curve above rbGen: a breakpoint was missed"
    # the lines are real intervals' tangents: on or below rbGen everywhere
    lines = e.work[:, None] - grid[None, :] * e.duration[:, None]
    assert np.all(lines <= dense[None, :] + tol)


def assert_equal_on_grid(grid: RbCurve, exact: RbCurve) -> None:
    """A sampled curve equals the exact one at its rates; the grid's first rate is the mean
    rounded to 12 decimals, so the first points compare at the exact mean."""
    assert grid.buckets[1:] == pytest.approx(exact.bucket_at(grid.rates[1:]), rel=1e-9)
    assert grid.rates[0] == pytest.approx(exact.rates[0], rel=1e-10)
    assert grid.buckets[0] == pytest.approx(exact.buckets[0], rel=1e-7)


def test_exact_curve_hand_example() -> None:
    e = exact_rb_points([0.0, 1.0, 1.5], [1.0, 1.0, 1.0], 0.5)
    assert e.rates.tolist() == [0.5, 1.0, 2.0]
    assert e.buckets.tolist() == [2.25, 1.5, 1.0]
    assert e.work.tolist() == [3.0, 2.0, 1.0]


small_traces = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 50), min_size=n, max_size=n).map(sorted),
        st.lists(st.integers(0, 8), min_size=n, max_size=n),
    )
)


@settings(max_examples=150, deadline=None)
@given(small_traces, st.floats(0.0, 3.0), st.sampled_from(["tangents", "hull"]))
def test_exact_curve_equals_brute_force_on_small_traces(
    trace: tuple, min_rate: float, method: str
) -> None:
    time = np.array(trace[0], dtype=float) / 10
    tokens = np.array(trace[1], dtype=float) / 8
    e = exact_rb_points(time, tokens, min_rate, method=method)
    grid = np.concatenate([np.linspace(min_rate, min_rate + 20, 400), e.rates])
    brute = rbgen_brute_force(time, tokens, grid)
    exact = np.interp(grid, e.rates, e.buckets)
    assert exact == pytest.approx(brute, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_exact_curve_equals_dense_rbgen_on_bursty_traces(seed: int) -> None:
    t = bursty_trace(3000, seed)
    tokens = LinkModel(Stage.NET_OUT, 125e6).tokens(t)
    assert_matches_dense_grid(t.time, tokens, float(tokens.sum() / t.duration))


def test_exact_rb_curve_of_a_trace_is_an_rbcurve() -> None:
    t = bursty_trace(2000, 11, name="b11")
    model = LinkModel(Stage.NET_IN, 125e6)
    c = exact_rb_curve(t, model)
    assert c.stage == Stage.NET_IN and c.name == "b11"
    assert c.rates[0] == pytest.approx(c.mean_rate)
    same = rb_curve(t, model, exact=True)
    assert same.rates.tolist() == c.rates.tolist()
    grid = rb_curve(t, model)  # the WorkloadCompactor grid: equal to the exact curve on its rates
    assert_equal_on_grid(grid, c)


def test_exact_curve_single_request_and_steady_trace() -> None:
    one = Trace.from_arrays(time=[0.0], op=[0], size=[4096])
    c = exact_rb_curve(one, LinkModel(Stage.NET_OUT, 125e6))
    assert len(c) == 1 and c.buckets[0] == pytest.approx(
        LinkModel(Stage.NET_OUT, 125e6).tokens(one)[0]
    )
    steady = Trace.from_arrays(time=np.arange(100.0), op=[0] * 100, size=[4096] * 100)
    assert len(exact_rb_curve(steady, LinkModel(Stage.NET_OUT, 125e6))) == 1


@pytest.mark.parametrize("stage", list(Stage))
def test_exact_curve_of_wc62_trace0036(data_dir: Path, stage: Stage) -> None:
    trace = read_trace(data_dir / "wc62" / "traces" / "trace0036.txt")
    assert len(trace) == 110_849
    profile = SsdProfile.load(data_dir / "wc62" / "profile_ssd.json")
    model = stage_model(stage, link_bandwidth_bytes_per_s=125e6, profile=profile)
    tokens = model.tokens(trace)
    assert_matches_dense_grid(trace.time, tokens, float(tokens.sum() / trace.duration))


@pytest.mark.slow
def test_exact_curves_of_all_wc62_traces_match_the_wc_grid(data_dir: Path) -> None:
    profile = SsdProfile.load(data_dir / "wc62" / "profile_ssd.json")
    models = [stage_model(s, profile=profile) for s in Stage]
    for path in sorted((data_dir / "wc62" / "traces").glob("trace*.txt")):
        trace = read_trace(path)
        for model in models:
            assert_equal_on_grid(rb_curve(trace, model), exact_rb_curve(trace, model))


@pytest.mark.slow
def test_exact_curve_of_a_million_requests_matches_dense_rbgen() -> None:
    t = bursty_trace(1_000_000, 8)
    tokens = LinkModel(Stage.NET_OUT, 125e6).tokens(t)
    assert_matches_dense_grid(t.time, tokens, float(tokens.sum() / t.duration))


@pytest.mark.parametrize("seed", range(4))
def test_exact_methods_agree_on_bursty_traces(seed: int) -> None:
    t = bursty_trace(4000, 20 + seed)
    tokens = LinkModel(Stage.NET_OUT, 125e6).tokens(t)
    mean = float(tokens.sum() / t.duration)
    a = exact_rb_points(t.time, tokens, mean, method="tangents")
    h = exact_rb_points(t.time, tokens, mean, method="hull")
    assert (a.method, h.method) == ("tangents", "hull")
    assert h.rates == pytest.approx(a.rates, rel=1e-12)
    assert h.buckets == pytest.approx(a.buckets, rel=1e-12)


def test_exact_auto_switches_to_hull_for_concave_arrivals() -> None:
    # decelerating arrivals: every request is a breakpoint of the curve
    n = 3000
    time = np.arange(n, dtype=float) ** 2 / n
    tokens = np.full(n, 1e-3)
    mean = float(tokens.sum() / time[-1])
    e = exact_rb_points(time, tokens, mean)
    assert e.method == "hull" and len(e.rates) > n // 2 - 10
    assert_matches_dense_grid(time, tokens, mean)
    with pytest.raises(ValueError, match="method"):
        exact_rb_points(time, tokens, mean, method="grid")
