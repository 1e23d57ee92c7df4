"""``aequitas_fig10`` on a small run: one CSV with exactly the required columns, the simulated
worst-case delay within the issue's tolerance of Eq. (1) at every x, the inversion point."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.experiments import aequitas_fig10


@pytest.mark.parametrize("rho", [2.0, 1.2])
def test_aequitas_fig10_small_run_tracks_eq1(tmp_path: Path, rho: float) -> None:
    code = aequitas_fig10.main(
        ["--out", str(tmp_path), "--rpcs", "2000", "--step", "0.1", "--rho", str(rho)]
    )
    assert code == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["aequitas_fig10.csv"]
    assert (tmp_path / "aequitas_fig10.png").stat().st_size > 0
    with open(tmp_path / "aequitas_fig10.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == ["x", "simulated_delay", "eq1_delay"]
    xs = [float(r["x"]) for r in rows]
    assert 0.8 in xs and xs[-1] == 1.0  # φ/(φ + 1) is on the grid
    for r in rows:
        sim, eq1 = float(r["simulated_delay"]), float(r["eq1_delay"])
        assert abs(sim - eq1) <= 0.1 * eq1 + 0.05, r
    if rho == 2.0:  # the worked example, in its normalised units
        at = {float(r["x"]): float(r["eq1_delay"]) for r in rows}
        assert at[0.4] == 0.0 and at[0.6] == pytest.approx(0.2) and at[0.9] == pytest.approx(0.4)
        simulated = {float(r["x"]): float(r["simulated_delay"]) for r in rows}
        assert simulated[0.6] == pytest.approx(0.2, abs=2e-3)
        assert simulated[0.9] == pytest.approx(0.4, abs=2e-3)


def test_aequitas_fig10_burst_is_rho_times_the_link_with_an_even_mix() -> None:
    rpcs = aequitas_fig10.burst(0.3, 1000, 2.0)
    wire = aequitas_fig10.RPC_WIRE_BITS * len(rpcs)
    assert wire / rpcs.duration_s == pytest.approx(2.0 * 100e9)
    assert np.all(rpcs.src == 0) and np.all(rpcs.dst == 1)
    assert int((rpcs.cls == 0).sum()) == 300
    # evenly spread: every 10 consecutive RPCs hold exactly 3 of QoS_h
    assert set(np.add.reduceat(rpcs.cls == 0, np.arange(0, 1000, 10)).tolist()) == {3}


def test_aequitas_fig10_check_names_a_miss_and_a_misplaced_inversion() -> None:
    rows = [
        {"x": 0.5, "simulated_delay": 0.2, "eq1_delay": 0.1, "simulated_delay_l": 0.4},
        {"x": 0.6, "simulated_delay": 0.5, "eq1_delay": 0.2, "simulated_delay_l": 0.45},
    ]
    failures = aequitas_fig10.check(rows, phi=4.0, step=0.1)
    assert failures[0].startswith("x = 0.5") and failures[1].startswith("x = 0.6")
    assert "inversion at x = 0.6" in failures[2]
    ok = [dict(r, simulated_delay=r["eq1_delay"]) for r in rows]
    ok.append({"x": 0.8, "simulated_delay": 0.4, "eq1_delay": 0.4, "simulated_delay_l": 0.39})
    assert aequitas_fig10.check(ok, phi=4.0, step=0.2) == []


def test_aequitas_fig10_bad_options_are_refused_by_name(tmp_path: Path) -> None:
    for argv, field in (
        (["--phi", "0"], "phi"),
        (["--mu", "0"], "mu"),
        (["--rho", "0.5"], "rho"),
        (["--rpcs", "10"], "--rpcs"),
        (["--step", "0"], "--step"),
    ):
        with pytest.raises(ConfigError) as e:
            aequitas_fig10.main(["--out", str(tmp_path), *argv])
        assert e.value.field == field
