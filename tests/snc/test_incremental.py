"""Memoised SNC-Meister bounds equal the full computation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailbound.model import Slo, Tenant, TenantSet
from tailbound.policies.admission import admit_in_order
from tailbound.snc.analysis import snc_bound_function
from tailbound.snc.incremental import IncrementalSnc
from tailbound.snc.tenants import FitCache


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
