"""``aequitas_fig17``: two channels share QoS_h max-min fairly (a simulation test); checks."""

from __future__ import annotations

import csv
from pathlib import Path

from tailbound.experiments import aequitas_fig17


def test_two_channels_converge_to_max_min_fair_shares(tmp_path: Path) -> None:
    # 0.2 s of the 3-host incast a scenario (~150k RPCs). Stated tolerances: each channel's
    # admitted QoS_h rate over the second half within 15% of its max-min fair share; in Fig. 18
    # the in-quota channel A keeps a 1st-percentile p_admit ≥ 0.7 and 9–11 Gb/s of its 10;
    # each reaches its band within 50 ms (the paper: 10 ms and 3 ms).
    code = aequitas_fig17.main(["--out", str(tmp_path), "--duration-s", "0.2"])
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["aequitas_fig17.csv"]
    with open(tmp_path / "aequitas_fig17.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert set(rows[0]) >= {"part", "scenario", "channel", "t_s", "p_admit", "qos_h_gbps"}
    summary = {(r["scenario"], int(r["channel"])): r for r in rows if r["part"] == "summary"}
    assert set(summary) == {(s, c) for s in ("fig17", "fig18") for c in (0, 1)}
    for r in summary.values():
        got, fair = float(r["qos_h_gbps"]), float(r["fair_gbps"])
        assert abs(got - fair) <= 0.15 * fair
        assert float(r["converge_ms"]) <= 50.0
        assert float(r["p999_us"]) <= 1.1 * 15.0
    a18 = summary[("fig18", 0)]
    assert float(a18["p_admit"]) >= 0.7 and 9.0 <= float(a18["qos_h_gbps"]) <= 11.0
    # Fig. 17: the two channels, asking 40 and 80 Gb/s, end within 15% of each other.
    a, b = (float(summary[("fig17", c)]["qos_h_gbps"]) for c in (0, 1))
    assert abs(a - b) <= 0.15 * max(a, b)
    assert len([r for r in rows if r["part"] == "time"]) == 2 * 2 * 200
    assert code in (0, 1)


def test_max_min_water_fills() -> None:
    assert aequitas_fig17.max_min(40.0, [40.0, 80.0]) == [20.0, 20.0]
    assert aequitas_fig17.max_min(38.0, [10.0, 80.0]) == [10.0, 28.0]
    assert aequitas_fig17.max_min(200.0, [10.0, 80.0]) == [10.0, 80.0]


def test_check_names_an_unfair_channel() -> None:
    rows = [
        {
            "part": "summary",
            "scenario": "fig18",
            "channel": 0,
            "qos_h_gbps": 5.0,
            "fair_gbps": 10.0,
            "converge_ms": 80.0,
            "in_band": 0.2,
            "p_admit": 0.5,
        },
    ]
    failures = aequitas_fig17.check(rows, 50.0)  # type: ignore[arg-type]
    assert len(failures) == 4 and all("fig18 channel A" in f for f in failures)
