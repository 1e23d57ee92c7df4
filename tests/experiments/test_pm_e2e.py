"""The comparison of PriorityMeister's per-stage and end-to-end bounds
(tailbound.experiments.pm_e2e): the table's rows and that the default analysis takes the
smaller bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailbound.experiments import pm_e2e
from tailbound.policies.prioritymeister import PmTenant, latencies
from tailbound.stages import Stage


def test_compare_gives_both_bounds_and_the_default_is_their_minimum() -> None:
    queues = {Stage.NET_IN: ("w.out",), Stage.NET_OUT: ("w.in",)}
    buckets = dict.fromkeys(queues, ((0.5, 0.05),))
    w = PmTenant("w", 1.0, queues, buckets, {}, ((0.5, 0.05),), dict.fromkeys(queues, 0.005))
    prio = {"w": dict.fromkeys(queues, 0)}
    pairs = pm_e2e.compare([w], prio, None)
    assert pairs["w"] == (pytest.approx(0.1), pytest.approx(0.055))
    assert latencies([w], prio)["w"] == pytest.approx(min(pairs["w"]))
    r = pm_e2e.row("one", "reference", pairs)
    assert (r["path_tighter"], r["stages_tighter"], r["ratio_min"]) == (1, 0, 0.55)


def test_pm_e2e_writes_its_table(tmp_path: Path, data_dir: Path) -> None:
    code = pm_e2e.main(
        [
            "--out",
            str(tmp_path),
            "--data",
            str(data_dir),
            "--duration",
            "10",
            "--groups",
            "1",
            "--group",
            "3",
            "--window",
            "30",
        ]
    )
    assert code == 0
    assert (tmp_path / "pm_e2e.png").stat().st_size > 0
    table = (tmp_path / "pm_e2e.md").read_text()
    for setup in ("fig33 (disk)", "fig35 F (disk)", "fig37", "wc62 C0..C2"):
        assert f"| {setup} | reference |" in table and f"| {setup} | sound |" in table


def test_wc62_replay_stays_within_the_default_bounds(data_dir: Path) -> None:
    """Two wc62 groups of three replayed under PriorityMeister's plan: with either server model
    no simulated latency exceeds the default (smaller of the two) bound."""
    rows = pm_e2e.replay_rows(data_dir / "wc62", groups=2, size=3, window_s=40.0, k=3)
    assert [(r["setup"], r["model"]) for r in rows] == [
        ("wc62 C0..C2", "reference"),
        ("wc62 C0..C2", "sound"),
        ("wc62 C3..C5", "reference"),
        ("wc62 C3..C5", "sound"),
    ]
    for r in rows:
        assert r["requests"] > 0 and r["tenants"] == 3
        assert r["exceeded"] == 0 and r["worst_over_bound"] <= 1.0, r
