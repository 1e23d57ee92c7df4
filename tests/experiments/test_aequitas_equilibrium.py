"""The AIMD equilibrium of Aequitas' controller: misses per window, and the run it predicts."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from tailbound.errors import ConfigError
from tailbound.experiments import aequitas_equilibrium as eq
from tailbound.experiments import aequitas_fig11 as fig11
from tailbound.sim.network_rpc import NetworkAdmission, simulate_rpcs


def test_misses_per_window_of_both_rules() -> None:
    assert eq.misses_per_window(0.01, 0.01, 7, eq.PAPER) == pytest.approx(1 / 7)
    assert eq.misses_per_window(0.01, 0.01, 7, eq.ARTIFACT) == pytest.approx(math.log(8 / 7))
    # Small alpha / (beta size): both rules agree to first order.
    assert eq.misses_per_window(0.001, 0.1, 7, eq.ARTIFACT) == pytest.approx(1 / 700, rel=1e-3)
    with pytest.raises(ConfigError):
        eq.misses_per_window(0.01, 0.0, 7, eq.PAPER)
    with pytest.raises(ConfigError):
        eq.misses_per_window(0.01, 0.01, 7, "other")


def test_window_derived_or_explicit() -> None:
    assert eq.window_s(NetworkAdmission((15e-6, 25e-6)), 1) == pytest.approx(25e-3)
    adm = NetworkAdmission((15e-6,), target_percentile=(0.99,))
    assert eq.window_s(adm, 0) == pytest.approx(1.5e-3)
    assert eq.window_s(NetworkAdmission((15e-6,), increment_window_s=(2e-3,)), 0) == 2e-3


def test_miss_fraction_follows_rpcs_per_window_and_sets_the_overshoot() -> None:
    """Fig. 11's 3-host setup (SLO 15 µs, whole RPC, 120 000 RPCs, ~1.5 s a run): with the
    authors' 2 ms window a channel completes ~130 admitted QoS_h RPCs a window, the predicted
    miss fraction is ~0.1% and the 99.9p sits at the SLO; an 8 times shorter window leaves
    ~20 RPCs a window, ~0.6% misses, and the 99.9p well above the SLO. In both the measured
    miss fraction is the predicted one within 40%, and the SLO is the RNL quantile at the
    predicted miss fraction within 5%."""
    rpcs = fig11.incast_poisson(120_000, seed=1)
    slo = 15e-6
    out = {}
    for w in (2e-3, 0.25e-3):
        cfg = fig11.config(slo, seed=1)
        assert cfg.admission is not None
        adm = replace(cfg.admission, increment_window_s=(w,))
        run = simulate_rpcs(rpcs, replace(cfg, admission=adm))
        out[w] = (eq.equilibrium(run, adm, 0, 7), run.rnl_tail(0))
    for e, _ in out.values():
        assert 0.7 < e["f"] / e["f_pred"] < 1.4
        assert e["q_at_f_pred_s"] == pytest.approx(slo, rel=0.05)
    (long, tail_long), (short, tail_short) = out[2e-3], out[0.25e-3]
    assert 100 < long["rpcs_per_window"] < 160 and short["rpcs_per_window"] < 30
    assert long["f_pred"] < 0.0013 < 0.005 < short["f_pred"]
    assert tail_long <= 1.1 * slo < 1.25 * slo < tail_short


def test_command_check_names_a_miss_fraction_off_the_prediction() -> None:
    def row(variant: str, pred: float, got: float, p999: float) -> dict[str, float | str]:
        return {
            "variant": variant,
            "cls": 0,
            "miss_pred": pred,
            "miss_second_half": got,
            "p999_us": p999,
            "p_admit_drift_per_window": 0.001,
            "alpha": 0.01,
        }

    ok = [row("a", 0.001, 0.0012, 15.4), row("b", 0.006, 0.0066, 21.0)]
    assert eq.check(ok) == []
    # A row whose p_admit still moves is not held to the relation.
    moving = {**row("c", 0.002, 0.00001, 16.0), "p_admit_drift_per_window": 0.008}
    assert eq.check([*ok, moving]) == []
    bad = [row("a", 0.001, 0.003, 15.4), row("b", 0.006, 0.0066, 15.0)]
    assert eq.check(bad) == [
        "a, class 0: miss fraction 0.0030 vs predicted 0.0010",
        "class 0: 99.9p does not rise with the predicted miss fraction",
    ]
