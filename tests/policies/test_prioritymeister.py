"""PriorityMeister's rate limiters (§3.2.1) and prioritizer (§3.2.2) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.characterize import RbCurve
from tailbound.policies.prioritymeister import (
    PmTenant,
    by_slo,
    latencies,
    path_limits,
    prioritize,
    rate_limits,
)
from tailbound.sim import shape
from tailbound.stages import STORAGE_PATH, Stage

ST = Stage.STORAGE


def device_tenant(name: str, slo: float, buckets) -> PmTenant:
    return PmTenant(name, slo, {ST: ("d",)}, {ST: tuple(buckets)}, {})


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_rate_limits_vertices_let_the_trace_through(k: int) -> None:
    """Each chosen bucket lies on or above the trace's r-b curve: shaping the trace by all k
    buckets at once delays nothing."""
    rng = np.random.default_rng(3)
    time = np.cumsum(np.where(rng.uniform(size=4000) < 0.05, rng.exponential(0.3, 4000), 1e-4))
    work = rng.uniform(1e-4, 2e-3, time.size)
    rates = np.linspace(work.sum() / time[-1] * 1.0001, 1.5, 200)
    from tailbound.characterize.rbcurve import rbgen

    buckets = np.minimum.accumulate(rbgen(time, work, rates))
    curve = RbCurve(rates, buckets, float(work.sum() / time[-1]))
    chosen = rate_limits(curve, k)
    assert 1 <= len(chosen) <= k + 1
    assert all(r <= 0.999 for r, _ in chosen)
    released = shape(time, work, [(r, b * (1 + 1e-9) + 1e-12) for r, b in chosen])
    assert np.allclose(released, time)


def test_rate_limits_rejects_zero() -> None:
    c = RbCurve(np.array([0.1, 1.0]), np.array([1.0, 0.1]), 0.1)
    with pytest.raises(ValueError):
        rate_limits(c, 0)


def all_orders_single_stage(tenants: list[PmTenant]) -> bool:
    for order in itertools.permutations(range(len(tenants))):
        prio = {tenants[i].name: {ST: level} for level, i in enumerate(order)}
        bound = latencies(tenants, prio)
        if all(bound[t.name] <= t.slo_s for t in tenants):
            return True
    return False


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 4))
def test_prioritize_finds_an_order_whenever_one_exists(seed: int, n: int) -> None:
    """On one queue the lowest-first search is optimal (thesis §3.2.2's insight: only the
    cumulative effect of the higher levels matters), so it succeeds whenever brute force does."""
    rng = np.random.default_rng(seed)
    tenants = []
    for i in range(n):
        r = float(rng.uniform(0.05, 0.25))
        b = float(rng.uniform(0.001, 0.03))
        buckets = [(r, b), (min(0.99, 3 * r), b / 4)]
        tenants.append(device_tenant(f"t{i}", float(rng.uniform(0.005, 0.15)), buckets))
    result = prioritize(tenants)
    ok = all(result.meets(tenants).values())
    assert ok == all_orders_single_stage(tenants), [repr(t) for t in tenants]
    # the bounds reported are those of the priorities reported
    assert result.bounds == pytest.approx(latencies(tenants, result.priorities))


def test_prioritize_beats_by_slo_on_a_heavy_tight_tenant() -> None:
    """Thesis §3.4.1: bySLO puts the heavy tenant C first (tightest SLO) and starves the
    others; PriorityMeister puts C last, where it still meets its SLO."""
    a = device_tenant("A", 0.016, [(0.05, 0.004), (0.4, 0.001)])
    b = device_tenant("B", 0.020, [(0.05, 0.004), (0.4, 0.002)])
    c = device_tenant("C", 0.014, [(0.55, 0.008), (0.9, 0.004)])
    pm = prioritize([a, b, c])
    assert all(pm.meets([a, b, c]).values())
    assert pm.priorities["C"][ST] == 2
    slo = by_slo([a, b, c])
    assert not all(slo.meets([a, b, c]).values())


def three_stage(name: str, slo: float, client: str, rates, buckets) -> PmTenant:
    queues = {
        Stage.NET_IN: (f"{client}.egress", "s.ingress"),
        Stage.STORAGE: ("d",),
        Stage.NET_OUT: ("s.egress", f"{client}.ingress"),
    }
    limits = {s: ((rates[i], buckets[i]),) for i, s in enumerate(STORAGE_PATH)}
    return PmTenant(name, slo, queues, limits, {})


def test_prioritize_splits_stages_when_no_tenant_fits_lowest() -> None:
    """K is heavy on the request link, X on the device. Neither order used at every stage meets
    both SLOs; the prioritizer's per-stage split (thesis §3.2.2) does: K low on ``net_in``,
    X low on the device and the response link. (Case found by a seeded random search.)"""
    k = three_stage("K", 0.024, "c1", (0.59, 0.01, 0.23), (0.0018, 0.0021, 0.0058))
    x = three_stage("X", 0.051, "c2", (0.04, 0.39, 0.04), (0.0117, 0.0162, 0.0057))
    for first in ("K", "X"):
        prio = {n: {s: 0 if n == first else 1 for s in STORAGE_PATH} for n in ("K", "X")}
        b = latencies([k, x], prio)
        assert b["K"] > 0.024 or b["X"] > 0.051
    result = prioritize([k, x])
    assert all(result.meets([k, x]).values()), result
    levels = {s: (result.priorities["K"][s], result.priorities["X"][s]) for s in STORAGE_PATH}
    assert levels == {Stage.NET_IN: (1, 0), Stage.STORAGE: (0, 1), Stage.NET_OUT: (0, 1)}


def test_by_slo_orders_by_slo_and_shares_levels() -> None:
    ts = [device_tenant(n, s, [(0.1, 0.001)]) for n, s in (("a", 0.2), ("b", 0.1), ("c", 0.2))]
    p = by_slo(ts).priorities
    assert (p["a"][ST], p["b"][ST], p["c"][ST]) == (1, 0, 1)


def test_prioritized_feasible_and_violations_report_the_bounds_over_slo() -> None:
    """The prioritizer's order guarantees the SLOs only when every bound meets its SLO; when
    none exists (two tenants that each need the device to themselves) it says by how much."""
    a = device_tenant("a", 0.012, [(0.5, 0.01)])
    b = device_tenant("b", 0.012, [(0.5, 0.01)])
    result = prioritize([a, b])
    assert not result.feasible([a, b])
    assert not all_orders_single_stage([a, b])
    late = result.violations([a, b])
    assert list(late) == [n for n in ("a", "b") if result.bounds[n] > 0.012]
    assert all(v == pytest.approx(result.bounds[n] - 0.012) for n, v in late.items())
    loose = [device_tenant("a", 1.0, [(0.5, 0.01)]), device_tenant("b", 1.0, [(0.5, 0.01)])]
    ok = prioritize(loose)
    assert ok.feasible(loose) and ok.violations(loose) == {}


def network_tenant(name: str, slo: float, level_buckets, work: float) -> PmTenant:
    """A tenant over two one-link network stages, the same buckets at both and end to end."""
    queues = {Stage.NET_IN: (f"{name}.out",), Stage.NET_OUT: (f"{name}.in",)}
    buckets = dict.fromkeys(queues, tuple(level_buckets))
    return PmTenant(
        name,
        slo,
        queues,
        buckets,
        {},
        tuple(level_buckets),
        dict.fromkeys(queues, work),
    )


def test_latencies_by_analysis_tighter_is_the_smaller() -> None:
    """Ten 5 ms requests at once over two links: 100 ms per stage summed, 55 ms end to end;
    the default takes the smaller."""
    w = network_tenant("w", 1.0, [(0.5, 0.05)], 0.005)
    prio = {"w": {Stage.NET_IN: 0, Stage.NET_OUT: 0}}
    assert latencies([w], prio, analysis="stages")["w"] == pytest.approx(0.1)
    assert latencies([w], prio, analysis="path")["w"] == pytest.approx(0.055)
    assert latencies([w], prio)["w"] == pytest.approx(0.055)
    # a tenant whose only stage is a device: both analyses agree
    d = device_tenant("d", 1.0, [(0.3, 0.02)])
    one = {"d": {ST: 0}}
    assert latencies([d], one, analysis="path")["d"] == pytest.approx(
        latencies([d], one, analysis="stages")["d"]
    )
    with pytest.raises(ValueError, match="analysis"):
        latencies([w], prio, analysis="both")  # type: ignore[arg-type]


def test_prioritize_with_the_path_analysis_admits_what_the_sum_refuses() -> None:
    """SLO 60 ms: the per-stage sum (100 ms) misses it, the end-to-end bound (55 ms) meets it."""
    w = network_tenant("w", 0.06, [(0.5, 0.05)], 0.005)
    assert not prioritize([w], analysis="stages").feasible([w])
    assert prioritize([w]).feasible([w])


def test_path_limits_bound_the_per_request_maximum() -> None:
    """The end-to-end buckets let the per-request maximum of the stage works through unshaped,
    and the largest work per stage is the largest request's."""
    from tailbound.profiles import stage_model
    from tailbound.traces.synthetic import poisson_trace

    trace = poisson_trace(200.0, 10.0, seed=3, read_fraction=0.5, name="t")
    models = {
        s: stage_model(s, link_bandwidth_bytes_per_s=125e6) for s in (Stage.NET_IN, Stage.NET_OUT)
    }
    buckets, work = path_limits(trace, models, 3)
    works = np.vstack([np.asarray(m.tokens(trace)) for m in models.values()])
    peak = works.max(axis=0)
    assert buckets
    assert np.allclose(shape(trace.time, peak, list(buckets)), trace.time)
    assert work == {s: pytest.approx(float(w.max())) for s, w in zip(models, works, strict=True)}
