"""Figs. 4.11 (against OPT), 4.12 (small requests) and 4.15 (cluster size) on small instances."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tailbound.experiments import snc_fig411, snc_fig412, snc_fig415
from tailbound.experiments._snc_common import Judged, Replayer
from tailbound.model import Slo, Tenant
from tailbound.policies.admission import Configured


class _Table(Replayer):
    """A replayer whose verdicts come from a table: the prefix lengths that fail."""

    def __init__(self, failing: set[int]) -> None:
        super().__init__({})
        self.failing = failing
        self.calls: list[int] = []

    def judge(
        self, tenants: Sequence[Tenant], configured: Sequence[Configured], mode: str = "shaping"
    ) -> list[Judged]:
        self.calls.append(len(tenants))
        bad = len(tenants) in self.failing
        return [Judged(t.name, 1.0, 2.0 if bad else 0.5, 0.5, 0.1, 0.1) for t in tenants]


def _tenants(n: int) -> list[Tenant]:
    return [Tenant(f"t{i}", Slo(1.0), Path(f"x{i}"), "c", server="s") for i in range(n)]


def test_opt_is_the_longest_passing_prefix_without_assuming_monotonicity() -> None:
    # prefixes of 3 and 5 fail but 4 passes: OPT is 4, found by trying 5 then 4
    table = _Table({3, 5})
    opt = snc_fig411.Opt(_tenants(5), table, {})
    assert opt.search() == 4
    assert table.calls == [5, 4]
    assert opt.search() == 4 and table.calls == [5, 4]  # memoised
    # everything fails but the empty prefix
    assert snc_fig411.Opt(_tenants(3), _Table({1, 2, 3}), {}).search() == 0


def test_oracle_skips_a_tenant_whose_arrival_breaks_the_set() -> None:
    table = _Table({3})  # any trial of three tenants fails
    admitted, judged, replays = snc_fig411.Opt(_tenants(5), table, {}).in_order()
    assert [t.name for t in admitted] == ["t0", "t1"] and replays == 5
    assert [j.name for j in judged] == ["t0", "t1"]


def test_fig411_small_run(data_dir: Path, tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--tenants", "5", "--orders", "2"]
    assert snc_fig411.main([*args, "--jobs", "2"]) == 0
    table = (tmp_path / "snc_fig411.md").read_text()
    for label in (*snc_fig411.POLICIES, *snc_fig411.OPTIMA):
        assert f"| {label} | 2 |" in table
    assert "OPT's search replayed" in table
    assert (tmp_path / "snc_fig411.png").stat().st_size > 1000


def test_fig411_opt_on_real_replays(data_dir: Path) -> None:
    rows = snc_fig411.run(data_dir, 6, [0], seed=5, scale=1.0, policies=("dnc",))
    by = {r.policy: r for r in rows}
    assert by["OPT"].violations == 0 and by["oracle"].violations == 0
    assert 0 <= by["OPT"].admitted <= by["oracle"].admitted <= 6
    assert by["OPT"].replays == 6 - by["OPT"].admitted + 1  # longest first, stops at OPT


def test_small_requests_keep_arrivals_and_fit_one_packet(data_dir: Path) -> None:
    from tailbound.profiles.tokens import MessageSizes

    pop = snc_fig412.mixed_population(data_dir, seed=1, small=2, large=2)
    assert [t.name for t in pop.tenants] == ["s00", "s01", "l00", "l01"]
    assert [t.slo_s for t in pop.tenants] == [0.004, 0.004, 0.05, 0.05]
    small = pop.second[str(pop.tenants[0].trace)]
    m = MessageSizes()
    assert m.request_bytes(small).max() <= 1500 and m.response_bytes(small).max() <= 1500
    large = pop.second[str(pop.tenants[2].trace)]
    assert m.request_bytes(large).max() > 1500 or m.response_bytes(large).max() > 1500
    with pytest.raises(ValueError):
        snc_fig412.mixed_population(data_dir, seed=1, small=12)


def test_fig412_small_run(data_dir: Path) -> None:
    rows = snc_fig412.run(data_dir, 1, seed=1, clients=2, servers=1, small=3, large=4)
    assert {r.policy for r in rows} == set(snc_fig412.POLICIES)
    for r in rows:
        assert 0 <= r.small <= 3 and 0 <= r.large <= 4
        assert r.violations + r.misses_alone <= r.admitted


def test_fig415_scales_tenants_and_hosts(data_dir: Path, tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--tenants", "6", "--clients", "2"]
    assert snc_fig415.main([*args, "--servers", "1", "--factors", "1,2", "--orders", "1"]) == 0
    lines = [
        x for x in (tmp_path / "snc_fig415.md").read_text().splitlines() if x[:3] in ("| 1", "| 2")
    ]
    cells = [[c.strip() for c in x.strip("|").split("|")] for x in lines]
    assert [(c[0], c[1], c[2]) for c in cells] == [("1", "6", "2+1"), ("2", "12", "4+2")]
    for c in cells:
        assert 0 <= float(c[3]) <= int(c[1]) and 0 <= float(c[4]) <= int(c[1])
    with pytest.raises(SystemExit):
        snc_fig415.main([*args, "--factors", "1,x"])


def test_fig411_orders_on_a_pool_equal_one_process(data_dir: Path) -> None:
    """Fig. 4.11's orders through the executor: on a local pool of two processes (each order
    one task, each process building the population once) every row but its timing is the one
    computed in this process."""
    from dataclasses import replace

    from tailbound.executor import Runner

    here = snc_fig411.run(data_dir, 5, [0, 1, 2], seed=3, scale=1.0, policies=("dnc",))
    pooled = snc_fig411.run(
        data_dir, 5, [0, 1, 2], seed=3, scale=1.0, policies=("dnc",), runner=Runner(jobs=2)
    )
    assert [r.order for r in here] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [replace(r, seconds=0.0) for r in pooled] == [replace(r, seconds=0.0) for r in here]
