"""Results: percentiles with the SLO's meaning, stage times, throughput, sliding windows, and
requests still in flight when a run stops."""

from __future__ import annotations

import numpy as np
import pytest

from tailbound.sim import Slo, WorkloadResult, percentile, single_queue
from tailbound.sim.results import worst_window_percentile


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        ([5.0], 0.999, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.0),
        ([1.0, 2.0, 3.0, 4.0], 0.51, 3.0),
        ([1.0, 2.0, 3.0, 4.0], 1.0, 4.0),
        (list(range(1, 1001)), 0.999, 999.0),
    ],
)
def test_results_percentile_is_smallest_value_covering_p(values, p, expected) -> None:
    assert percentile(np.array(values, dtype=float), p) == expected


def test_results_slo_met_iff_fraction_within_latency() -> None:
    rng = np.random.default_rng(0)
    lat = rng.exponential(1.0, 10_000)
    issue = np.arange(lat.size, dtype=float)
    for bound in (0.5, 2.0, 6.9, 7.0, 10.0):
        w = WorkloadResult("w", ("storage",), issue, (issue + lat)[:, None], Slo(bound, 0.999))
        assert w.slo_met == bool(np.mean(lat <= bound) >= 0.999)


def test_results_worst_window_finds_the_bad_minute() -> None:
    issue = np.arange(0.0, 600.0, 0.01)
    lat = np.full(issue.size, 0.001)
    lat[(issue >= 300) & (issue < 320)] = 0.5  # 20 s of trouble inside one 180 s window
    assert percentile(lat, 0.999) == 0.5  # the whole run's p99.9 sees it too (3.3% of requests)
    assert worst_window_percentile(issue, lat, 0.999, 180.0) == 0.5
    lat[(issue >= 300) & (issue < 300.3)] = 0.5
    lat[(issue >= 300.3) & (issue < 320)] = 0.001
    # 30 requests: 0.05% of the run (p99.9 misses them) but 0.17% of a 3-minute window
    assert percentile(lat, 0.999) == 0.001
    assert worst_window_percentile(issue, lat, 0.999, 180.0) == 0.5


def test_results_stage_times_and_unfinished_requests() -> None:
    sim = single_queue([np.array([0.0, 0.0, 0.0])], [np.array([1.0, 1.0, 1.0])])
    sim.run(2.5)
    w = sim.results().workloads[0]
    assert w.finished.tolist() == [True, True, False]
    assert w.latency.tolist() == [1.0, 2.0]
    assert w.stage_time[:, 0].tolist() == [1.0, 2.0]
    assert w.throughput() == pytest.approx(1.0)
    sim.run()
    w = sim.results().workloads[0]
    assert w.percentiles()[1.0] == 3.0 and w.percentiles()[0.5] == 2.0


def test_results_judged_whole_run_and_worst_window_by_hand() -> None:
    """One request a second for 300 s, 30 of them (200–229 s) slow. Over the whole run 10% are
    slow, so the 90th percentile (the smallest value covering 90%) is the fast one. The 13
    windows of 180 s start every 10 s (0, 10, ..., 120); [60, 240) holds all 30 slow requests
    among its 180 (16.7%), so its 90th percentile is the slow one; [0, 180) holds none."""
    from tailbound.sim.results import SLO_WINDOW_S, SLO_WINDOW_STEP_S, Judged

    issue = np.arange(0.0, 300.0, 1.0)
    lat = np.full(issue.size, 0.001)
    lat[200:230] = 0.009
    w = WorkloadResult("w", ("net",), issue, (issue + lat)[:, None], Slo(0.005, 0.9))
    assert (SLO_WINDOW_S, SLO_WINDOW_STEP_S) == (180.0, 10.0)
    judged = w.judged(0.9)
    assert judged == Judged(pytest.approx(0.001), pytest.approx(0.009))
    assert judged.misses(0.005) == (False, True)
    assert judged.misses(0.01) == (False, False)
    # the windows start at the first request, every 10 s: with the slow requests in the last 40
    # requests (260–299 s), only the last window [120, 300) sees them: 40 of 180 = 22%
    lat[:] = 0.001
    lat[260:300] = 0.009
    w = WorkloadResult("w", ("net",), issue, (issue + lat)[:, None], Slo(0.005, 0.9))
    assert w.judged(0.9).window_s == pytest.approx(0.009)
    assert worst_window_percentile(issue, lat, 0.9, 180.0, 10.0) == pytest.approx(0.009)
    # 20 slow requests: 11% of [120, 300), under 10% of every window ending before 300 s
    lat[:] = 0.001
    lat[280:300] = 0.009
    assert worst_window_percentile(issue, lat, 0.9, 180.0, 10.0) == pytest.approx(0.009)
    assert worst_window_percentile(issue, lat[::-1].copy(), 0.9, 180.0, 10.0) == pytest.approx(
        0.009
    )
