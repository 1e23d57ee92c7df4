"""Arrival-order admission with a pluggable bound function."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from tailbound.model import Slo, Tenant, load_tenants
from tailbound.policies.admission import admit_in_order, to_bound
from tailbound.snc.analysis import TenantBound, snc_bound_function
from tailbound.stages import Stage


def spec(name: str, slo: float) -> Tenant:
    return Tenant(name, Slo(slo), Path("unused"), "c", server="s")


def load_bound(tenants: Sequence[Tenant]) -> list[TenantBound]:
    """A toy bound: every tenant's latency is 10 ms per tenant present."""
    latency = 0.01 * len(tenants)
    return [TenantBound(t.name, 0, latency, latency / 2, latency / 2, None, t.slo) for t in tenants]


def test_admission_rejects_who_would_break_an_admitted_slo() -> None:
    tenants = [spec("a", 0.05), spec("b", 0.02), spec("c", 0.10), spec("d", 0.03)]
    decisions = admit_in_order(tenants, load_bound)
    # a alone 10 ms ok; b: 20 ms ok for both; c: 30 ms breaks b (20 ms); d: 30 ms breaks b
    assert [d.admitted for d in decisions] == [True, True, False, False]
    assert decisions[2].violated == ("b",)


def test_snc_meister_admission_on_wc62(write_tenants) -> None:  # type: ignore[no-untyped-def]
    tenants = [
        {
            "name": f"t{i}",
            "slo_s": slo,
            "trace_index": i,
            "client_host": f"c{i % 2}",
            "server_host": "s0",
        }
        for i, slo in enumerate([0.02, 0.05, 0.001, 0.05])
    ]
    tset = load_tenants(write_tenants(tenants))
    bounds = snc_bound_function(tset)
    decisions = admit_in_order(tset.tenants, bounds)
    assert [d.admitted for d in decisions] == [True, True, False, True]
    assert decisions[2].bound.latency_s > 0.001
    final = bounds([d.tenant for d in decisions if d.admitted])
    assert all(b.meets_slo and math.isfinite(b.latency_s) for b in final)


def test_bound_with_storage_device(write_tenants, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    tenants = [
        {
            "name": f"t{i}",
            "slo_s": 0.5,
            "trace_index": i,
            "client_host": f"c{i}",
            "server_host": "s0",
            "device": "ssd0",
        }
        for i in range(3)
    ]
    tset = load_tenants(
        write_tenants(tenants, ssd_profile=str(data_dir / "wc62" / "profile_ssd.json"))
    )
    bounds = snc_bound_function(tset)(tset.tenants)
    for b in bounds:
        assert b.latency_storage_s is not None and b.latency_storage_s > 0
        assert b.latency_s == math.fsum([b.latency_in_s, b.latency_out_s, b.latency_storage_s])
        assert to_bound(b, "snc-meister", False).stages[Stage.STORAGE] == b.latency_storage_s
