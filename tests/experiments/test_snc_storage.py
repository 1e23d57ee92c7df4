"""The storage experiment (thesis §4.4.6): a small run."""

from __future__ import annotations

from pathlib import Path

from tailbound.experiments.snc_storage import POLICIES, run


def test_small_run_admits_and_replays_with_devices(data_dir: Path) -> None:
    results, scale = run(data_dir, tenants=12, orders=1, seed=3, scale=None)
    assert scale >= 1
    by = {r.policy: r for r in results}
    assert sorted(by) == sorted(POLICIES)
    assert by["none"].admitted == 12  # no admission control admits everyone
    for name in ("snc-meister", "dnc", "silo", "qjump"):
        assert 0 < by[name].admitted <= 12
        assert 0 <= by[name].violations <= by[name].admitted
    assert all(r.worst_ratio > 0 for r in results)  # measured latencies, not empty replays


def test_small_run_classifies_violations_both_ways(data_dir: Path) -> None:
    """At a tight SLO scale some tenants miss: every violator that misses alone (network and
    device to itself) is one of the violators, in the same sense."""
    results, _ = run(data_dir, tenants=12, orders=1, seed=3, scale=1.0)
    assert sum(r.violations for r in results) > 0
    for r in results:
        assert set(r.whole_alone) <= set(r.whole) and set(r.window_alone) <= set(r.window)
        assert r.admitted == 0 or r.worst_window_ratio > 0
