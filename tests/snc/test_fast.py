"""The all-flows-at-once SNC-Meister path equals the per-flow operator trees."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tailbound.snc.fast import snc_meister_all
from tailbound.snc.network import flow_latencies, snc_meister
from tailbound.snc.tenants import FitCache, TenantSet, TenantSpec, build_network


def scenario(data: Path, n: int, hosts: int, link: float) -> TenantSet:
    specs = []
    for i in range(n):
        client = i % hosts
        server = (client + 1 + (i // hosts) % (hosts - 1)) % hosts
        specs.append(
            TenantSpec(
                name=f"T{i}",
                slo_s=(0.01, 0.02, 0.05, 0.1)[i % 4],
                trace=data / "wc62" / "traces" / f"trace{i % 62:04d}.txt",
                client_host=f"h{client}",
                server_host=f"h{server}",
                percentile=(0.999, 0.99)[i % 2],
            )
        )
    return TenantSet(tuple(specs), link)


@pytest.mark.parametrize(("n", "hosts", "link"), [(12, 4, 125e6), (10, 3, 20e6)])
def test_fast_path_equals_operator_trees(data_dir: Path, n: int, hosts: int, link: float) -> None:
    tset = scenario(data_dir, n, hosts, link)
    net, _, _ = build_network(tset, tset.tenants, FitCache())
    fast = snc_meister_all(net, list(net.flows))
    assert fast is not None
    for flow in net.flows:
        general = snc_meister(net, flow)
        if math.isinf(general):
            assert math.isinf(fast[flow.id])
        else:
            assert fast[flow.id] == pytest.approx(general, rel=1e-12)


def test_fast_path_declines_dependency_groups(data_dir: Path) -> None:
    base = scenario(data_dir, 4, 2, 125e6)
    grouped = TenantSet(
        tuple(TenantSpec(**{**t.__dict__, "group": "g"}) for t in base.tenants), 125e6
    )
    net, _, _ = build_network(grouped, grouped.tenants, FitCache())
    assert snc_meister_all(net, list(net.flows)) is None
    # flow_latencies still answers, through the general path
    assert all(v > 0 for v in flow_latencies(net, "snc-meister").values())
