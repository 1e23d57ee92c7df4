"""The Fig. 4.10 admission experiment on a small configuration."""

from __future__ import annotations

from pathlib import Path

from tailbound.experiments import snc_fig410
from tailbound.experiments.snc_fig410 import DNC_POLICIES, POLICIES, arrivals, population


def test_population_shifts_and_halves(data_dir: Path) -> None:
    pop = population(data_dir, 70, seed=3)
    assert len(pop.tenants) == 70
    keys = [str(t.trace) for t in pop.tenants]
    assert len(set(keys)) == 70  # a reused trace gets its own shift
    assert {t.client_host for t in pop.tenants} == {f"client{i:02d}" for i in range(12)}
    assert {t.server for t in pop.tenants} <= {f"server{i}" for i in range(6)}
    for k in keys[:3]:
        first, second = pop.first[k], pop.second[k]
        assert first.duration == second.duration == 300.0
        assert first.time.max() < 300.0 and second.time.max() < 300.0
    # orders differ, SLOs come from the scaled set, and an order is reproducible
    a, b = arrivals(pop, 0, 3, 2.0), arrivals(pop, 1, 3, 2.0)
    assert [t.name for t in a] != [t.name for t in b]
    assert {t.slo_s for t in a} <= {0.02, 0.04, 0.1, 0.2}
    assert [(t.name, t.slo_s) for t in a] == [(t.name, t.slo_s) for t in arrivals(pop, 0, 3, 2.0)]


def test_small_run_writes_table_and_plot(data_dir: Path, tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--tenants", "16", "--orders", "2"]
    assert snc_fig410.main([*args, "--scale", "2", "--replay-orders", "1"]) == 0
    table = (tmp_path / "snc_fig410.md").read_text()
    for policy in POLICIES:
        assert f"| {policy} | {snc_fig410.RULES[policy]} | 2 |" in table
    assert "Admitted tenants per order" in table
    header = next(line for line in table.splitlines() if line.startswith("| policy |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    rows = {
        cells[0]: dict(zip(columns, cells, strict=True))
        for line in table.splitlines()
        if line.startswith("| ")
        and (cells := [c.strip() for c in line.strip("|").split("|")])
        and cells[0] in POLICIES
        and len(cells) == len(columns)
    }
    for policy, row in rows.items():
        for sense in ("whole half", "window"):
            total = row[
                "violations, whole half"
                if sense == "whole half"
                else "violations, worst 180 s window"
            ]
            alone = int(row[f"of which miss alone ({sense})"])
            sharing = int(row[f"through sharing ({sense})"])
            assert alone + sharing == int(total), (policy, sense)
    assert rows["snc-meister"]["admission rule"] == (
        "SNC bound plus its error alone, measured floor alone; split levels; work beyond the "
        "decision trace's load demoted"
    )
    assert rows["snc-meister-unpoliced"]["admission rule"] == (
        "SNC bound plus its error alone, measured floor alone; split levels"
    )
    assert rows["snc-meister-model"]["admission rule"] == "SNC bound only (thesis)"
    # policing changes what is enforced, not who is admitted
    assert (
        rows["snc-meister"]["admitted (median)"]
        == rows["snc-meister-unpoliced"]["admitted (median)"]
    )
    # the DNC baselines' worst-case bounds hold on the traces the decisions were made from
    for policy in DNC_POLICIES:
        assert rows[policy]["violations replaying the first halves"] == "0", policy
    assert (tmp_path / "snc_fig410.png").stat().st_size > 1000


def test_interval_option_fits_on_shorter_intervals(data_dir: Path, tmp_path: Path) -> None:
    import numpy as np

    from tailbound.experiments.snc_fig410 import caches
    from tailbound.snc.mmpp import fit_mmpp
    from tailbound.snc.tenants import TenantSet, work

    pop = population(data_dir, 2, seed=3)
    fits, _ = caches(pop, 100_000_000)
    spec = pop.tenants[0]
    tset = TenantSet(pop.tenants)
    model = fits.model(spec, "in", tset)
    req = fits.requests[str(spec.trace)]
    expect = fit_mmpp(req.arrival_ns, work(req, "in", tset), 100_000_000)
    np.testing.assert_array_equal(model.p_request, expect.p_request)
    # 0.1 s intervals from 0 to the last arrival of the 300 s first half
    assert model.state_of_interval is not None
    assert model.state_of_interval.size == req.arrival_ns.max() // 100_000_000 + 1 > 2900
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--tenants", "4", "--orders", "1"]
    assert snc_fig410.main([*args, "--scale", "2", "--mmpp-interval-s", "0.5"]) == 0
    table = (tmp_path / "snc_fig410_interval0.5.md").read_text()
    assert "MMPP interval 0.5 s" in table
    assert not (tmp_path / "snc_fig410.md").exists()


def test_stationary_only_builds_tenants_from_the_traces_passing_the_tests(
    data_dir: Path, tmp_path: Path
) -> None:
    from tailbound.experiments.snc_fig410 import stationary_traces

    vetted = stationary_traces(data_dir)
    assert 14 in vetted and 18 not in vetted  # see tests/traces/test_stationarity.py
    pop = population(data_dir, 5, seed=3, traces=(5, 14))
    assert [Path(str(t.trace)).name.split("@")[0] for t in pop.tenants] == [
        "trace0005.txt",
        "trace0014.txt",
    ] * 2 + ["trace0005.txt"]
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--tenants", "4", "--orders", "1"]
    assert snc_fig410.main([*args, "--scale", "2", "--stationary-only"]) == 0
    table = (tmp_path / "snc_fig410_stationary.md").read_text()
    assert f"from the {len(vetted)} stationary wc62 traces" in table


def test_joint_policy_never_misses_on_the_decision_data(data_dir: Path, tmp_path: Path) -> None:
    """snc-meister-joint admits a tenant only if the replay of the admitted set with it, on the
    first halves, meets every SLO: replaying the final admitted set's first halves under the
    same priorities is its last check, so it has no miss there by construction."""
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--tenants", "12", "--orders", "1"]
    assert snc_fig410.main([*args, "--scale", "1", "--policies", "snc-meister-joint,dnc"]) == 0
    table = (tmp_path / "snc_fig410_snc-meister-joint+dnc.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| snc-meister-joint |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    column = dict(zip(snc_fig410.HEADER, cells, strict=True))
    assert int(column["admitted (median)"]) > 0  # admitted some
    assert column["violations replaying the first halves"] == "0"
    assert "| silo |" not in table


def test_unknown_policy_is_refused(data_dir: Path, tmp_path: Path) -> None:
    import pytest

    with pytest.raises(SystemExit):
        snc_fig410.main(["--out", str(tmp_path), "--policies", "snc-meister,psychic"])


def test_violator_lines_count_orders_and_mark_misses_alone() -> None:
    from tailbound.experiments.snc_fig410 import OrderResult, violator_lines

    def result(
        order: int, violators: tuple[str, ...], alone: tuple[str, ...], window: tuple[str, ...]
    ) -> OrderResult:
        return OrderResult(
            order, "dnc", 10, 1.0, True, violators, (), alone, 1.5, 0.1, window, alone, 1.6
        )

    w001, w014 = "w001/trace0001", "w014/trace0014"
    results = [
        result(0, (w001, w014), (w014,), (w001, w014)),
        result(1, (w014,), (w014,), (w014,)),
    ]
    assert [len(r.sharing) for r in results] == [1, 0]
    assert violator_lines(results, ["dnc"]).splitlines() == [
        "- dnc, second halves: w014/trace0014 ×2 (2 alone), w001/trace0001 ×1",
        "- dnc, second halves, worst window: w014/trace0014 ×2 (2 alone), w001/trace0001 ×1",
        "- dnc, through sharing: w001/trace0001 (order 0)",
        "- dnc, through sharing, worst window: w001/trace0001 (order 0)",
        "- dnc, first halves: none",
    ]
    assert violator_lines(results, ["dnc"], most=1).splitlines()[0] == (
        "- dnc, second halves: w014/trace0014 ×2 (2 alone), and 1 more"
    )


def test_classify_counts_a_miss_alone_only_in_the_sense_it_misses_alone() -> None:
    """Issue 14's rule: a violator whose own replay alone misses in the same sense (whole half,
    or worst window) misses alone; every other violator misses through sharing."""
    from tailbound.experiments.snc_fig410 import classify
    from tailbound.model import Slo, Tenant
    from tailbound.sim.results import Judged

    def tenant(name: str) -> Tenant:
        return Tenant(name, Slo(0.05), Path("x"), "c", server="s")

    a, b, c, d = (tenant(n) for n in "abcd")
    shared = [Judged(0.06, 0.08), Judged(0.04, 0.06), Judged(0.06, 0.07), Judged(0.01, 0.02)]
    alone = [Judged(0.055, 0.06), Judged(0.01, 0.055), Judged(0.01, 0.02), Judged(0.06, 0.07)]
    whole, whole_alone, window, window_alone = classify([a, b, c, d], shared, alone)
    assert [t.name for t in whole] == ["a", "c"]  # d misses alone but not when shared
    assert [t.name for t in whole_alone] == ["a"]  # c: through sharing
    assert [t.name for t in window] == ["a", "b", "c"]
    assert [t.name for t in window_alone] == ["a", "b"]
