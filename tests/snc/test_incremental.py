"""Memoised SNC-Meister bounds equal the full computation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailbound.model import Slo, Tenant, TenantSet
from tailbound.policies.admission import admit_in_order
from tailbound.snc.analysis import snc_bound_function
from tailbound.snc.incremental import IncrementalSnc, Part
from tailbound.snc.tenants import FitCache, slo_levels


def test_incremental_matches_full_admission(data_dir: Path) -> None:
    slos = [0.02, 0.01, 0.05, 0.1, 0.01, 0.02, 0.05, 0.01, 0.1, 0.02, 0.01, 0.05]
    specs = [
        Tenant(
            f"t{i}",
            Slo(slo),
            data_dir / "wc62" / "traces" / f"trace{(7 * i) % 62:04d}.txt",
            f"c{i % 3}",
            server=f"s{i % 2}",
        )
        for i, slo in enumerate(slos)
    ]
    tset = TenantSet(tuple(specs))
    fits = FitCache()
    inc = IncrementalSnc(tset, fits)
    fast = admit_in_order(specs, inc)
    full = admit_in_order(specs, snc_bound_function(tset, "snc-meister", fits))
    assert [d.admitted for d in fast] == [d.admitted for d in full]
    assert any(d.admitted for d in full) and not all(d.admitted for d in full)
    admitted = [d.tenant for d in full if d.admitted]
    for a, b in zip(inc(admitted), snc_bound_function(tset)(admitted), strict=True):
        assert a.latency_s == pytest.approx(b.latency_s, rel=1e-9)
        assert a.priority == b.priority
    # re-used: far fewer flows solved than one full evaluation per arrival
    assert inc.solved < sum(2 * (k + 1) for k in range(len(specs)))


def test_part_gets_the_larger_sets_bounds(data_dir: Path) -> None:
    """A :class:`Part` — two tenants of a dependency group on their own hosts, and ten sharing
    two client and two server hosts — of a larger set with 12 distinct SLOs (the last levels
    capped) and that group gets exactly the larger set's bounds; with its own levels, or with
    the all-flows search its independent tenants alone would get, some bounds differ."""
    slos = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.2, 0.3]
    trace = data_dir / "wc62" / "traces"
    specs = [
        Tenant(f"g{i}", Slo(slos[i]), trace / f"trace{i:04d}.txt", "cg", server="sg", group="g")
        for i in range(2)
    ] + [
        Tenant(
            f"t{i}",
            Slo(slo),
            trace / f"trace{10 + i:04d}.txt",
            f"c{i % 2}",
            server=f"s{(i // 2) % 2}",
        )
        for i, slo in enumerate(slos[2:])
    ]
    inc = IncrementalSnc(TenantSet(tuple(specs)), FitCache())
    whole = {b.name: b for b in inc(specs)}
    levels = slo_levels(t.slo_s for t in specs)
    for part in (specs[:2], specs[2:]):
        got = inc(Part(part, levels, memo=False, dependent=True, whole=len(specs)))
        assert got == [whole[t.name] for t in part]
        screen = inc.newcomer_bound(Part(part, levels, memo=False, dependent=True, whole=12))
        assert screen == whole[part[-1].name]
    part = specs[2:]
    want = [whole[t.name].latency_s for t in part]
    own_levels = Part(part, slo_levels(t.slo_s for t in part), memo=False, dependent=True, whole=12)
    assert [b.latency_s for b in inc(own_levels)] != want
    fast = Part(part, levels, memo=False, dependent=False, whole=12)  # last bits only
    assert [b.latency_s for b in inc(fast)] != want
    assert [b.latency_s for b in inc(fast)] == pytest.approx(want, rel=1e-12)
