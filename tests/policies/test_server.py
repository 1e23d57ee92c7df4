from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.policies.wc_oracle import _envelope_points

from tailbound.characterize import RbCurve
from tailbound.dnc import TokenBucket, shaper_delay, static_priority_delay_general
from tailbound.dnc.curves import token_bucket_min
from tailbound.policies.server import (
    Placed,
    arrival_points,
    latency_bounds,
    queue_delays,
    queue_ids,
    shaper_delays,
    slos,
)
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH


def test_queue_delays_fast_path_matches_general_operators(wc62_subset: list[TenantCurves]) -> None:
    rng = np.random.default_rng(3)
    tenants = [Placed(w, device=k % 2) for k, w in enumerate(wc62_subset[:6])]
    rate = rng.uniform(0.01, 0.15, (6, 3))
    bucket = rng.uniform(0.0, 0.02, (6, 3))
    fast = queue_delays(tenants, rate, bucket)
    q, slo = queue_ids(tenants), slos(tenants)
    for j in range(6):
        for s in range(3):
            same = q[:, s] == q[j, s]
            level = [
                TokenBucket(rate[k, s], bucket[k, s])
                for k in np.flatnonzero(same & (slo == slo[j]))
            ]
            higher = [
                TokenBucket(rate[k, s], bucket[k, s]) for k in np.flatnonzero(same & (slo < slo[j]))
            ]
            # Eq. 5.1's numerator counts higher buckets too: the general route sees them as the
            # burst the leftover service must first clear
            assert fast[j, s] == pytest.approx(
                static_priority_delay_general(level, higher), abs=1e-9
            )


def test_shaper_delays_match_the_general_operator(wc62_subset: list[TenantCurves]) -> None:
    tenants = [Placed(w) for w in wc62_subset[:4]]
    rng = np.random.default_rng(5)
    rate = np.array(
        [[w.workload.mean(s) * rng.uniform(1.0, 4.0) for s in STORAGE_PATH] for w in tenants]
    )
    bucket = rng.uniform(0.0, 0.005, (4, 3))
    fast = shaper_delays(tenants, rate, bucket)
    for j, t in enumerate(tenants):
        for s, stage in enumerate(STORAGE_PATH):
            c = t.workload.curves[stage]
            from tailbound.dnc import token_bucket_min

            alpha = token_bucket_min(c.rates, c.buckets)
            assert fast[j, s] == pytest.approx(
                shaper_delay(alpha, rate[j, s], bucket[j, s]), abs=1e-9
            )


def test_latency_bound_zero_shaper_delay_on_the_curve(wc62_subset: list[TenantCurves]) -> None:
    w = wc62_subset[0]
    rate = np.array([[w.curves[s].rates[-1] for s in STORAGE_PATH]])
    bucket = np.array([[w.curves[s].buckets[-1] for s in STORAGE_PATH]])
    bound = latency_bounds([Placed(w)], rate, bucket)
    assert bound[0] == pytest.approx(bucket.sum())  # alone: Eq. 5.1 is its own bucket


def test_latency_bounds_equal_the_dnc_tenant_latency(wc62_subset: list[TenantCurves]) -> None:
    from tailbound.dnc import StageLoad, StageShaping, tenant_latency, token_bucket_min

    rng = np.random.default_rng(9)
    tenants = [Placed(w, device=k % 2) for k, w in enumerate(wc62_subset[:5])]
    rate = np.array(
        [[t.workload.mean(s) * rng.uniform(1.0, 3.0) for s in STORAGE_PATH] for t in tenants]
    )
    bucket = rng.uniform(0.0, 0.01, (5, 3))
    fast = latency_bounds(tenants, rate, bucket)
    q, slo = queue_ids(tenants), slos(tenants)
    for j, t in enumerate(tenants):
        stages = []
        for s, stage in enumerate(STORAGE_PATH):
            same = q[:, s] == q[j, s]
            c = t.workload.curves[stage]
            stages.append(
                StageShaping(
                    StageLoad(
                        float(bucket[same & (slo <= slo[j]), s].sum()),
                        float(rate[same & (slo < slo[j]), s].sum()),
                    ),
                    token_bucket_min(c.rates, c.buckets),
                    float(rate[j, s]),
                    float(bucket[j, s]),
                )
            )
        assert fast[j] == pytest.approx(tenant_latency(stages), rel=1e-9, abs=1e-12)


def test_arrival_points_equal_token_bucket_min(wc62_subset: list[TenantCurves]) -> None:
    # the vectorised walk gives the very same floats as the general one, on real curves, scaled
    # curves and curves it must hand over (collinear points, one bucket, equal buckets)
    curves = [w.curves[s] for w in wc62_subset for s in STORAGE_PATH]
    curves += [c.scaled(f) for c in curves for f in (0.8, 1.13)]
    odd = [
        (np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.2, 0.1])),  # collinear
        (np.array([0.5]), np.array([0.2])),
        (np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.1, 0.1])),  # equal last buckets
    ]
    curves += [RbCurve(r, b, float(r[0])) for r, b in odd]
    fast = 0
    for c in curves:
        alpha = token_bucket_min(c.rates, c.buckets)
        xs, ys, tail = arrival_points(c)
        assert np.array_equal(xs, alpha.xs) and np.array_equal(ys, alpha.ys)
        assert tail == alpha.tail
        fast += _envelope_points(c.rates, c.buckets) is not None
    assert fast >= len(curves) // 2


def test_shaper_delays_equal_the_curve_by_curve_formula(wc62_subset: list[TenantCurves]) -> None:
    # h = max_i ((α(x_i) − b)/r − x_i)+, ∞ below the mean rate, r = 0 only with b >= α's last
    # breakpoint: the vectorised computation gives the very same floats
    rng = np.random.default_rng(6)
    for _ in range(40):
        tenants = [Placed(w) for w in rng.choice(np.array(wc62_subset, dtype=object), 4)]
        rate = rng.uniform(0.0, 1.0, (4, 3))
        rate[rng.random((4, 3)) < 0.15] = 0.0
        bucket = rng.uniform(0.0, 0.05, (4, 3))
        expected = np.zeros((4, 3))
        for j, t in enumerate(tenants):
            for s, stage in enumerate(STORAGE_PATH):
                xs, ys, tail = arrival_points(t.workload.curves[stage])
                r, b = rate[j, s], bucket[j, s]
                if tail > r * (1 + 1e-12) + 1e-15:
                    expected[j, s] = np.inf
                elif r <= 0:
                    expected[j, s] = 0.0 if ys[-1] <= b else np.inf
                else:
                    expected[j, s] = max(0.0, float(np.max((ys - b) / r - xs)))
        assert np.array_equal(shaper_delays(tenants, rate, bucket), expected)


def _curves(rate: float, bucket: float, largest: tuple[float, float]) -> TenantCurves:
    from tailbound.model import Slo

    c = RbCurve(np.array([rate, 0.999]), np.array([bucket, 0.0]), rate)
    return TenantCurves("t", Slo(1.0), dict.fromkeys(STORAGE_PATH, c), largest)


def test_server_model_adds_blocking_and_shares_a_level_at_the_device() -> None:
    """Hand values of docs/dnc.md's storage stage: for the tenant of the middle level,
    ``(B + Σ_{k ≤ p} b_k) / (1 − Σ_{k ≤ p} r_k)`` at the device, with B the work the
    less important tenant can have in service; Eq. 5.1 plus two packet times on the links."""
    from tailbound.dnc.device import DeviceLimits
    from tailbound.policies.server import REFERENCE, ServerModel
    from tailbound.profiles import SsdProfile

    profile = SsdProfile.from_spec(
        read_overhead_s=1e-4, read_bytes_per_s=1e8, write_overhead_s=1e-4, write_bytes_per_s=1e8
    )
    model = ServerModel(DeviceLimits.of(profile), packet_s=1e-5)
    hi, mid, lo = (_curves(0.1, 0.01, (4096.0, 0.0)).with_slo(s) for s in (0.05, 0.1, 0.5))
    tenants = [Placed(hi), Placed(mid), Placed(mid.with_slo(0.1, "mid2")), Placed(lo)]
    rate = np.full((4, 3), 0.1)
    bucket = np.full((4, 3), 0.01)
    sound = queue_delays(tenants, rate, bucket, model)
    reference = queue_delays(tenants, rate, bucket, REFERENCE)
    blocking = model.device.blocking(4096.0, 0.0)  # type: ignore[union-attr]
    assert blocking == pytest.approx(49 * (1e-4 + 4096 / 1e8))  # 48 in service, one held
    # the middle level: hi and both mids' buckets and rates, lo blocking
    assert sound[1, 1] == pytest.approx((blocking + 0.03) / (1 - 0.3))
    assert reference[1, 1] == pytest.approx(0.03 / (1 - 0.1))
    # the lowest level: nothing below it, but every rate counts (its own too)
    assert sound[3, 1] == pytest.approx(0.04 / (1 - 0.4))
    # links: Eq. 5.1 (FIFO within a level) plus two packet times in the numerator
    assert sound[1, 0] == pytest.approx((0.03 + 2e-5) / (1 - 0.1))


def test_lp_solutions_pass_the_sound_check(wc62_subset: list[TenantCurves], wc62_dir: Path) -> None:
    """The LP built on the server model never returns limits its own check refuses, and it
    fits fewer tenants than the reference LP (its constraints are tighter)."""
    from tailbound.policies import wc_lp
    from tailbound.policies.server import REFERENCE, check
    from tailbound.policies.workloadcompactor import server_model
    from tailbound.profiles import SsdProfile

    model = server_model(SsdProfile.load(wc62_dir / "profile_ssd.json"), 125e6, 1500)
    sound_fit = reference_fit = 0
    for n in range(2, 7):
        tenants = [Placed(w, device=0) for w in wc62_subset[:n]]
        sol = wc_lp.solve(tenants, 1, model)
        if sol is not None:
            sound_fit = n
            assert check(tenants, sol.rate, sol.bucket, 1, model)
        if wc_lp.solve(tenants, 1, REFERENCE) is not None:
            reference_fit = n
    assert sound_fit <= reference_fit


def test_level_fifo_drops_the_levels_own_rates_and_counts_blocking_by_level() -> None:
    """Hand values of docs/dnc.md's storage stage with one request per level in service
    (``level_mpl = 1``): ``(B + Σ_{k ≤ p} b_k) / (1 − Σ_{k < p} r_k)`` at the device, and the
    blocking at most one request of each less important level and of the demoted ones, plus
    one held."""
    from tailbound.dnc.device import DeviceLimits
    from tailbound.policies.server import ServerModel
    from tailbound.profiles import SsdProfile

    profile = SsdProfile.from_spec(
        read_overhead_s=1e-4, read_bytes_per_s=1e8, write_overhead_s=1e-4, write_bytes_per_s=1e8
    )
    model = ServerModel(DeviceLimits.of(profile, level_mpl=1), packet_s=1e-5)
    assert not model.shares_levels
    hi, mid, lo = (_curves(0.1, 0.01, (4096.0, 0.0)).with_slo(s) for s in (0.05, 0.1, 0.5))
    tenants = [Placed(hi), Placed(mid), Placed(mid.with_slo(0.1, "mid2")), Placed(lo)]
    rate = np.full((4, 3), 0.1)
    bucket = np.full((4, 3), 0.01)
    d = queue_delays(tenants, rate, bucket, model)
    w = 1e-4 + 4096 / 1e8  # one request's work
    # the top level: two levels below it (mid, lo) and the demoted: 3 in service, one held
    assert d[0, 1] == pytest.approx((4 * w + 0.01) / 1.0)
    # the middle level: one level below (lo) and the demoted, one held; hi's rate only
    assert d[1, 1] == pytest.approx((3 * w + 0.03) / (1 - 0.1))
    # the lowest level: nothing below it, the rates of the levels above it only
    assert d[3, 1] == pytest.approx(0.04 / (1 - 0.3))
    # the count bound never exceeds the knapsack bound without the level limit
    shared = DeviceLimits.of(profile)
    assert model.device is not None
    assert model.device.blocking(4096, 0, 1) == pytest.approx(3 * w)
    assert model.device.blocking(4096, 0, 1) < shared.blocking(4096, 0)
    assert model.device.blocking(4096, 0, 100) == pytest.approx(shared.blocking(4096, 0))


def test_level_fifo_bound_holds_in_the_simulator_where_sharing_overestimated() -> None:
    """Three tenants of one level, each sending 20 reads of 64 KiB every 100 ms at the same
    moment: with one request per level in service the last one completes after the three
    bursts (about 45 ms, 0.92 of the new bound); the bound that counts the level's own rates
    (processor sharing inside the level) gives 87 ms for the same limits."""
    from tailbound.model import Cluster, Server, Slo, Tenant
    from tailbound.policies.placement import WorkloadCompactorPolicy, place
    from tailbound.policies.workload import characterize
    from tailbound.policies.workloadcompactor import server_model, to_plan
    from tailbound.profiles import SsdProfile
    from tailbound.traces.trace import Trace
    from tailbound.verify import replay_plan

    profile = SsdProfile.from_spec(
        read_overhead_s=1e-4, read_bytes_per_s=1e8, write_overhead_s=1e-4, write_bytes_per_s=1e8
    )
    link = 1.25e9

    def bursts(i: int) -> Trace:
        t = np.repeat(np.arange(0.0, 10.0, 0.1), 20) + 1e-4 * i
        return Trace.from_arrays(time=t, op=[0] * len(t), size=[65536] * len(t))

    traces = {f"t{i}": bursts(i) for i in range(3)}
    curves = [
        characterize(
            Tenant(n, Slo(0.2, 0.999), Path(n)),
            tr,
            profile=profile,
            link_bandwidth_bytes_per_s=link,
        )
        for n, tr in traces.items()
    ]
    cluster = Cluster(link, (Server("s0", ("ssd0",)),))
    fifo = server_model(profile, link, 1500.0, None, 1)
    shared = server_model(profile, link, 1500.0, None, None)
    result = place(curves, cluster, WorkloadCompactorPolicy(model=fifo))
    server = result.servers[0]
    assert len(server.tenants) == 3
    new = latency_bounds(server.tenants, server.rate, server.bucket, fifo)
    old = latency_bounds(server.tenants, server.rate, server.bucket, shared)
    assert np.all(new < 0.6 * old)
    plan = to_plan(result, cluster, policy="workloadcompactor", safety_margin=1.0)
    assert plan.dispatch.level_mpl == 1
    v = replay_plan(plan, traces, profile=profile.to_json(), link_bandwidth_bytes_per_s=link)
    worst = max(c.max_s / c.bound_s for c in v.checks)
    assert all(c.max_s <= c.bound_s for c in v.checks), v.table()
    assert worst > 0.85  # the new bound is nearly reached: the old one was loose here
