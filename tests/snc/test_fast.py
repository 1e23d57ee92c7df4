"""The all-flows-at-once SNC-Meister path equals the per-flow operator trees."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from tailbound.model import Slo, Tenant, TenantSet
from tailbound.snc.fast import snc_meister_all
from tailbound.snc.network import flow_latencies, snc_meister
from tailbound.snc.tenants import FitCache, build_network


def scenario(data: Path, n: int, hosts: int, link: float, traces: int = 62) -> TenantSet:
    specs = []
    for i in range(n):
        client = i % hosts
        server = (client + 1 + (i // hosts) % (hosts - 1)) % hosts
        specs.append(
            Tenant(
                name=f"T{i}",
                slo=Slo((0.01, 0.02, 0.05, 0.1)[i % 4], (0.999, 0.99)[i % 2]),
                trace=data / "wc62" / "traces" / f"trace{i % traces:04d}.txt",
                client_host=f"h{client}",
                server=f"h{server}",
            )
        )
    return TenantSet(tuple(specs), link)


CASES = [(12, 4, 125e6, 62), (10, 3, 20e6, 62), (9, 3, 60e6, 3), (16, 4, 125e6, 62)]


@pytest.mark.parametrize(("n", "hosts", "link", "traces"), CASES)
@pytest.mark.parametrize("engine", ["rust", "numpy"])
def test_fast_path_equals_operator_trees(
    data_dir: Path, n: int, hosts: int, link: float, traces: int, engine: str
) -> None:
    # traces=3: tenants share traces, hence model objects (a source counted once per flow).
    tset = scenario(data_dir, n, hosts, link, traces)
    net, _, _ = build_network(tset, tset.tenants, FitCache())
    fast = snc_meister_all(net, list(net.flows), engine)
    assert fast is not None
    for flow in net.flows:
        general = snc_meister(net, flow)
        if math.isinf(general):
            assert math.isinf(fast[flow.id])
        else:
            assert fast[flow.id] == pytest.approx(general, rel=1e-12)


@pytest.mark.parametrize(("n", "hosts", "link", "traces"), CASES)
def test_fast_path_rust_search_equals_numpy_search(
    data_dir: Path, n: int, hosts: int, link: float, traces: int
) -> None:
    tset = scenario(data_dir, n, hosts, link, traces)
    net, _, _ = build_network(tset, tset.tenants, FitCache())
    rust = snc_meister_all(net, list(net.flows), "rust")
    numpy = snc_meister_all(net, list(net.flows), "numpy")
    assert rust is not None and numpy is not None
    for key, value in numpy.items():
        if math.isinf(value):
            assert math.isinf(rust[key])
        else:
            assert rust[key] == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_fast_path_rust_search_same_floats_on_any_thread_count(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, threads: str
) -> None:
    # TAILBOUND_SNC_THREADS fixes the Rust search's thread count; each source computes its
    # thetas in the same order on any count, so the bounds are the same floats.
    tset = scenario(data_dir, 16, 4, 125e6)
    net, _, _ = build_network(tset, tset.tenants, FitCache())
    monkeypatch.delenv("TAILBOUND_SNC_THREADS", raising=False)
    default = snc_meister_all(net, list(net.flows), "rust")
    monkeypatch.setenv("TAILBOUND_SNC_THREADS", threads)
    assert snc_meister_all(net, list(net.flows), "rust") == default


def test_fast_path_rejects_unknown_engine(data_dir: Path) -> None:
    tset = scenario(data_dir, 2, 2, 125e6)
    net, _, _ = build_network(tset, tset.tenants, FitCache())
    with pytest.raises(ValueError, match="engine"):
        snc_meister_all(net, list(net.flows), "fortran")


def test_fast_path_declines_dependency_groups(data_dir: Path) -> None:
    base = scenario(data_dir, 4, 2, 125e6)
    grouped = TenantSet(tuple(dataclasses.replace(t, group="g") for t in base.tenants), 125e6)
    net, _, _ = build_network(grouped, grouped.tenants, FitCache())
    assert snc_meister_all(net, list(net.flows)) is None
    # flow_latencies still answers, through the general path
    assert all(v > 0 for v in flow_latencies(net, "snc-meister").values())
