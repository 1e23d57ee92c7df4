"""``aequitas_fig20`` on a short run: mixed 32/64 KiB RPCs, columns, arrivals, the checks."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tailbound.experiments import aequitas_fig20


def test_aequitas_fig20_short_run_lowers_normalised_tails(tmp_path: Path) -> None:
    # 20 ms (~150k RPCs): the controllers have not converged; only the direction is asserted.
    args = ["--out", str(tmp_path), "--duration-s", "0.02", "--calibration-duration-s", "0.02"]
    code = aequitas_fig20.main(args)
    assert code in (0, 1)
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["aequitas_fig20.csv"]
    with open(tmp_path / "aequitas_fig20.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    by = {(r["mode"], int(r["size_bytes"]), int(r["cls"])): r for r in rows}
    assert len(by) == 18
    # The SLOs: per class, the larger of the two sizes' per-MTU 99.9p under WFQ alone at the
    # target mix (0.2, 0.3, 0.5), used by every row.
    for c in (0, 1):
        cal = [float(by[("calibration", s, c)]["p999_us_per_mtu"]) for s in (32768, 65536)]
        for mode in ("calibration", "wfq", "aequitas"):
            for s in (32768, 65536):
                assert float(by[(mode, s, c)]["slo_us_per_mtu"]) == pytest.approx(max(cal))
                assert by[(mode, s, c)]["slo_source"] == "calibrated"
    assert abs(float(by[("calibration", 32768, 0)]["run_share"]) - 0.2) < 0.02
    # The equilibrium's columns: on the Aequitas rows of the controlled classes only.
    for size in (32768, 65536):
        assert float(by[("aequitas", size, 0)]["rpcs_per_window"]) > 0
        assert 0 < float(by[("aequitas", size, 0)]["miss_pred"]) < 1
        assert 0.1 <= float(by[("aequitas", size, 0)]["p_admit_last_tenth"]) <= 1
        assert by[("wfq", size, 0)]["miss_pred"] == "nan"
        assert by[("aequitas", size, 2)]["miss_pred"] == "nan"
    for size in (32768, 65536):
        for c in (0, 1):
            aeq = float(by[("aequitas", size, c)]["p999_us_per_mtu"])
            assert aeq < float(by[("wfq", size, c)]["p999_us_per_mtu"])
        assert abs(float(by[("wfq", size, 0)]["run_share"]) - 0.6) < 0.02


def test_arrivals_split_the_senders_into_two_sizes_of_equal_bytes() -> None:
    rpcs = aequitas_fig20.arrivals(0.01, seed=3)
    assert np.all(np.diff(rpcs.time_s) >= 0)
    assert set(np.unique(rpcs.size_bytes).tolist()) == {32768, 65536}
    # Each (src, dst) pair sends one size only, and both halves carry about the same bytes.
    pairs = rpcs.src.astype(np.int64) * 64 + rpcs.dst
    for p in np.unique(pairs)[:50]:
        assert len(np.unique(rpcs.size_bytes[pairs == p])) == 1
    small = rpcs.size_bytes[rpcs.size_bytes == 32768].sum()
    large = rpcs.size_bytes[rpcs.size_bytes == 65536].sum()
    assert 0.85 < small / large < 1.2


def test_check_names_a_missed_normalised_slo() -> None:
    rows = [
        {
            "mode": "aequitas",
            "size_bytes": 32768,
            "cls": 0,
            "slo_us_per_mtu": 2.0,
            "p999_us_per_mtu": 3.0,
        },
        {
            "mode": "aequitas",
            "size_bytes": 65536,
            "cls": 1,
            "slo_us_per_mtu": 3.0,
            "p999_us_per_mtu": 3.1,
        },
    ]
    failures = aequitas_fig20.check(rows, 1.25)  # type: ignore[arg-type]
    assert failures == ["QoS_h 32768 B: 3.00 µs/MTU > 1.25 × 2.00"]


def test_given_slos_replace_the_calibration(tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--duration-s", "0.003", "--slo-per-mtu", "3,5"]
    assert aequitas_fig20.main(args) in (0, 1)
    with open(tmp_path / "aequitas_fig20.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["mode"] for r in rows} == {"wfq", "aequitas"}
    assert {(r["cls"], r["slo_us_per_mtu"], r["slo_source"]) for r in rows if r["cls"] != "2"} == {
        ("0", "3.0", "given"),
        ("1", "5.0", "given"),
    }
    assert aequitas_fig20.windows_s((3e-6, 5e-6)) == pytest.approx((21e-3, 35e-3))


@pytest.mark.parametrize(
    "bad", [["--slo-per-mtu", "3"], ["--slo-per-mtu", "3,-1"], ["--target-mix", "0.5,0.6,0"]]
)
def test_bad_slos_or_mix_are_refused(tmp_path: Path, bad: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        aequitas_fig20.main(["--out", str(tmp_path), *bad])
    assert e.value.code == 2
