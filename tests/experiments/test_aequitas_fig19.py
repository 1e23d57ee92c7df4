"""``aequitas_fig19`` on a short run: SPQ's QoS_h tail grows with its share; the checks."""

from __future__ import annotations

import csv
from pathlib import Path

from tailbound.experiments import aequitas_fig19


def test_aequitas_fig19_short_run_spq_tail_grows_with_the_qos_h_share(tmp_path: Path) -> None:
    code = aequitas_fig19.main(
        [
            "--out",
            str(tmp_path),
            "--shares",
            "0.1,0.7",
            "--duration-s",
            "0.005",
            "--aequitas-shares",
            "0.6",
            "--aequitas-duration-s",
            "0.005",
        ]
    )
    assert code in (0, 1)
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["aequitas_fig19.csv"]
    with open(tmp_path / "aequitas_fig19.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["mode"], float(r["qos_h_share"])) for r in rows] == [
        ("spq", 0.1),
        ("spq", 0.7),
        ("aequitas", 0.6),
        ("aequitas_spq", 0.6),
    ]
    lo, hi = (float(r["qos_h_p999_us"]) for r in rows[:2])
    assert hi > 2 * lo
    assert abs(float(rows[1]["qos_m_run_share"]) - 0.2) < 0.02
    # The equilibrium's columns: set for the Aequitas rows, NaN for SPQ alone.
    assert rows[0]["qos_h_miss_pred"] == "nan"
    for r in rows[2:]:
        assert float(r["qos_h_rpcs_per_window"]) > 0
        assert 0 < float(r["qos_h_miss_pred"]) < 1
        assert float(r["qos_h_p999_pred_us"]) > 0


def test_check_names_each_failed_claim() -> None:
    def row(mode: str, x: float, h: float, m: float, pred: float = 20.0) -> dict[str, float | str]:
        return {
            "mode": mode,
            "qos_h_share": x,
            "qos_h_p999_us": h,
            "qos_m_p999_us": m,
            "slo_h_us": 15.0,
            "slo_m_us": 25.0,
            "qos_h_p999_pred_us": pred,
            "qos_m_p999_pred_us": 30.0,
        }

    ok = [
        row("spq", 0.1, 9.0, 12.0),
        row("spq", 0.7, 90.0, 500.0),
        row("aequitas", 0.3, 16, 24),
        row("aequitas", 0.7, 18, 27),
    ]
    assert aequitas_fig19.check(ok, 1.15, 1.1) == []
    bad = [
        row("spq", 0.1, 9.0, 12.0),
        row("spq", 0.7, 8.0, 20.0),
        row("aequitas", 0.3, 14, 24),
        row("aequitas", 0.7, 23, 27, pred=19.0),
    ]
    assert aequitas_fig19.check(bad, 1.15, 1.1) == [
        "SPQ alone meets the QoS_h SLO at 0.7: 8.0 µs",
        "SPQ alone: QoS_h tail does not grow with the share (9.0 → 8.0)",
        "Aequitas: qos_h tail at 0.7 23.0 µs > 1.15 × its 14.0 µs at 0.3",
        "Aequitas at QoS_h 0.7: qos_h 23.0 µs > 1.1 × 19.0 µs predicted by the equilibrium",
    ]
