"""The stationarity diagnostic of the wc62 traces (tailbound.experiments.snc_stationarity)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tailbound.experiments import snc_stationarity
from tailbound.experiments.snc_stationarity import window_percentiles


def test_windows_are_circular_and_take_the_percentile_of_their_requests() -> None:
    # one request per second of a 10 s trace; latency = 1 ms except 50 ms at second 8
    times = np.arange(10.0)
    latencies = np.where(times == 8, 0.050, 0.001)
    windows = window_percentiles(times, latencies, 10.0, 5.0, 1.0)
    # windows starting at 4..8 hold second 8; the one starting at 9 wraps to 9, 0, 1, 2, 3
    assert windows.tolist() == [0.001] * 4 + [0.050] * 5 + [0.001]


def test_an_empty_window_is_nan() -> None:
    windows = window_percentiles(np.array([0.5]), np.array([0.002]), 10.0, 2.0, 5.0)
    assert windows[0] == 0.002 and np.isnan(windows[1])


def test_table_names_trace_14_as_passing_with_an_unstable_tail(
    data_dir: Path, tmp_path: Path
) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--traces", "14,18", "--step-s", "30"]
    assert snc_stationarity.main(args) == 0
    table = (tmp_path / "snc_stationarity.md").read_text()
    row = {
        line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| 1")
    }
    assert "| yes |" in row["14"] and "| no |" in row["18"]
    cells = [c.strip() for c in row["14"].strip("|").split("|")]
    best, worst = float(cells[7]), float(cells[8])
    assert worst > 2.5 * best > 30.0  # a 69 ms burst in some 300 s windows only
    assert "1 of them pass the tests: 14." in table
    assert (tmp_path / "snc_stationarity.png").stat().st_size > 1000


def test_bad_trace_numbers_are_refused(data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        snc_stationarity.main(["--out", str(tmp_path), "--data", str(data_dir), "--traces", "62"])
