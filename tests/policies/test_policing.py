"""Conformance policing (tailbound.policies.policing.Policed): each tenant's traffic beyond the
token buckets its decision trace passes is demoted below every level."""

from __future__ import annotations

from pathlib import Path

from tailbound.experiments.snc_fig410 import caches, population
from tailbound.model import Slo, Tenant, TenantSet
from tailbound.policies.admission import Configured, SncPolicy, admit_in_order, network_plan
from tailbound.policies.dnc_baselines import PM_BUCKETS, CurveCache
from tailbound.policies.floors import replay_results
from tailbound.policies.policing import Policed
from tailbound.snc.incremental import IncrementalSnc
from tailbound.stages import Stage


def test_a_burst_the_decision_trace_lacked_is_demoted_below_a_less_important_tenant(
    data_dir: Path,
) -> None:
    """Fig. 4.10, order 19 (docs/results-snc.md): w076 (wc62 trace 14, 60 ms class) has a write
    burst in its second half that misses its own SLO alone; w028 (trace 28, 150 ms class, same
    client host) takes 158 ms at its worst 3-minute window behind it, 15 ms on the first halves.
    Policed, the burst beyond w076's first-half buckets goes below w028, which keeps 50 ms; the
    first halves pass their buckets, so nothing changes on the decision's data, and the bounds
    and decisions are the wrapped policy's."""
    pop = population(data_dir, 77, seed=410)
    by_name = {t.name: t for t in pop.tenants}
    specs = [
        Tenant(n, Slo(slo), by_name[n].trace, "client04", server=by_name[n].server)
        for n, slo in (("w076", 0.06), ("w028", 0.15))
    ]
    fits, curves = caches(pop)
    plain = SncPolicy(IncrementalSnc(TenantSet(tuple(specs)), fits))
    policed = Policed(plain, curves)
    assert policed.mode == "demotion" and plain.mode == "shaping"
    rules = policed.configure(specs)
    assert [c.level for c in rules] == [c.level for c in plain.configure(specs)] == [0, 1]
    assert all(len(c.buckets[d]) == PM_BUCKETS for c in rules for d in ("in", "out"))
    assert [(d.admitted, d.bound) for d in admit_in_order(specs, policed)] == [
        (d.admitted, d.bound) for d in admit_in_order(specs, plain)
    ]

    def judged(traces: str, rules: list[Configured], mode: str) -> dict[str, float]:
        halves = pop.second if traces == "second" else pop.first
        results = replay_results(specs, [halves[str(t.trace)] for t in specs], rules, mode=mode)
        return {t.name: results[t.name].judged(0.999).window_s for t in specs}

    levels_only = [Configured(c.level) for c in rules]
    before = judged("second", levels_only, "shaping")
    after = judged("second", rules, "demotion")
    assert before["w028"] > 0.15 > 0.06 > after["w028"]  # the violation through sharing, gone
    assert after["w076"] > 0.06  # w076 misses alone anyway
    assert judged("first", rules, "demotion") == judged("first", levels_only, "shaping")


def test_a_tenant_with_a_device_is_policed_at_its_device_too(data_dir: Path) -> None:
    """With an SSD profile, a tenant with a device gets buckets in device-seconds on its storage
    r-b curve; the plan holds them at the storage stage (no link capacity), a network-only
    replay leaves them out, and the tenant's own trace passes every one."""
    profile = data_dir / "wc62" / "profile_ssd.json"
    trace = data_dir / "wc62" / "traces" / "trace0003.txt"
    spec = Tenant("d", Slo(0.2), trace, "c0", server="s0", device="ssd0")
    tset = TenantSet((spec,), 125e6, ssd_profile=profile)
    curves = CurveCache(tset)
    policed = Policed(SncPolicy(lambda tenants: []), curves)
    (rule,) = policed.configure([spec])
    assert sorted(rule.buckets) == ["in", "out", "storage"]
    storage = curves.curve(spec, "storage")
    assert all(b >= float(storage.bucket_at(r)) * (1 - 1e-9) for r, b in rule.buckets["storage"])
    plan = network_plan("p", [spec], [rule], link_bytes_per_s=125e6, mode=policed.mode)
    (t,) = plan.tenants
    limits = [t.limits[Stage.STORAGE], *t.extra_limits[Stage.STORAGE]]
    assert [(x.rate, x.bucket_s) for x in limits] == list(rule.buckets["storage"])
    assert all(x.capacity_per_s is None for x in limits)
    assert plan.disciplines[Stage.STORAGE].mode == "demotion"
    network = network_plan("p", [spec], [rule], link_bytes_per_s=125e6, network_only=True)
    assert Stage.STORAGE not in network.tenants[0].limits
