from __future__ import annotations

import highspy
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.experiments.wc_common import FIG54_SLOS, resample, server_cluster
from tailbound.policies import wc_lp
from tailbound.policies.certificate_store import CertificateStore
from tailbound.policies.certificates import KEEP, Certificate, region_min, region_vertices
from tailbound.policies.events import Event
from tailbound.policies.placement import PlacementResult, WorkloadCompactorPolicy, place
from tailbound.policies.server import RATE_CAP, SLO_SCALE, Placed, check
from tailbound.policies.wc_tenant import prepared
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH

SLOS = [0.05, 0.1, 0.25, 1.0]


def crowded_servers(
    pool: list[TenantCurves], rng: np.random.Generator, count: int, devices: int
) -> list[list[Placed]]:
    """``count`` servers holding 2–8 tenants with random SLOs on random devices (many of them
    too crowded for one more)."""
    out = []
    for m in range(count):
        k = int(rng.integers(2, 9))
        out.append(
            [
                Placed(
                    pool[int(rng.integers(len(pool)))].with_slo(
                        float(rng.choice(SLOS)), f"s{m}t{n}"
                    ),
                    int(rng.integers(devices)),
                )
                for n in range(k)
            ]
        )
    return out


def newcomers(pool: list[TenantCurves], rng: np.random.Generator, count: int, devices: int):
    return [
        Placed(
            pool[int(rng.integers(len(pool)))].with_slo(float(rng.choice(SLOS)), f"new{i}"),
            int(rng.integers(devices)),
        )
        for i in range(count)
    ]


def certificates_of(tenants: list[Placed], devices: int) -> list[Certificate]:
    solution, certs = wc_lp.solve_certified(tenants, devices)
    assert solution is None or not certs
    return certs


@pytest.mark.parametrize("devices", [1, 2])
def test_certificates_never_refute_a_feasible_lp(
    wc62_subset: list[TenantCurves], devices: int
) -> None:
    # every certificate of an infeasible LP, tried on the same server with other newcomers
    # (other SLOs, other devices): whenever it claims a proof, the LP must be infeasible
    rng = np.random.default_rng(7 + devices)
    made, said, agreed = 0, 0, 0
    for server in crowded_servers(wc62_subset, rng, 60, devices):
        existing = server[:-1]
        certs = certificates_of(server, devices)
        made += len(certs)
        for cert in certs:
            assert cert.proves(server[-1].workload, server[-1].device)
        for new in newcomers(wc62_subset, rng, 8, devices):
            if any(c.proves(new.workload, new.device) for c in certs):
                said += 1
                agreed += wc_lp.solve([*existing, new], devices) is None
    assert made > 0 and said > 0
    assert said == agreed


def test_certificates_stay_valid_when_tenants_join(wc62_subset: list[TenantCurves]) -> None:
    # a certificate of a smaller server, with the terms of tenants that joined since added
    rng = np.random.default_rng(3)
    said, agreed = 0, 0
    for server in crowded_servers(wc62_subset, rng, 50, 2):
        store = CertificateStore(max_devices=2)
        store.add_server()
        existing, refused = server[:-2], server[-2]
        store.add(0, certificates_of([*existing, refused], 2))
        store.joined(0, server[-1])
        for new in newcomers(wc62_subset, rng, 6, 2):
            if store.refuted(new, np.array([0]))[0]:
                said += 1
                agreed += wc_lp.solve([*existing, server[-1], new], 2) is None
    assert said > 0 and said == agreed


def test_store_equals_certificates_one_by_one(wc62_subset: list[TenantCurves]) -> None:
    rng = np.random.default_rng(5)
    servers = crowded_servers(wc62_subset, rng, 30, 2)
    store = CertificateStore(max_devices=2)
    kept: list[list[Certificate]] = []
    for i, server in enumerate(servers):
        store.add_server()
        certs = certificates_of(server, 2)
        store.add(i, certs)
        kept.append(certs[-KEEP:])
    for new in newcomers(wc62_subset, rng, 10, 2):
        together = store.refuted(new, np.arange(len(servers))).tolist()
        alone = [any(c.proves(new.workload, new.device) for c in certs) for certs in kept]
        assert together == alone
    store.clear(0)
    assert not store.refuted(servers[0][-1], np.array([0]))[0]


@settings(max_examples=40, deadline=None)
@given(
    which=st.integers(0, 11),
    slo=st.sampled_from([0.02, 0.05, 0.1, 1.0]),
    c=st.floats(0.0, 50.0),
    d=st.floats(0.0, 50.0),
)
def test_region_min_is_the_lp_minimum(
    wc62_subset: list[TenantCurves], which: int, slo: float, c: float, d: float
) -> None:
    # min of c r + d b over one tenant's region (the LP's columns and r-b curve rows) by HiGHS
    w = wc62_subset[which].with_slo(slo)
    verts = region_vertices(w)
    lower, upper, cols, coefs, rhss = prepared(w).block()
    for s in range(3):
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        at = cols == 2 * s
        rows = len(coefs[at])
        h.passModel(
            2,
            rows,
            2 * rows,
            int(highspy.MatrixFormat.kRowwise),
            int(highspy.ObjSense.kMinimize),
            0.0,
            np.array([c, d]),
            lower[2 * s : 2 * s + 2],
            upper[2 * s : 2 * s + 2],
            rhss[at],
            np.full(rows, highspy.kHighsInf),
            (2 * np.arange(rows + 1)).astype(np.int32),
            np.tile(np.array([0, 1], dtype=np.int32), rows),
            np.column_stack([coefs[at], np.ones(rows)]).reshape(-1),
            np.zeros(2, dtype=np.int32),
        )
        h.run()
        feasible = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        if verts is None:
            continue  # some stage's region is empty (checked below)
        one = np.zeros(3)
        one[s] = 1.0
        ours = region_min(w, c * one, d * one)
        assert feasible
        # HiGHS's optimum may sit within its feasibility tolerance (1e-7) outside the region
        best = h.getInfo().objective_function_value
        assert ours == pytest.approx(best, rel=1e-6, abs=1e-7 * (1 + c + d))
    if verts is None:
        curves = [w.curves[stage] for stage in STORAGE_PATH]
        assert any(float(cv.bucket_at(RATE_CAP)) > slo * SLO_SCALE for cv in curves) or any(
            cv.rates[0] > RATE_CAP for cv in curves
        )


def where(result: PlacementResult) -> dict[str, tuple[int, int]]:
    """Tenant name → (server, device)."""
    return {name: (i, p.device) for name, (i, p, _) in result.placed().items()}


@pytest.mark.parametrize("fff", [False, True])
def test_placements_identical_with_and_without_certificates(
    wc62_subset: list[TenantCurves], fff: bool
) -> None:
    rng = np.random.default_rng(4)
    tenants = resample(wc62_subset, 200 if fff else 60, rng, slos=FIG54_SLOS, scale=(0.8, 1.2))
    results, solves = [], []
    for certify in (True, False):
        policy = WorkloadCompactorPolicy(certify=certify)
        r = place(tenants, server_cluster(), policy, fast_first_fit=fff, grow=True)
        results.append(r)
        solves.append(policy.lp_solves)
    with_certs, without = results
    assert with_certs.certified > 0 and without.certified == 0
    assert solves[0] < solves[1]
    assert where(with_certs) == where(without)
    assert with_certs.rejected == without.rejected


def test_placements_identical_with_departures(wc62_subset: list[TenantCurves]) -> None:
    # departures drop the server's certificates (its rows change); two devices per server
    rng = np.random.default_rng(8)
    tenants = resample(wc62_subset, 100, rng, slos=FIG54_SLOS, scale=(0.8, 1.2))
    events = []
    for i in range(len(tenants)):
        events.append(Event(i, "add"))
        if i % 3 == 2:
            events.append(Event(int(rng.integers(i)), "del"))
    results = [
        place(
            tenants,
            server_cluster(devices=2),
            WorkloadCompactorPolicy(certify=certify),
            fast_first_fit=True,
            events=events,
            grow=True,
        )
        for certify in (True, False)
    ]
    assert results[0].certified > 0
    assert where(results[0]) == where(results[1])


def plain_fast_first_fit(workloads: list[TenantCurves]) -> dict[str, tuple[int, int]]:
    """Fast-first-fit as thesis §5.2.3 states it, one device per server, servers added as
    needed: for each server in order, skip it if a queue's configured rates plus the
    newcomer's mean rate exceed 0.999, else solve its LP and check; no screen, no certificate."""
    servers: list[list[Placed]] = []
    rates: list[np.ndarray] = []
    out: dict[str, tuple[int, int]] = {}
    for w in workloads:
        mean = np.array([w.mean(s) for s in STORAGE_PATH])
        i = 0
        while True:
            if i == len(servers):
                servers.append([])
                rates.append(np.zeros((0, 3)))
            r = rates[i]
            sums = np.array([r[:, 0].sum(), r[:, 2].sum(), 0.0])
            np.add.at(sums, np.full(len(r), 2), r[:, 1])  # as the placer sums a device queue
            if np.all(sums + mean[[0, 2, 1]] <= RATE_CAP):
                trial = [*servers[i], Placed(w, 0)]
                sol = wc_lp.solve(trial, 1)
                if sol is not None and check(trial, sol.rate, sol.bucket, 1):
                    servers[i], rates[i] = trial, sol.rate
                    out[w.name] = (i, 0)
                    break
            if not servers[i]:
                break  # an empty server did not take it: rejected
            i += 1
    return out


def test_fast_first_fit_equals_the_plain_loop(wc62_subset: list[TenantCurves]) -> None:
    # everything on (cluster screen, certificates, chunked screening) against the plain loop
    rng = np.random.default_rng(12)
    tenants = resample(wc62_subset, 150, rng, slos=FIG54_SLOS, scale=(0.8, 1.2))
    result = place(
        tenants, server_cluster(), WorkloadCompactorPolicy(), fast_first_fit=True, grow=True
    )
    assert result.certified > 0 and result.cluster_screened > 0
    assert where(result) == plain_fast_first_fit(tenants)
