"""``aequitas_fig21`` on a short run: 144 hosts, 25× bursts; columns and the checks."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tailbound.experiments import aequitas_fig21


def test_aequitas_fig21_short_run_writes_both_schemes(tmp_path: Path) -> None:
    # 0.3 ms of 144 hosts (~75k RPCs): shapes only.
    code = aequitas_fig21.main(["--out", str(tmp_path), "--duration-s", "0.0003"])
    assert code in (0, 1)
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["aequitas_fig21.csv"]
    with open(tmp_path / "aequitas_fig21.csv", newline="") as f:
        rows = {r["scheme"]: r for r in csv.DictReader(f)}
    assert tuple(rows) == ("wfq", "aequitas")
    assert float(rows["wfq"]["rpcs"]) == float(rows["aequitas"]["rpcs"]) > 10_000
    assert abs(float(rows["wfq"]["qos_h_run_share"]) - 0.6) < 0.02


def test_aequitas_fig21_takes_the_storage_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 8 hosts (144 hosts' first bursts alone are 82k RPCs) for 2 ms, the 10-MTU storage sizes.
    monkeypatch.setattr(aequitas_fig21, "N_HOSTS", 8)
    code = aequitas_fig21.main(
        ["--out", str(tmp_path), "--duration-s", "0.002", "--sizes", "storage-10mtu"]
    )
    assert code in (0, 1)
    with open(tmp_path / "aequitas_fig21.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["sizes"] for r in rows] == ["storage-10mtu"] * 2
    assert rows[0]["rpcs"] == rows[1]["rpcs"]


def test_check_names_each_failed_claim() -> None:
    def row(scheme: str, h: float, m: float) -> dict[str, float | str]:
        return {
            "scheme": scheme,
            "qos_h_p999_us_per_mtu": h,
            "qos_m_p999_us_per_mtu": m,
            "qos_h_slo_us_per_mtu": 25.0,
            "qos_m_slo_us_per_mtu": 35.0,
        }

    assert aequitas_fig21.check([row("wfq", 90, 80), row("aequitas", 24, 36)], 1.25) == []
    assert aequitas_fig21.check([row("wfq", 20, 80), row("aequitas", 24, 60)], 1.25) == [
        "qos_h: Aequitas 24.0 not below WFQ alone 20.0 µs/MTU",
        "qos_m: Aequitas 60.0 > 1.25 × 35 µs/MTU",
    ]
