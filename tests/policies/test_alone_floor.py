"""The measured latency alone as a floor under predicted latencies (tailbound.policies.floors)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound.experiments.snc_fig410 import caches, population
from tailbound.model import DEFAULT_LINK_BYTES_PER_S as LINK_BYTES_PER_S
from tailbound.model import Slo, Tenant, TenantSet
from tailbound.policies.admission import Configured, SncPolicy, admit_in_order, to_bound
from tailbound.policies.floors import AloneFloor, alone_latency, replay
from tailbound.sim.results import percentile
from tailbound.snc.analysis import TenantBound
from tailbound.snc.incremental import IncrementalSnc


def test_every_request_is_slower_shared_than_alone(data_dir: Path) -> None:
    """The floor's premise, request by request: sharing links (at higher, equal and lower
    priority levels) never makes a tenant's request faster than when its trace runs alone."""
    pop = population(data_dir, 6, seed=410)
    specs = [
        Tenant(t.name, Slo(0.1), t.trace, f"c{i % 2}", server="s0")
        for i, t in enumerate(pop.tenants)
    ]
    traces = [pop.first[str(t.trace)].slice_time(0.0, 60.0) for t in specs]
    shared = replay(specs, traces, [Configured(i % 3) for i in range(len(specs))])
    queued = 0
    for spec, trace in zip(specs, traces, strict=True):
        alone = replay([spec], [trace], [Configured(0)])[spec.name]
        assert len(alone) == len(shared[spec.name]) == len(trace)
        assert np.all(shared[spec.name] >= alone - 1e-12), spec.name
        queued += int(np.sum(shared[spec.name] > alone + 1e-9))
        assert alone_latency(spec, trace, LINK_BYTES_PER_S) == percentile(alone, spec.percentile)
    assert queued > 0  # the tenants did interfere


def test_floor_rejects_a_tenant_whose_own_bursts_miss_its_slo(data_dir: Path) -> None:
    """w038 of the Fig. 4.10 population: the reference MMPP smooths its runs of 128 KiB writes,
    so SNC-Meister's bound admits it at 30 ms, while its own first half alone already takes
    ~46 ms at the 99.9th percentile (and so does the replayed second half)."""
    pop = population(data_dir, 39, seed=410)
    (w038,) = [t for t in pop.tenants if t.name == "w038"]
    spec = Tenant("w038", Slo(0.030), w038.trace, w038.client_host, server=w038.server)
    fits, _ = caches(pop)
    tset = TenantSet((spec,))
    model = admit_in_order([spec], SncPolicy(IncrementalSnc(tset, fits)))[0]
    assert model.admitted and model.bound.latency_s < 0.030
    assert model.bound.latency_alone_s is None
    floor = AloneFloor(
        SncPolicy(IncrementalSnc(tset, fits)), lambda t: pop.first[str(t.trace)], 125e6
    )
    floored = admit_in_order([spec], floor)[0]
    alone = alone_latency(spec, pop.first[str(spec.trace)], 125e6)
    assert not floored.admitted and floored.violated == ("w038",)
    assert floored.bound.latency_alone_s == alone == floored.bound.latency_s
    assert alone > 0.040
    assert floored.bound.latency_in_s == model.bound.latency_in_s  # directions untouched
    # the model's admission would have been a violation on the unseen half
    assert alone_latency(spec, pop.second[str(spec.trace)], 125e6) > 0.030


class _Fixed:
    """A bound function giving every tenant ``latency_s``, with or without the screen."""

    def __init__(self, latency_s: float, screen: bool) -> None:
        self.latency_s = latency_s
        if screen:
            self.newcomer_bound = lambda tenants: self(tenants)[-1]

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        per = {"in": self.latency_s / 2, "out": self.latency_s / 2}
        return [TenantBound.of_directions(t, 0, per) for t in tenants]


def test_floor_never_lowers_a_bound_and_measures_each_trace_once(data_dir: Path) -> None:
    pop = population(data_dir, 2, seed=410)
    specs = [
        Tenant(t.name, Slo(0.05), t.trace, t.client_host, server=t.server) for t in pop.tenants
    ]
    reads: list[str] = []

    def trace_of(t: Tenant):  # type: ignore[no-untyped-def]
        reads.append(t.name)
        return pop.first[str(t.trace)].slice_time(0.0, 30.0)

    memo: dict[tuple[str, float], float] = {}
    high = AloneFloor(SncPolicy(_Fixed(10.0, screen=False)), trace_of, LINK_BYTES_PER_S, memo)
    assert not hasattr(high, "newcomer_bound")
    for b in high(specs):
        assert b.latency_s == 10.0 and b.latency_alone_s is not None
        assert 0 < b.latency_alone_s < 10.0
        assert to_bound(b, "snc-meister", worst_case=False).alone_s == b.latency_alone_s
    low = AloneFloor(SncPolicy(_Fixed(0.0, screen=True)), trace_of, LINK_BYTES_PER_S, memo)
    key = {t.name: (str(t.trace), t.percentile) for t in specs}
    for b in [*low(specs), low.newcomer_bound(specs)]:
        assert b.latency_s == b.latency_alone_s == memo[key[b.name]]
    assert sorted(reads) == sorted(t.name for t in specs)  # one replay per trace, shared memo
    assert math.isinf(
        AloneFloor(SncPolicy(_Fixed(math.inf, False)), trace_of, 1.25e8, memo)(specs)[0].latency_s
    )


def test_floor_with_a_device_measures_through_it(data_dir: Path) -> None:
    """With the SSD profile, a tenant with a device is replayed alone through its device too:
    its floor is at least its network latency alone; without the profile (or without a device)
    the network latency alone is the floor."""
    import dataclasses

    pop = population(data_dir, 3, seed=410)
    profile = data_dir / "wc62" / "profile_ssd.json"
    spec = dataclasses.replace(pop.tenants[2], slo=Slo(0.05), device="ssd0")
    trace = pop.first[str(spec.trace)].slice_time(0.0, 60.0)
    fixed = SncPolicy(_Fixed(0.0, screen=False))
    net = AloneFloor(fixed, lambda t: trace, LINK_BYTES_PER_S).latency_alone(spec)
    device = AloneFloor(fixed, lambda t: trace, LINK_BYTES_PER_S, profile=profile)
    assert net == alone_latency(spec, trace, LINK_BYTES_PER_S)
    assert device.latency_alone(spec) == alone_latency(spec, trace, LINK_BYTES_PER_S, profile)
    assert device.latency_alone(spec) > net
    no_device = dataclasses.replace(spec, device=None)
    assert device.latency_alone(no_device) == net


def test_window_floor_is_the_worst_three_minute_window_alone(data_dir: Path) -> None:
    """``window_floor``: the latency alone as the SLO is judged over 3-minute windows (every
    10 s), measured once per trace apart from the whole-trace percentile in the shared memo."""
    from tailbound.policies.floors import alone_result

    pop = population(data_dir, 2, seed=410)
    spec = Tenant("w001", Slo(0.05), pop.tenants[1].trace, "c0", server="s0")
    trace = pop.first[str(spec.trace)]
    memo: dict[tuple[str, float], float] = {}
    fixed = SncPolicy(_Fixed(0.0, screen=False))
    whole = AloneFloor(fixed, lambda t: trace, LINK_BYTES_PER_S, memo).latency_alone(spec)
    window = AloneFloor(
        fixed, lambda t: trace, LINK_BYTES_PER_S, memo, window_floor=True
    ).latency_alone(spec)
    judged = alone_result(spec, trace, LINK_BYTES_PER_S).judged(spec.percentile)
    assert (whole, window) == (judged.whole_s, judged.window_s)
    assert len(memo) == 2
