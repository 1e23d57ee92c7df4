"""The Rust core of WorkloadCompactor's per-server arithmetic (``tailbound_core::wc``) against
the numpy implementations it replaced (``tests/policies/wc_oracle.py``): the same LP arrays
(identical sparsity, values to 1e-12), the same delays, bounds and check, the same screen, on
random servers of wc62 tenants and of synthetic curves, under the reference system and a sound
server model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.policies import wc_oracle as oracle

from tailbound.characterize import RbCurve
from tailbound.model import Slo
from tailbound.policies import server, wc_lp
from tailbound.policies.server import REFERENCE, Placed, ServerModel
from tailbound.policies.wc_tenant import prepared
from tailbound.policies.workload import TenantCurves
from tailbound.policies.workloadcompactor import server_model
from tailbound.profiles import SsdProfile
from tailbound.stages import STORAGE_PATH


def synthetic(rng: np.random.Generator, name: str, points: int | None = None) -> TenantCurves:
    """A tenant with random convex r-b curves (some longer than 16 points, some reaching past
    0.999), random largest requests and an SLO from a short list (equal SLOs are common)."""
    curves = {}
    for stage in STORAGE_PATH:
        k = points or int(rng.integers(1, 22))
        rates = np.sort(rng.uniform(0.005, rng.choice([0.3, 0.9, 1.2]), k))
        rates = np.unique(rates)
        slopes = -np.sort(rng.uniform(0.0, 0.5, len(rates) - 1))[::-1]  # convex: rising slopes
        buckets = np.concatenate([[0.0], np.cumsum(-slopes[::-1] * np.diff(rates)[::-1])])[::-1]
        buckets = buckets + rng.uniform(0.0, 0.002)
        if rng.random() < 0.2:  # not convex: the arrival curve's walk drops lines
            buckets = np.sort(rng.uniform(0.0, 0.05, len(rates)))[::-1].copy()
        curves[stage] = RbCurve(rates, buckets, float(rates[0]), stage, name)
    slo = float(rng.choice([0.02, 0.05, 0.1, 0.25, 1.0]))
    largest = (float(rng.integers(512, 1 << 20)), float(rng.integers(512, 1 << 20)))
    return TenantCurves(name, Slo(slo), curves, largest)


@pytest.fixture(scope="module")
def sound(wc62_dir: Path) -> ServerModel:
    return server_model(SsdProfile.load(wc62_dir / "profile_ssd.json"), 125e6, 1500)


def servers(
    wc62_subset: list[TenantCurves], seed: int, count: int
) -> list[tuple[list[Placed], int]]:
    """Random servers: 1–8 tenants from wc62 (SLOs redrawn) and synthetic curves, 1–3 devices."""
    rng = np.random.default_rng(seed)
    out = []
    for m in range(count):
        k, devices = int(rng.integers(1, 9)), int(rng.integers(1, 4))
        tenants = []
        for i in range(k):
            if rng.random() < 0.5:
                w = wc62_subset[int(rng.integers(len(wc62_subset)))]
                w = w.with_slo(float(rng.choice([0.05, 0.1, 0.25, 1.0])), f"s{seed}m{m}t{i}")
            else:
                w = synthetic(rng, f"s{seed}m{m}t{i}", 20 if rng.random() < 0.1 else None)
            tenants.append(Placed(w, int(rng.integers(devices))))
        out.append((tenants, devices))
    return out


def limits(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Random ``(r, b)``: some rates 0, some tiny (below a mean rate: infinite shaper delays)."""
    rate = rng.uniform(0.0, 0.4, (n, 3))
    rate[rng.random((n, 3)) < 0.1] = 0.0
    rate[rng.random((n, 3)) < 0.1] = 1e-4
    bucket = rng.uniform(0.0, 0.05, (n, 3))
    return rate, bucket


@pytest.mark.parametrize("model_name", ["reference", "sound"])
def test_lp_arrays_equal_the_numpy_build(
    wc62_subset: list[TenantCurves], sound: ServerModel, model_name: str
) -> None:
    model = REFERENCE if model_name == "reference" else sound
    for tenants, devices in servers(wc62_subset, 1, 60):
        got, r_vars = wc_lp.build_lp(tenants, devices, model)
        want, want_vars = oracle.build_lp(tenants, devices, model)
        assert r_vars == want_vars
        for field in ("start", "index"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), field
            assert getattr(got, field).dtype == np.int32
        for field in ("cost", "col_lower", "col_upper", "row_lower", "row_upper", "value"):
            a, b = getattr(got, field), getattr(want, field)
            assert a.shape == b.shape and a.dtype == np.float64, field
            assert np.array_equal(np.isinf(a), np.isinf(b)), field
            fin = np.isfinite(b)
            assert np.allclose(a[fin], b[fin], rtol=1e-12, atol=0.0), field


def test_lp_of_one_tenant_and_of_equal_slos_on_several_devices(
    wc62_subset: list[TenantCurves], sound: ServerModel
) -> None:
    w = wc62_subset[0]
    cases = [
        [Placed(w, 2)],
        [Placed(w.with_slo(0.1, f"e{i}"), i % 3) for i in range(6)],
    ]
    for tenants in cases:
        for model in (REFERENCE, sound):
            got, r_vars = wc_lp.build_lp(tenants, 3, model)
            want, want_vars = oracle.build_lp(tenants, 3, model)
            assert r_vars == want_vars
            assert np.array_equal(got.dense(), want.dense())
            assert np.allclose(got.row_upper, want.row_upper, rtol=1e-12)


def test_tenant_arrays_equal_the_numpy_ones(wc62_subset: list[TenantCurves]) -> None:
    rng = np.random.default_rng(2)
    workloads = [*wc62_subset, *(synthetic(rng, f"x{i}") for i in range(40))]
    workloads.append(synthetic(rng, "long", 20))
    for w in workloads:
        for got, want in zip(prepared(w).block(), oracle.tenant_block(w), strict=True):
            assert np.array_equal(got, want)
        for got, want in zip(prepared(w).vertices(), oracle._vertices(w), strict=True):
            assert np.array_equal(got, want)
        assert prepared(w).out_of_bounds == oracle._out_of_bounds(w)
        for s, stage in enumerate(STORAGE_PATH):
            want_points = oracle.arrival_points(w.curves[stage])
            for got_points in (server.arrival_points(w.curves[stage]), prepared(w).arrival(s)):
                assert np.array_equal(got_points[0], want_points[0])
                assert np.array_equal(got_points[1], want_points[1])
                assert got_points[2] == want_points[2]
    assert prepared(workloads[-1]).vertices()[0].shape[1] > 16  # a curve longer than 16 points


def test_arrival_curves_of_non_convex_curves_take_the_general_walk() -> None:
    # token_bucket_min pops lines off its stack here; the core's walk must pop the same ones
    from tailbound.dnc.curves import token_bucket_min

    rng = np.random.default_rng(8)
    general = 0
    for i in range(200):
        w = synthetic(rng, f"nc{i}")
        for s, stage in enumerate(STORAGE_PATH):
            c = w.curves[stage]
            alpha = token_bucket_min(c.rates, c.buckets)
            xs, ys, tail = prepared(w).arrival(s)
            assert np.array_equal(xs, alpha.xs) and np.array_equal(ys, alpha.ys)
            assert tail == alpha.tail
            general += oracle._envelope_points(c.rates, c.buckets) is None
    assert general > 20


@pytest.mark.parametrize("model_name", ["reference", "sound"])
def test_check_and_bounds_equal_the_numpy_ones(
    wc62_subset: list[TenantCurves], sound: ServerModel, model_name: str
) -> None:
    model = REFERENCE if model_name == "reference" else sound
    rng = np.random.default_rng(3)
    infinite = checked = 0
    for tenants, devices in servers(wc62_subset, 3, 80):
        n = len(tenants)
        rate, bucket = limits(rng, n)
        pairs = [
            (server.queue_delays, oracle.queue_delays, (tenants, rate, bucket, model)),
            (server.shaper_delays, oracle.shaper_delays, (tenants, rate, bucket)),
            (server.latency_bounds, oracle.latency_bounds, (tenants, rate, bucket, model)),
            (server.queue_rate_sums, oracle.queue_rate_sums, (tenants, rate, devices)),
        ]
        for core_f, numpy_f, args in pairs:
            got, want = core_f(*args), numpy_f(*args)  # type: ignore[operator]
            assert got.shape == want.shape
            assert np.array_equal(np.isinf(got), np.isinf(want))
            fin = np.isfinite(want)
            assert np.allclose(got[fin], want[fin], rtol=1e-12, atol=1e-300)
        infinite += int(np.isinf(server.shaper_delays(tenants, rate, bucket)).sum())
        # the check at limits from the LP (where it matters) and at the random ones
        sol = wc_lp.solve(tenants, devices, model)
        for r, b in [(rate, bucket)] + ([(sol.rate, sol.bucket)] if sol is not None else []):
            got_ok = server.check(tenants, r, b, devices, model)
            assert got_ok == oracle.check(tenants, r, b, devices, model)
            checked += got_ok
    assert infinite > 0 and checked > 0  # both sides of the check were exercised


def test_lp_solutions_equal_those_of_the_numpy_lp(wc62_subset: list[TenantCurves]) -> None:
    # the same LP, so HiGHS returns the same solution (solved from the oracle's arrays here)
    from tailbound.dnc.highs import solver

    for tenants, devices in servers(wc62_subset, 5, 25):
        sol = wc_lp.solve(tenants, devices)
        lp, r_vars = oracle.build_lp(tenants, devices, REFERENCE)
        h = solver()
        lp.pass_to(h)
        h.run()
        feasible = h.getModelStatus() == h.getModelStatus().kOptimal
        assert (sol is not None) == feasible
        if sol is not None:
            x = np.array(h.getSolution().col_value)
            rb = x[: 6 * len(tenants)].reshape(len(tenants), 3, 2)
            assert np.allclose(sol.rate, np.clip(rb[:, :, 0], 0.0, 0.999), rtol=1e-9)
            assert np.allclose(sol.bucket, np.maximum(rb[:, :, 1], 0.0), rtol=1e-9)
            assert list(sol.rate_bounds) == r_vars


def test_certainly_infeasible_equals_the_numpy_screen(wc62_subset: list[TenantCurves]) -> None:
    proved = 0
    for tenants, _ in servers(wc62_subset, 7, 150):
        for newcomer in range(len(tenants)):
            got = wc_lp.certainly_infeasible(tenants, newcomer)
            # a tenant with every rate above 0.999 has an infinite vertex: numpy's 0 · inf is
            # NaN there (no proof), and the core multiplies the same way
            with np.errstate(invalid="ignore"):
                assert got == oracle.certainly_infeasible(tenants, newcomer)
            proved += got
    assert proved > 0


def test_an_empty_server_has_no_bounds_and_passes() -> None:
    empty = np.zeros(0)
    assert server.latency_bounds([], empty, empty).shape == (0,)
    assert server.check([], empty, empty, 2)
    assert server.queue_rate_sums([], empty, 2).tolist() == [0.0] * 4


def test_bad_input_is_a_clear_error(wc62_subset: list[TenantCurves]) -> None:
    w = wc62_subset[0]
    curves = dict(w.curves)
    curves[STORAGE_PATH[1]] = RbCurve(np.array([0.1, np.nan]), np.array([0.02, 0.01]), 0.1)
    bad = TenantCurves("bad", w.slo, curves)
    with pytest.raises(ValueError, match=r"tenant 'bad': .*stage 1: rates\[1\] is not finite"):
        prepared(bad)
    tenants = [Placed(w), Placed(w.with_slo(0.5, "v"))]
    with pytest.raises(ValueError, match="rate: 1 rows for 2 tenants"):
        server.latency_bounds(tenants, np.zeros((1, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"bucket has shape \(2, 2\)"):
        server.check(tenants, np.zeros((2, 3)), np.zeros((2, 2)), 1)
    with pytest.raises(ValueError, match=r"rate\[1\] is NaN"):
        server.check(tenants, np.array([[0.1] * 3, [np.nan] * 3]), np.zeros((2, 3)), 1)
    with pytest.raises(ValueError, match="device 3 of a server with 1"):
        server.queue_rate_sums([Placed(w, 3)], np.zeros((1, 3)), 1)
    with pytest.raises(ValueError, match="newcomer 5 of 2 tenants"):
        wc_lp.certainly_infeasible(tenants, 5)
