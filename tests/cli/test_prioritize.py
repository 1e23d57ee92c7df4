from __future__ import annotations

from pathlib import Path

import pytest

from tailbound.cli.main import main
from tailbound.plan import Plan
from tailbound.stages import STORAGE_PATH

from .test_place import place_args, write_tenants


def test_prioritize_writes_priorities_and_buckets(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    tenants = write_tenants(tmp_path, wc62_dir, [2, 4, 13])
    placed, out = tmp_path / "plan.json", tmp_path / "plan-pm.json"
    profile = str(wc62_dir / "profile_ssd.json")
    assert main(place_args(tenants, wc62_dir, "--out", str(placed), "--quiet")) == 0
    code = main(
        [
            "prioritize",
            "--plan",
            str(placed),
            "--tenants",
            str(tenants),
            "--profile",
            profile,
            "--k",
            "3",
            "--out",
            str(out),
        ]
    )
    plan = Plan.load(out)
    assert plan.policy == "prioritymeister" and plan.meta["k"] == 3
    for t in plan.tenants:
        for s in STORAGE_PATH:
            buckets = t.buckets(s)
            assert 1 <= len(buckets) <= 4
            assert [r for r, _ in buckets] == sorted(r for r, _ in buckets)
    met = [t.latency_bound_s <= t.slo_s for t in plan.tenants]
    assert code == (0 if all(met) else 1)
    printed = capsys.readouterr().out
    assert "| tenant | net_in | storage | net_out |" in printed and "plan written" in printed


def test_prioritize_analysis_switch_the_default_bound_is_the_tighter(
    tmp_path: Path, wc62_dir: Path
) -> None:
    """``--analysis``: every tenant's bound by the default (the tighter of the per-stage sum and
    the path LP) is at most the one by either analysis alone under the same priorities."""
    tenants = write_tenants(tmp_path, wc62_dir, [2, 4, 13])
    placed = tmp_path / "plan.json"
    assert main(place_args(tenants, wc62_dir, "--out", str(placed), "--quiet")) == 0
    plans = {}
    for analysis in ("tighter", "stages", "path"):
        out = tmp_path / f"plan-{analysis}.json"
        argv = ["prioritize", "--plan", str(placed), "--tenants", str(tenants)]
        argv += ["--profile", str(wc62_dir / "profile_ssd.json"), "--analysis", analysis]
        main([*argv, "--out", str(out), "--quiet"])
        plans[analysis] = Plan.load(out)
    order = {a: {t.name: t.priority for t in p.tenants} for a, p in plans.items()}
    bound = {a: {t.name: t.latency_bound_s for t in p.tenants} for a, p in plans.items()}
    compared = 0
    for name, b in bound["tighter"].items():
        for other in ("stages", "path"):
            if order[other] == order["tighter"]:
                assert b <= bound[other][name] * (1 + 1e-9)
                compared += 1
    assert compared >= 3


def test_prioritize_bad_k_is_a_one_line_error(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(
        [
            "prioritize",
            "--plan",
            "x.json",
            "--tenants",
            "t.json",
            "--profile",
            str(wc62_dir / "profile_ssd.json"),
            "--k",
            "0",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "argument --k: expected an integer in [1, 64], got '0'" in err
    assert len(err.strip().splitlines()) == 1


def test_experiment_list_names_the_pm_reproductions(capsys: pytest.CaptureFixture) -> None:
    assert main(["experiment", "LIST"]) == 0
    printed = capsys.readouterr().out
    for name in (
        "pm_fig31",
        "pm_fig32",
        "pm_fig33",
        "pm_fig35",
        "pm_fig36",
        "pm_fig37",
        "pm_fig37_cake",
        "pm_fig37_ingress",
        "pm_fig39",
        "pm_fig512",
    ):
        assert name in printed
    assert "_common" not in printed


def test_experiment_unknown_name_is_an_error(capsys: pytest.CaptureFixture) -> None:
    assert main(["experiment", "nope"]) == 2
    assert "no experiment 'nope'" in capsys.readouterr().err
