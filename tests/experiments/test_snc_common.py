"""The shared output helpers of the SNC reproductions."""

from __future__ import annotations

from pathlib import Path

from tailbound.experiments._snc_common import plot_latency_ms, write_outputs


def test_snc_common_write_outputs_and_plot(tmp_path: Path) -> None:
    png = write_outputs(tmp_path, "fig", "Fig. X", ["n", "ms"], [[1, "2.0"], [2, "3.0"]])
    assert (tmp_path / "fig.md").read_text().startswith("# Fig. X\n\n")
    assert png == tmp_path / "fig.png"
    lines = [([1.0, 2.0], [0.002, 0.003], {"marker": "o", "label": "a"})]
    plot_latency_ms(png, lines, "n", "ms", log_y=True)
    assert png.read_bytes().startswith(b"\x89PNG")


def test_rehost_spreads_clients_round_robin_and_draws_servers() -> None:
    import pytest

    from tailbound.experiments._snc_common import rehost
    from tailbound.model import Slo, Tenant

    ts = [Tenant(f"t{i}", Slo(0.01), Path(f"x{i}"), "c", server="s") for i in range(9)]
    moved = rehost(ts, 3, 2, seed=1)
    assert [t.client_host for t in moved] == ["client00", "client01", "client02"] * 3
    assert {t.server for t in moved} == {"server0", "server1"}
    assert moved == rehost(ts, 3, 2, seed=1)  # seeded
    assert [t.name for t in moved] == [t.name for t in ts]
    with pytest.raises(ValueError, match="at least one"):
        rehost(ts, 0, 2, seed=1)


def test_judged_counts_only_misses_caused_by_sharing() -> None:
    from tailbound.experiments._snc_common import Judged

    ok = Judged("a", 0.010, 0.009, 0.0095, 0.001, 0.001)
    shared = Judged("b", 0.010, 0.008, 0.012, 0.001, 0.002)  # only a window misses
    alone = Judged("c", 0.010, 0.020, 0.020, 0.011, 0.011)  # misses even alone
    assert not ok.misses and not ok.violates
    assert shared.misses and shared.violates and shared.ratio == 1.2
    assert alone.misses and alone.misses_alone and not alone.violates


def test_replayer_judges_a_replay_and_keeps_latencies_alone(data_dir: Path) -> None:
    from tailbound.experiments._snc_common import Replayer, by_slo, bytes_per_s
    from tailbound.experiments.snc_fig410 import population

    pop = population(data_dir, 3, seed=3)
    replayer = Replayer(pop.second)
    tenants = list(pop.tenants)
    judged = replayer.judge(tenants, by_slo(tenants))
    assert [j.name for j in judged] == [t.name for t in tenants]
    assert len(replayer.alone) == 3
    for j in judged:
        # a tenant's latency with others present is never below its latency alone (floors.py)
        assert j.whole_s >= j.alone_whole_s > 0
        # the windows cover the half: the worst window's percentile is at least the whole's
        assert j.window_s >= j.whole_s
    assert replayer.judge([], []) == []
    assert 0 < bytes_per_s([pop.second[str(t.trace)] for t in tenants]) < 125e6
