"""``aequitas_fig11`` on a small run: one CSV with the required columns, and what must hold."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from tailbound.experiments import aequitas_fig11


def test_aequitas_fig11_small_run_tracks_the_slo(tmp_path: Path) -> None:
    code = aequitas_fig11.main(["--out", str(tmp_path), "--rpcs", "40000", "--slos", "15,60"])
    assert code == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["aequitas_fig11.csv"]
    assert (tmp_path / "aequitas_fig11.png").stat().st_size > 0
    with open(tmp_path / "aequitas_fig11.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["slo_us"]) for r in rows] == [15.0, 60.0]
    for r in rows:
        assert float(r["achieved_p999_us"]) <= 1.1 * float(r["slo_us"])
        assert 0.0 < float(r["admitted_share"]) <= 1.0
    assert float(rows[1]["admitted_share"]) > float(rows[0]["admitted_share"])


def test_aequitas_fig11_arrivals_are_two_line_rate_poisson_senders() -> None:
    rpcs = aequitas_fig11.incast_poisson(20000, seed=4)
    assert np.all(np.diff(rpcs.time_s) >= 0) and np.all(rpcs.dst == 2)
    # Each sender at its line rate counting 7 headers of 40 B: 2 × 100 Gb/s over the run.
    wire = 8.0 * (32768 + 7 * 40) * len(rpcs)
    assert abs(wire / rpcs.duration_s / 200e9 - 1.0) < 0.03
    assert abs(float(np.mean(rpcs.cls == 0)) - 0.7) < 0.02
    assert abs(float(np.mean(rpcs.src == 0)) - 0.5) < 0.02


def test_aequitas_fig11_check_names_a_missed_point() -> None:
    rows = [
        {"slo_us": 15.0, "achieved_p999_us": 20.0, "admitted_share": 0.3},
        {"slo_us": 30.0, "achieved_p999_us": 20.0, "admitted_share": 0.2},
    ]
    failures = aequitas_fig11.check(rows)
    assert len(failures) == 2 and "SLO 15.0" in failures[0] and "falls" in failures[1]
