"""The soundness sweep (tailbound.experiments.bound_sweep): random scenarios packed to their
admission limit and replayed; no request may exceed its tenant's worst-case bound."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tailbound.experiments.bound_sweep import draw, run, summary
from tailbound.profiles import SsdProfile


@pytest.fixture(scope="module")
def profile(wc62_dir: Path) -> SsdProfile:
    return SsdProfile.load(wc62_dir / "profile_ssd.json")


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**31 - 1))
def test_no_request_exceeds_its_bound(seed: int, profile: SsdProfile, data_dir: Path) -> None:
    outcome = run(draw(seed), profile, data_dir)
    assert not outcome.exceeded, (outcome.case, outcome.ratios)


def test_the_sweep_covers_every_choice_and_binds(profile: SsdProfile, data_dir: Path) -> None:
    """A fixed batch: every policy, device, path and mode is drawn, tenants are admitted, no
    bound is exceeded, and some replay reaches more than half its bound (the test could fail)."""
    cases = [draw(seed) for seed in range(40)]
    assert {c.policy for c in cases} == {"workloadcompactor", "prioritymeister"}
    assert {c.device for c in cases} == {"ssd", "disk"}
    assert {c.path for c in cases} == {"storage", "network", "local"}
    assert {c.mode for c in cases} == {"shaping", "demotion"}
    assert {c.devices for c in cases} == {1, 2}
    assert {c.level_mpl for c in cases if c.policy == "workloadcompactor"} == {1, None}
    outcomes = [run(c, profile, data_dir) for c in cases]
    s = summary(outcomes)
    assert s["exceeded"] == 0 and s["tenants"] >= 40
    assert s["worst"] > 0.5


def test_prioritymeister_path_analysis_holds_in_simulation(
    profile: SsdProfile, data_dir: Path
) -> None:
    """PriorityMeister's end-to-end LP alone (``analysis="path"``, not the minimum with the
    per-stage sum) on PriorityMeister's scenarios among seeds 1000–1011 (every path drawn):
    tenants are admitted by it and no replayed request exceeds its bound."""
    cases = [
        dataclasses.replace(c, analysis="path")
        for c in (draw(seed) for seed in range(1000, 1012))
        if c.policy == "prioritymeister"
    ]
    assert {c.path for c in cases} == {"storage", "network", "local"}
    s = summary([run(c, profile, data_dir) for c in cases])
    assert s["exceeded"] == 0 and s["tenants"] >= 6, s


def test_an_lp_highs_leaves_unfinished_without_presolve_is_solved(
    profile: SsdProfile, data_dir: Path
) -> None:
    """Seed 9020 (PriorityMeister, network path, 11 candidates): one of its LPs ends with
    HiGHS's status "Unknown" without presolve; the analysis solves it again with presolve."""
    outcome = run(draw(9020), profile, data_dir)
    assert outcome.ratios and not outcome.exceeded


@pytest.mark.slow
def test_a_thousand_scenarios(profile: SsdProfile, data_dir: Path) -> None:
    outcomes = [run(draw(seed), profile, data_dir) for seed in range(1000)]
    s = summary(outcomes)
    assert s["scenarios"] == 1000 and s["exceeded"] == 0, s


def test_the_sweep_shows_progress_on_a_terminal_only(  # type: ignore[no-untyped-def]
    data_dir: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    import sys

    from tailbound.experiments.bound_sweep import main

    args = ["--scenarios", "2", "--out", str(tmp_path), "--data", str(data_dir)]
    main(args)
    assert capsys.readouterr().err == ""  # not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    main(args)
    err = capsys.readouterr().err
    assert "scenarios: 100%" in err and "2/2" in err
    main([*args, "--quiet"])
    assert capsys.readouterr().err == ""
