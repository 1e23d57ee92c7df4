"""The Rust cluster screen and certificate store (``crates/tailbound-core/src/wc_screen/``,
wrapped by :mod:`tailbound.policies.cluster_screen` and
:mod:`tailbound.policies.certificate_store`) and the screens' tables of the one prepared tenant
(:func:`tailbound.policies.wc_tenant.prepared`) against their former numpy implementations
(``screen_oracle``, ``wc_oracle``): random servers, newcomers and certificates, a level set that
grows, several devices, departures, forks; and bad input."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from tests.policies import wc_oracle

from tailbound._core import WcCertificateStore, WcClusterScreen, WcTenant
from tailbound.experiments.wc_common import FIG54_SLOS, resample, server_cluster
from tailbound.policies import wc_lp
from tailbound.policies.certificate_store import CertificateStore
from tailbound.policies.certificates import (
    KEEP,
    MARGIN,
    Certificate,
    from_dual_ray,
    region_vertices,
)
from tailbound.policies.cluster_screen import ClusterScreen
from tailbound.policies.placement import Placer, WorkloadCompactorPolicy
from tailbound.policies.server import Placed
from tailbound.policies.wc_tenant import prepared
from tailbound.policies.workload import TenantCurves

from .screen_oracle import (
    OracleCertificateStore,
    OracleClusterScreen,
    oracle_from_dual_ray,
    oracle_region_vertices,
    tenant_terms_at,
)

DEVICES = 3


def _tenant(
    pool: list[TenantCurves], rng: np.random.Generator, slos: list[float], name: str
) -> Placed:
    """A tenant of ``pool`` (resampled: scaled curves) with a random SLO of ``slos``."""
    w = pool[int(rng.integers(len(pool)))]
    return Placed(w.with_slo(float(rng.choice(slos)), name), 0)


@pytest.fixture(scope="module")
def pool(wc62_subset: list[TenantCurves]) -> list[TenantCurves]:
    return resample(wc62_subset, 40, np.random.default_rng(0), scale=(0.6, 1.4))


def test_tables_equal_the_oracle_bit_for_bit(pool: list[TenantCurves]) -> None:
    # the curve points of the cluster screen and the region vertices of the certificates, for
    # SLOs from loose to too tight (an empty region)
    empty = 0
    for w in pool[:20]:
        for slo in (0.005, 0.02, 0.1, 1.0):
            t = w.with_slo(slo)
            rates, buckets = prepared(t).vertices()
            want = wc_oracle._vertices(t)
            assert np.array_equal(rates, want[0]) and np.array_equal(buckets, want[1])
            got, oracle = prepared(t).region(), oracle_region_vertices(t)
            assert (got is None) == (oracle is None)
            if got is None or oracle is None:
                empty += 1
                continue
            assert np.array_equal(got[0], oracle[0]) and np.array_equal(got[1], oracle[1])
    assert 0 < empty < 80


def test_terms_equal_the_oracle_bit_for_bit(wc62_subset: list[TenantCurves]) -> None:
    levels = np.array([0.02, 0.05, 0.1, 0.25, 1.0])
    for w in wc62_subset[:6]:
        for slo in (0.05, 0.25):
            t = w.with_slo(slo)
            oracle = tenant_terms_at(t, levels)
            for got, level in zip(oracle, levels, strict=True):
                assert np.array_equal(prepared(t).terms(float(level)), got.reshape(-1))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cluster_screen_equals_the_oracle(pool: list[TenantCurves], seed: int) -> None:
    rng = np.random.default_rng(seed)
    slos = [0.05, 0.1, 0.25, 1.0]
    ours, oracle = ClusterScreen(DEVICES), OracleClusterScreen(DEVICES)
    servers: list[list[Placed]] = []
    devices: list[int] = []
    forked: tuple[ClusterScreen, OracleClusterScreen] | None = None
    compared = proofs = 0
    for step in range(120):
        if step == 60:
            slos += [0.02, 0.5]  # the level set grows mid-run
        if step == 80:  # a fork diverges from its parent: both must stay equal to the oracle
            forked = (ours, oracle)
            ours, oracle = ours.fork(), _oracle_fork(oracle)
        action = rng.random()
        if not servers or action < 0.1:
            d = int(rng.integers(1, DEVICES + 1))
            ours.add_server(d)
            oracle.add_server(d)
            servers.append([])
            devices.append(d)
        elif action < 0.55:  # a tenant joins (or, one time in five, one leaves)
            i = int(rng.integers(len(servers)))
            if servers[i] and rng.random() < 0.2:
                servers[i] = servers[i][1:]
            else:
                t = _tenant(pool, rng, slos, f"s{i}t{step}")
                servers[i] = [*servers[i], Placed(t.workload, int(rng.integers(devices[i])))]
            ours.set_server(i, servers[i], devices[i])
            oracle.set_server(i, servers[i], devices[i])
        else:  # a newcomer on random candidates
            new = _tenant(pool, rng, slos, f"new{step}")
            d = int(rng.integers(DEVICES))
            cand = np.array([i for i in range(len(servers)) if devices[i] > d], dtype=np.int64)
            got = ours.infeasible(new.workload, d, cand)
            want = oracle.infeasible(new.workload, d, cand)
            assert got.tolist() == want.tolist()
            compared += len(cand)
            proofs += int(want.sum())
        assert ours.levels == oracle.levels and ours.active == oracle.active
    assert forked is not None
    parent, parent_oracle = forked
    new = _tenant(pool, rng, slos, "last")
    cand = np.arange(len(parent_oracle._servers), dtype=np.int64)
    assert (
        parent.infeasible(new.workload, 0, cand).tolist()
        == parent_oracle.infeasible(new.workload, 0, cand).tolist()
    )
    assert compared > 100 and 0 < proofs < compared


def _oracle_fork(oracle: OracleClusterScreen) -> OracleClusterScreen:
    new = copy.copy(oracle)
    for name, value in vars(oracle).items():
        if isinstance(value, np.ndarray | list | dict):
            setattr(new, name, value.copy())
    return new


def _random_certificate(rng: np.random.Generator, slos: list[float]) -> Certificate:
    v = int(rng.integers(0, 6))
    only = None
    if rng.random() < 0.3:
        only = (float(rng.choice(slos)), int(rng.integers(DEVICES)))
    mask = rng.random((v, 3)) < 0.7
    return Certificate(
        constant=float(rng.uniform(-1.5, 0.2)),
        scale=float(rng.uniform(0.5, 3.0)),
        cap=rng.uniform(0, 1, int(rng.integers(2, 3 + DEVICES))) * (rng.random() < 0.8),
        level=rng.choice(slos, v).astype(np.float64),
        device=rng.integers(0, DEVICES, v).astype(np.int64),
        rb=rng.uniform(0, 2, (v, 3)) * mask,
        eq57=rng.uniform(0, 3, v) * (rng.random(v) < 0.7),
        only=only,
    )


@pytest.mark.parametrize("seed", [4, 5])
def test_certificate_store_equals_the_oracle(pool: list[TenantCurves], seed: int) -> None:
    rng = np.random.default_rng(seed)
    slos = [0.05, 0.1, 0.25, 1.0]
    ours, oracle = CertificateStore(DEVICES), OracleCertificateStore(DEVICES)
    n = 0
    compared = refuted = 0
    for step in range(200):
        action = rng.random()
        if n == 0 or action < 0.08:
            ours.add_server()
            oracle.add_server()
            n += 1
        elif action < 0.4:  # several certificates, beyond KEEP at times
            i = int(rng.integers(n))
            certs = [_random_certificate(rng, slos) for _ in range(int(rng.integers(1, 4)))]
            ours.add(i, certs)
            oracle.add(i, certs)
        elif action < 0.55:
            i = int(rng.integers(n))
            t = _tenant(pool, rng, slos, f"j{step}")
            t = Placed(t.workload, int(rng.integers(DEVICES)))
            ours.joined(i, t)
            oracle.joined(i, t)
        elif action < 0.6:
            i = int(rng.integers(n))
            ours.clear(i)
            oracle.clear(i)
        elif action < 0.65:  # a fork: carry on with it, the parent stays as it was
            parent, parent_oracle = ours, oracle
            ours, oracle = ours.fork(), _store_fork(oracle)
            parent.clear(0)
            parent_oracle.clear(0)
        else:
            new = _tenant(pool, rng, slos, f"n{step}")
            new = Placed(new.workload, int(rng.integers(DEVICES)))
            servers = np.arange(n, dtype=np.int64)
            got = ours.refuted(new, servers)
            if _region(new):
                want_bounds = oracle._bounds(new.workload, new.device, servers, every=False)
                threshold = MARGIN * oracle.scale[servers]
                for i in range(n):
                    bounds = ours.bounds(new, i)
                    assert np.allclose(bounds, want_bounds[i], rtol=1e-12, atol=1e-12)
                    clear_cut = np.abs(want_bounds[i] - threshold[i]) > 1e-9
                    if clear_cut.all():
                        assert got[i] == bool(np.any(want_bounds[i] > threshold[i]))
                        compared += 1
                        refuted += int(got[i])
            else:
                assert not got.any()
    assert compared > 100 and 0 < refuted < compared


def _region(t: Placed) -> bool:
    return region_vertices(t.workload) is not None


def _store_fork(oracle: OracleCertificateStore) -> OracleCertificateStore:
    new = copy.copy(oracle)
    for name, value in vars(oracle).items():
        if isinstance(value, np.ndarray):
            setattr(new, name, value.copy())
    return new


def test_bad_input_is_a_clear_error(wc62_subset: list[TenantCurves]) -> None:
    w = wc62_subset[0]
    t = prepared(w)
    r, b = np.array([0.1, 0.5, 1.0]), np.array([0.4, 0.1, 0.0])
    with pytest.raises(ValueError, match="three stages"):
        WcTenant(0.1, [r, r], [b, b])
    with pytest.raises(ValueError, match=r"stage 1: rates\[0\] is not finite"):
        WcTenant(0.1, [r, r + np.nan, r], [b, b, b])
    with pytest.raises(ValueError, match="stage 2: rates must be positive and strictly increasing"):
        WcTenant(0.1, [r, r, r[::-1]], [b, b, b])
    with pytest.raises(ValueError, match="stage 2: 3 rates and 2 buckets"):
        WcTenant(0.1, [r, r, r], [b, b, b[:2]])
    with pytest.raises(ValueError, match="slo_s must be finite and positive"):
        WcTenant(-1.0, [r, r, r], [b, b, b])
    # a storage curve starting above 0.999: accepted, but no region and no server takes it
    high = WcTenant(0.1, [r, r + 1.0, r], [b, b, b])
    assert high.out_of_bounds and high.region() is None
    assert high.vertices()[1][1, 0] == np.inf
    lone = WcClusterScreen(2, 64, 1e-7)
    lone.add_server(1)
    lone.set_server(0, [(t, 0)], 1)
    assert lone.infeasible(high, 0, np.array([0])).all()
    screen = WcClusterScreen(2, 64, 1e-7)
    with pytest.raises(ValueError, match="devices"):
        screen.add_server(3)
    screen.add_server(1)
    with pytest.raises(ValueError, match="device 1"):
        screen.set_server(0, [(t, 1)], 1)
    with pytest.raises(ValueError, match="server 4"):
        screen.set_server(4, [], 1)
    with pytest.raises(ValueError, match="server 1"):
        screen.infeasible(t, 0, np.array([1]))
    with pytest.raises(ValueError, match="negative"):
        screen.infeasible(t, 0, np.array([-1]))
    with pytest.raises(ValueError, match="device 2"):
        screen.infeasible(t, 2, np.array([0]))
    store = WcCertificateStore(2, KEEP, MARGIN)
    store.add_server()
    v = np.zeros(1)
    with pytest.raises(ValueError, match="device 2"):
        store.add(0, 0.0, 1.0, np.zeros(4), v, np.array([2]), np.zeros((1, 3)), v)
    with pytest.raises(ValueError, match="one entry per R"):
        store.add(0, 0.0, 1.0, np.zeros(4), v, np.array([0]), np.zeros((2, 3)), v)
    with pytest.raises(ValueError, match="finite"):
        store.add(0, np.nan, 1.0, np.zeros(4), v, np.array([0]), np.zeros((1, 3)), v)
    with pytest.raises(ValueError, match="cap"):
        store.add(0, 0.0, 1.0, np.zeros(5), v, np.array([0]), np.zeros((1, 3)), v)
    with pytest.raises(ValueError, match="server 1"):
        store.clear(1)
    with pytest.raises(ValueError, match="server 3"):
        store.refuted(t, 0, np.array([3]))


def test_certificates_from_dual_rays_equal_the_oracle(
    pool: list[TenantCurves], monkeypatch: pytest.MonkeyPatch
) -> None:
    # HiGHS's dual rays of crowded servers' LPs, reduced by Rust and by the oracle: the same
    # certificates (numbers up to rounding), for one and for three devices
    rng = np.random.default_rng(8)
    made = 0
    captured: list[tuple[list[Placed], list[tuple[float, int]], int, object, object]] = []
    original = wc_lp.certificates.from_dual_ray

    def capture(tenants, r_vars, devices, lp, ray):  # type: ignore[no-untyped-def]
        captured.append((list(tenants), list(r_vars), devices, lp, np.array(ray)))
        return original(tenants, r_vars, devices, lp, ray)

    monkeypatch.setattr(wc_lp.certificates, "from_dual_ray", capture)
    for m in range(40):
        devices = 1 if m % 2 else 3
        tenants = [
            Placed(
                pool[int(rng.integers(len(pool)))].with_slo(
                    float(rng.choice([0.05, 0.1, 0.25, 1.0])), f"c{m}t{k}"
                ),
                int(rng.integers(devices)),
            )
            for k in range(int(rng.integers(3, 10)))
        ]
        wc_lp.solve_certified(tenants, devices)
    monkeypatch.undo()
    assert len(captured) > 10
    for tenants, r_vars, devices, lp, ray in captured:
        got = from_dual_ray(tenants, r_vars, devices, lp, ray)  # type: ignore[arg-type]
        want = oracle_from_dual_ray(tenants, r_vars, devices, lp, ray)  # type: ignore[arg-type]
        assert len(got) == len(want)
        made += len(got)
        for a, b in zip(got, want, strict=True):
            assert a.only == b.only
            assert np.isclose(a.constant, b.constant, rtol=1e-12, atol=1e-12)
            assert np.isclose(a.scale, b.scale, rtol=1e-12)
            for name in ("cap", "level", "device", "rb", "eq57"):
                x, y = getattr(a, name), getattr(b, name)
                assert x.shape == y.shape and np.allclose(x, y, rtol=1e-12, atol=0), name
    assert made > 10


def test_a_forked_placer_and_its_parent_place_as_fresh_ones(pool: list[TenantCurves]) -> None:
    # the control plane forks the placer per decision: the fork's screens and certificates must
    # be its own (the parent unchanged by the fork's arrivals and departures, and vice versa)
    rng = np.random.default_rng(12)
    tenants = resample(pool, 90, rng, slos=FIG54_SLOS)

    def run(ops: list[tuple[str, int]], placer: Placer | None = None) -> Placer:
        placer = placer or Placer(server_cluster(), WorkloadCompactorPolicy(), grow=True)
        for op, k in ops:
            if op == "add":
                placer.add(tenants[k])
            else:
                placer.remove(tenants[k].name)
        return placer

    start = [("add", k) for k in range(40)]
    branch = [("remove", 3), ("remove", 17), *[("add", k) for k in range(40, 70)]]
    other = [("remove", 5), *[("add", k) for k in range(70, 90)]]
    parent = run(start)
    fork = run(branch, parent.fork())
    copied = run(branch, copy.deepcopy(parent))  # deepcopy of the Rust state forks it too
    run(other, parent)
    assert copied.where == fork.where and copied.certified == fork.certified
    for placer, ops in ((fork, start + branch), (parent, start + other)):
        fresh = run(ops)
        assert placer.where == fresh.where and placer.rejected == fresh.rejected
        assert (placer.screened, placer.certified) == (fresh.screened, fresh.certified)
    assert parent.screened > 0 and parent.certified > 0
