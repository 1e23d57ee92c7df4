"""The DNC baselines of thesis §4.3.1 (PriorityMeister-style DNC, Silo++, QJump++)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tailbound.characterize import RbCurve
from tailbound.errors import ConfigError
from tailbound.model import Slo, Tenant, TenantSet
from tailbound.policies.admission import Configured, Wire, admit_in_order
from tailbound.policies.dnc_baselines import (
    QJUMP_RATES,
    SILO_PACING_SHARE,
    CurveCache,
    QJumpPolicy,
    SiloPolicy,
    catch_up_buckets,
    effective_rates,
)
from tailbound.policies.floors import replay, replay_results
from tailbound.policies.registry import build
from tailbound.sim.results import WorkloadResult
from tailbound.snc.analysis import TenantBound
from tailbound.traces import read_trace
from tailbound.traces.trace import Trace

CURVE = RbCurve(np.array([0.1, 0.2, 0.4, 0.8]), np.array([0.05, 0.02, 0.01, 0.004]), 0.1)


@pytest.mark.parametrize(
    ("rate", "bucket", "expected"),
    [
        (0.2, 0.0, 0.1),  # 20 ms of burst drained at 0.2
        (0.4, 0.002, 0.02),  # (10 − 2) ms / 0.4
        (0.8, 0.004, 0.0),  # on the curve: no pacing
        (0.3, 0.0, 0.015 / 0.3),  # between points: the chord (20 + 10) / 2 ms
        (0.05, 0.0, math.inf),  # below the mean rate
    ],
)
def test_shaping_delay_table(rate: float, bucket: float, expected: float) -> None:
    assert float(CURVE.shaping_delay(rate, bucket)) == pytest.approx(expected)


def test_effective_rates_smallest_rate_that_fits() -> None:
    budgets = np.array([1.0, 0.5, 0.1, 0.025, 0.005, 1e-4])
    rates = effective_rates(CURVE, budgets, 0.0)
    assert rates.tolist() == [0.1, 0.1, 0.2, 0.4, 0.8, math.inf]
    for r, budget in zip(rates, budgets, strict=True):
        if math.isfinite(r):
            assert CURVE.shaping_delay(r, 0.0) <= budget


# ------------------------------------------------------------------------------ on real traces
TRACES = (5, 7, 8, 12, 14, 19)


@pytest.fixture(scope="module")
def cut_traces(data_dir: Path) -> dict[str, Trace]:
    """The first 60 s of a few wc62 traces, keyed like ``Tenant.trace``."""
    return {
        f"/wc62/{i}": read_trace(data_dir / "wc62" / "traces" / f"trace{i:04d}.txt").slice_time(
            0.0, 60.0
        )
        for i in TRACES
    }


def tenants(slos: Sequence[float], clients: int = 3, servers: int = 2) -> list[Tenant]:
    return [
        Tenant(
            f"t{k}",
            Slo(slo),
            Path(f"/wc62/{TRACES[k]}"),
            f"c{k % clients}",
            server=f"s{k % servers}",
        )
        for k, slo in enumerate(slos)
    ]


def bound_function(policy: str, specs: list[Tenant], traces: dict[str, Trace]):  # type: ignore[no-untyped-def]
    tset = TenantSet(tuple(specs))
    return build(policy, "admission", tset, curves=CurveCache(tset, dict(traces)))


def test_dnc_loose_tenant_only_blocks_for_a_packet(cut_traces: dict[str, Trace]) -> None:
    """A lower-priority tenant can delay a higher one only by one packet per link."""
    specs = tenants([0.05, 0.5], clients=1, servers=1)
    bounds = bound_function("dnc", specs, cut_traces)
    alone = bounds(specs[:1])[0]
    both = bounds(specs)
    packet = Wire().mtu_bytes / 125e6
    assert [b.priority for b in both] == [0, 1]
    assert alone.latency_s <= both[0].latency_s <= alone.latency_s + 4 * packet + 1e-12
    assert both[1].latency_s > both[0].latency_s  # the loose one waits for the tight one's bursts


def test_silo_rates_are_effective_bandwidths(cut_traces: dict[str, Trace]) -> None:
    specs = tenants([0.2, 0.5, 1.0])
    silo = bound_function("silo", specs, cut_traces)
    assert isinstance(silo, SiloPolicy)
    packet = Wire().mtu_bytes / 125e6
    for t, c, e in zip(specs, silo.reference(specs), silo.configure(specs), strict=True):
        assert c.level == e.level == 0  # Silo: one FIFO level
        pacing = c.pacing["in"] + c.pacing["out"]
        assert pacing <= SILO_PACING_SHARE * t.slo_s + 1e-12
        assert e.pacing == c.pacing
        for d in ("in", "out"):
            ((rate, bucket),) = c.buckets[d]
            assert bucket == pytest.approx(packet)
            assert c.pacing[d] == pytest.approx(
                float(silo.curves.curve(t, d).shaping_delay(rate, bucket))
            )
            # enforced: the same rate, the catch-up bucket (at least 2 packets)
            ((enforced_rate, enforced_bucket),) = e.buckets[d]
            assert enforced_rate == rate and enforced_bucket >= 2 * packet
    # a looser SLO never needs more bandwidth
    lo, hi = (
        silo.configure_one(Tenant("x", Slo(s), specs[0].trace, "c0", server="s0")) for s in (0.1, 1)
    )
    assert sum(b[0][0] for b in hi.buckets.values()) <= sum(b[0][0] for b in lo.buckets.values())


def test_qjump_raises_class_until_slo_met(cut_traces: dict[str, Trace]) -> None:
    specs = tenants([0.3, 0.3, 0.3, 0.3])
    qjump = bound_function("qjump", specs, cut_traces)
    assert isinstance(qjump, QJumpPolicy)
    levels = qjump.levels(specs)
    bounds = qjump(specs)
    for t, level, b in zip(specs, levels, bounds, strict=True):
        if b.meets_slo and level > 0:
            # every lower class was too slow for it (or for an earlier tenant)
            lower = qjump.at_level(t, level - 1)
            prefix = specs[: specs.index(t) + 1]
            head = [qjump.at_level(s, lv) for s, lv in zip(prefix[:-1], levels, strict=False)]
            assert not all(x.meets_slo for x in qjump.evaluate(prefix, [*head, lower]))
        assert b.priority == level
        assert b.latency_in_s >= qjump.at_level(t, level).pacing["in"]
    # the admitted prefix keeps its classes when more tenants come
    assert qjump.levels(specs[:2]) == levels[:2]
    assert len(QJUMP_RATES) == 7


def test_screen_gives_the_same_decisions(cut_traces: dict[str, Trace]) -> None:
    specs = tenants([0.05, 0.02, 0.2, 0.01, 0.1, 0.05], clients=2, servers=1)
    for policy in ("dnc", "silo"):
        screened = admit_in_order(specs, bound_function(policy, specs, cut_traces))
        plain_fn = bound_function(policy, specs, cut_traces)

        def plain(ts: Sequence[Tenant], fn=plain_fn) -> list[TenantBound]:  # type: ignore[no-untyped-def]
            return fn(ts)

        full = admit_in_order(specs, plain)
        assert [d.admitted for d in screened] == [d.admitted for d in full]
        assert any(d.admitted for d in full) and not all(d.admitted for d in full)


def test_device_tenants_need_a_profile() -> None:
    spec = Tenant("a", Slo(0.1), Path("x"), "c", server="s", device="ssd0")
    with pytest.raises(ConfigError, match="no ssd_profile"):
        build("dnc", "admission", TenantSet((spec,)))


def test_catch_up_buckets_by_hand() -> None:
    """``b' = 2b + r·(b + Σ_O b' + blocking) / (1 − Σ_O r)`` over the flows of one egress link
    (module docstring, *Catch-up buckets*), solved jointly; ``inf`` without a finite wait."""
    b = 1.0
    # two flows of one level (each in the other's O), a less important one below them
    hi = 2 * b + 0.25 * (b + b)  # b' = 2 + (0.2 / 0.8)·(1 + b' + 1)  →  b' = 2.5 / 0.75
    sizes = catch_up_buckets([(5, (0.2, b)), (5, (0.2, b)), (6, (0.5, b))], b)
    assert sizes[:2] == pytest.approx([hi / 0.75, hi / 0.75])
    assert sizes[2] == pytest.approx(2 * b + 0.5 / 0.6 * (b + 2 * hi / 0.75))
    # a level alone at the top: no blocking without a less important flow
    assert catch_up_buckets([(0, (0.5, b))], b) == pytest.approx([2 * b + 0.5 * b])
    # no finite wait: the link at or above capacity for a flow and those below it
    assert catch_up_buckets([(0, (0.6, b)), (0, (0.5, b)), (1, (0.01, b))], b) == [math.inf] * 3
    over = catch_up_buckets([(0, (0.3, b)), (1, (0.8, b)), (2, (0.01, b))], b)
    assert math.isfinite(over[0]) and over[1:] == [math.inf, math.inf]


def test_qjump_bound_holds_with_its_enforced_buckets(cut_traces: dict[str, Trace]) -> None:
    """The case the property test found (t4 at class rate 0.5 behind two class-0.2 tenants on
    one client, replayed over the bound by 0.18 %): with the catch-up buckets every tenant stays
    within its bound, in its request direction too (its arrivals there are the trace's). The
    one-packet buckets of the pure pacer, enforced in the egress scheduler, exceed t4's request
    bound: the tokens lost while it waits for the wire (module docstring, *Catch-up buckets*)."""
    specs = tenants([0.3, 0.05, 0.05, 0.3, 0.3], clients=1, servers=1)
    bounds = bound_function("qjump", specs, cut_traces)
    admitted = [d.tenant for d in admit_in_order(specs, bounds) if d.admitted]
    assert [t.name for t in admitted] == ["t0", "t3", "t4"]
    traces = [cut_traces[str(t.trace)] for t in admitted]
    final = {b.name: b for b in bounds(admitted)}
    assert [b.priority for b in final.values()] == [5, 5, 6]

    def replayed(config: list[Configured]) -> dict[str, WorkloadResult]:
        return replay_results(admitted, traces, config, mode=bounds.mode)

    enforced = replayed(bounds.configure(admitted))
    for name, b in final.items():
        r = enforced[name]
        assert float(np.max(r.latency)) <= b.latency_s, name
        assert float(np.max(r.stage_time[:, 0])) <= b.latency_in_s, name
    one_packet = replayed(bounds.reference(admitted))["t4"]
    assert float(np.max(one_packet.stage_time[:, 0])) > final["t4"].latency_in_s


def worst_delay(buckets: Sequence[tuple[float, float]]) -> float:
    """``sup_t min_i (r_i t + b_i) − t``: a flow shaped by ``buckets`` alone at a server of rate
    1, on a fine grid of ``t`` (the breakpoints of a concave curve are where it peaks)."""
    t = np.concatenate(
        [
            [0.0],
            [(b2 - b1) / (r1 - r2) for (r1, b1), (r2, b2) in pairwise(buckets) if r1 != r2],
        ]
    )
    t = np.concatenate([t, np.linspace(0.0, 10.0, 100_001)])
    alpha = np.min([r * t + b for r, b in buckets], axis=0)
    return float(np.max(alpha - t))


@pytest.mark.parametrize("policy", ["dnc", "silo", "qjump"])
def test_device_tenants_get_a_storage_bound(
    policy: str, cut_traces: dict[str, Trace], wc62_dir: Path
) -> None:
    """A tenant with a device gets the LP bound of its device: alone, its busy period at a
    device that shares service among its requests, ``min_i b_i / (1 − r_i)`` over its storage
    buckets (docs/dnc.md, "The storage stage"); its total is the sum of its three parts; a more
    important tenant on another server's device leaves its storage part unchanged, on the same
    device it raises it."""
    profile = wc62_dir / "profile_ssd.json"
    a = Tenant("a", Slo(0.5), Path(f"/wc62/{TRACES[0]}"), "c0", server="s0", device="ssd0")
    b = Tenant("b", Slo(0.05), Path(f"/wc62/{TRACES[3]}"), "c1", server="s1", device="ssd0")
    same = Tenant("b", Slo(0.05), Path(f"/wc62/{TRACES[3]}"), "c1", server="s0", device="ssd0")
    tset = TenantSet((a, same), ssd_profile=profile)
    fn = build(policy, "admission", tset, curves=CurveCache(tset, dict(cut_traces)))
    alone = fn([a])[0]
    assert alone.latency_storage_s is not None and alone.latency_storage_s > 0
    assert alone.latency_s == pytest.approx(
        alone.latency_in_s + alone.latency_out_s + alone.latency_storage_s
    )
    storage = fn.storage_flow(a, 0)
    assert storage.queues == ("s0/ssd0",) and len(storage.buckets) >= 1
    busy = min(b / (1 - r) for r, b in storage.buckets)
    assert alone.latency_storage_s == pytest.approx(busy, rel=1e-6, abs=1e-9)
    assert alone.latency_storage_s >= worst_delay(storage.buckets)  # FIFO would give less
    elsewhere = fn([a, b])[0]
    assert elsewhere.latency_storage_s == pytest.approx(alone.latency_storage_s, rel=1e-9)
    shared = fn([a, same])[0]
    assert shared.latency_storage_s is not None
    assert shared.latency_storage_s > alone.latency_storage_s


@pytest.mark.parametrize(
    ("policy", "slos"),
    [
        ("dnc", [0.05, 0.1, 0.2, 0.5, 0.05, 0.3]),
        ("silo", [0.5, 1.0, 2.0, 1.0, 0.8, 2.0]),
        ("qjump", [0.5, 1.0, 2.0, 1.0, 0.8, 2.0]),
    ],
)
def test_bounds_never_exceeded_in_the_simulator(
    cut_traces: dict[str, Trace], policy: str, slos: list[float]
) -> None:
    """Admit, then replay the admitted tenants' traces (the ones the bounds were computed from)
    with the policy's priorities and rate limits: no request exceeds its tenant's bound."""
    specs = tenants(slos)
    bounds = bound_function(policy, specs, cut_traces)
    admitted = [d.tenant for d in admit_in_order(specs, bounds) if d.admitted]
    assert len(admitted) >= 2
    final = bounds(admitted)
    assert all(math.isfinite(b.latency_s) for b in final)
    enforced = bounds.configure(admitted)
    latency = replay(
        admitted, [cut_traces[str(t.trace)] for t in admitted], enforced, mode=bounds.mode
    )
    worst = {t.name: float(np.nanmax(latency[t.name])) for t in admitted}
    for b in final:
        assert worst[b.name] <= b.latency_s, (b.name, worst[b.name], b.latency_s)
    # not vacuous: some tenant reaches most of its bound (measured: 0.97, 0.95, 0.99)
    assert max(worst[b.name] / b.latency_s for b in final) > 0.5


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    policy=st.sampled_from(["dnc", "silo", "qjump"]),
    slos=st.lists(st.sampled_from([0.05, 0.1, 0.3, 1.0, 2.0]), min_size=2, max_size=6),
    clients=st.integers(1, 3),
)
def test_bounds_never_exceeded_property(
    cut_traces: dict[str, Trace], policy: str, slos: list[float], clients: int
) -> None:
    """Any SLO mix and host layout: the admitted tenants replayed stay within their bounds."""
    specs = tenants(slos, clients=clients, servers=1)
    bounds = bound_function(policy, specs, cut_traces)
    admitted = [d.tenant for d in admit_in_order(specs, bounds) if d.admitted]
    if not admitted:
        return
    enforced = bounds.configure(admitted)
    latency = replay(
        admitted, [cut_traces[str(t.trace)] for t in admitted], enforced, mode=bounds.mode
    )
    for b in bounds(admitted):
        assert float(np.nanmax(latency[b.name])) <= b.latency_s
