from __future__ import annotations

import numpy as np
import pytest

from tailbound.characterize import burstiness, peak_rates
from tailbound.characterize.burstiness import interarrival_c2
from tailbound.profiles import LinkModel
from tailbound.stages import Stage
from tailbound.traces import Trace


@pytest.mark.parametrize(
    ("time", "weights", "scale", "expected"),
    [
        # a burst of 3 within 2 ms: 1 per ms window, 3 per 10 ms window
        ([0.0, 0.001, 0.002, 5.0], [1, 1, 1, 1], 0.001, 1000.0),
        ([0.0, 0.001, 0.002, 5.0], [1, 1, 1, 1], 0.01, 300.0),
        # a sliding window catches the burst straddling t = 1 s that 1 s tumbling windows split
        ([0.9, 0.95, 1.05, 1.1, 3.0], [1, 1, 1, 1, 1], 1.0, 4.0),
        # weights: work 0.2 + 0.3 in one 0.5 s window
        ([0.0, 0.4, 2.0], [0.2, 0.3, 0.1], 0.5, 1.0),
        # windows are half-open: [0, 1) excludes the request at 1.0
        ([0.0, 1.0], [1, 1], 1.0, 1.0),
        # a window longer than the trace: everything over the window length
        ([0.0, 1.0], [1, 1], 10.0, 0.2),
    ],
)
def test_peak_rates_by_hand(time: list, weights: list, scale: float, expected: float) -> None:
    assert peak_rates(time, weights, [scale])[0] == pytest.approx(expected)


def test_peak_rates_equal_brute_force_over_window_starts() -> None:
    rng = np.random.default_rng(5)
    t = np.sort(rng.uniform(0, 10, 300))
    w = rng.uniform(0, 1, 300)
    for scale in [0.01, 0.1, 1.0]:
        brute = max(w[(t >= s) & (t < s + scale)].sum() for s in t) / scale
        assert peak_rates(t, w, [scale])[0] == pytest.approx(brute)


@pytest.mark.parametrize(
    ("time", "expected"),
    [
        ([0.0, 1.0, 2.0, 3.0], 0.0),
        ([0.0, 1.0, 1.0, 4.0], 0.875),  # gaps 1, 0, 3: variance 14/9 over mean² 16/9
        ([0.0, 2.0, 3.0], 1 / 9),  # gaps 2, 1: variance 1/4 over mean² 9/4
    ],
)
def test_interarrival_c2_by_hand(time: list, expected: float) -> None:
    assert interarrival_c2(time) == pytest.approx(expected)


def test_interarrival_c2_of_poisson_is_near_one_and_undefined_cases() -> None:
    rng = np.random.default_rng(2)
    assert interarrival_c2(np.cumsum(rng.exponential(1.0, 200_000))) == pytest.approx(1, abs=0.02)
    assert np.isnan(interarrival_c2([1.0, 2.0]))
    assert np.isnan(interarrival_c2([1.0, 1.0, 1.0]))


def test_burstiness_summary_of_a_trace() -> None:
    t = Trace.from_arrays(time=[0.0, 0.001, 0.002, 1.0], op=[0, 0, 1, 1], size=[1000] * 4)
    s = burstiness(t, time_scales_s=[0.001, 1.0])
    assert (s.requests, s.duration_s, s.unit, s.mean_rate) == (4, 1.0, "requests/s", 4.0)
    assert s.peak_rates == pytest.approx((1000.0, 3.0))
    assert s.peak_to_mean_at(0.001) == pytest.approx(250.0)
    assert s.interarrival_c2 == pytest.approx(np.var([0.001, 0.001, 0.998]) / (1 / 3) ** 2)
    with pytest.raises(ValueError, match="no time scale"):
        s.peak_to_mean_at(0.5)
    # with a token model the rates are utilisations: a read puts 1300 B on net_out, a write 225 B
    model = LinkModel(Stage.NET_OUT, 1e6)
    w = burstiness(t, model, time_scales_s=[1.0])
    assert w.unit == "utilisation"
    assert w.mean_rate == pytest.approx((2 * 1300 + 2 * 225) / 1e6)
    assert w.peak_rates[0] == pytest.approx((2 * 1300 + 225) / 1e6)


def test_burstiness_of_zero_length_trace_has_nan_ratios() -> None:
    s = burstiness(Trace.from_arrays(time=[0.0], op=[0], size=[1]))
    assert np.isnan(s.mean_rate) and all(np.isnan(p) for p in s.peak_to_mean)
