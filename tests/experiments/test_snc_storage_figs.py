"""Figs. 4.17/4.18 (storage at 99.9% and 90% SLOs) and 4.19 (random SLO draws), small."""

from __future__ import annotations

from pathlib import Path

from tailbound.experiments import snc_fig417, snc_fig419


def test_slo_mixture_is_tighter_for_lower_numbers() -> None:
    slos = [snc_fig417.slo_of(i, 35) for i in range(35)]
    assert [slos.count(s) for s in snc_fig417.SLOS_S] == [12, 12, 11]
    assert slos == sorted(slos)
    assert snc_fig417.slo_of(0, 35, 2.0) == 0.3


def test_fig417_small_run(data_dir: Path, tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--tenants", "6", "--servers", "1"]
    assert snc_fig417.main(args) == 0
    text = (tmp_path / "snc_fig417.md").read_text()
    assert "| 99.9% | none | 6 | 100% |" in text and "| 90% | none | 6 | 100% |" in text
    detail = [x for x in text.splitlines() if x.startswith("| w")]
    assert len(detail) == 6  # one row per tenant
    assert (tmp_path / "snc_fig417.png").stat().st_size > 1000


def test_fig419_draws_and_dnc_ignores_the_percentile(data_dir: Path, tmp_path: Path) -> None:
    pop = snc_fig417.storage_population(data_dir, 6, 3, 1, seed=2)
    st = snc_fig417.Storage.of(data_dir, pop)
    slos = snc_fig419.draw_slos(6, 2, 0)
    assert set(slos) <= set(snc_fig419.SLO_GRID_S) and slos == snc_fig419.draw_slos(6, 2, 0)
    decided = [
        st.decide("dnc", snc_fig417.with_slos(pop.tenants, slos, p)).tenants
        for p in snc_fig419.PERCENTILES
    ]
    assert [t.name for t in decided[0]] == [t.name for t in decided[1]]
    rows = snc_fig419.run(data_dir, 6, 3, 1, draws=2, seed=2, replay=True)
    assert len(rows) == 2 * 2 * 2
    assert all(r.violations is not None and 0 <= r.admitted <= 6 for r in rows)
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--tenants", "5", "--draws", "1"]
    assert snc_fig419.main([*args, "--servers", "1"]) == 0
    assert "| 90% | dnc | 1 |" in (tmp_path / "snc_fig419.md").read_text()
