"""Conformance policing (tailbound.policies.policing.Policed): each tenant's traffic beyond its
decision trace's load bucket is demoted below every level."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailbound.experiments.snc_fig410 import caches, population
from tailbound.model import Slo, Tenant, TenantSet
from tailbound.policies.admission import Configured, SncPolicy, admit_in_order, network_plan
from tailbound.policies.dnc_baselines import CurveCache
from tailbound.policies.floors import replay_results
from tailbound.policies.policing import Policed, load_bucket
from tailbound.snc.incremental import IncrementalSnc
from tailbound.stages import Stage


def test_a_burst_the_decision_trace_lacked_is_demoted_below_a_less_important_tenant(
    data_dir: Path,
) -> None:
    """Fig. 4.10, order 19 (docs/results-snc.md): w076 (wc62 trace 14, 60 ms class) has a write
    burst in its second half that misses its own SLO alone; w028 (trace 28, 150 ms class, same
    client host) takes 158 ms at its worst 3-minute window behind it, 15 ms on the first halves.
    Policed, w076's work beyond its first half's load goes below w028, which keeps 50 ms; the
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
    for t, c in zip(specs, rules, strict=True):
        for d in ("in", "out"):
            curve = curves.curve(t, d)  # the first half's: the decision trace's load
            assert c.buckets[d] == ((curve.rates[0], curve.buckets[0]),)
            assert curve.rates[0] == pytest.approx(curve.mean_rate, rel=1e-9)
            assert curve.buckets[0] > 0
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


#: Fig. 4.10, order 8 (docs/results-snc.md): the tenants admitted on w008's client host, with
#: their SLOs (s) and levels under the default rule (split levels in 7: the 300 ms class unsplit).
ORDER_8_CLIENT08 = (
    ("w128", 0.30, 6),
    ("w092", 0.03, 0),
    ("w068", 0.15, 4),
    ("w116", 0.30, 6),
    ("w140", 0.15, 4),
    ("w008", 0.06, 3),
    ("w044", 0.30, 6),
    ("w164", 0.30, 6),
    ("w056", 0.30, 6),
    ("w104", 0.06, 2),
)


def test_the_load_bucket_leaves_a_tenants_burst_shape_to_the_priorities(data_dir: Path) -> None:
    """Why one bucket on the load (policing module docstring): w008's second half has bursts
    beyond its first half's medium-rate bucket and 13% more request work. With PriorityMeister's
    three buckets the bursts themselves are demoted and w008 misses its 60 ms through its own
    demotion; with the load bucket only the work beyond its first half's cumulative load is, and
    it keeps its latency with levels only within a few per cent."""
    pop = population(data_dir, 180, seed=410)
    by_name = {t.name: t for t in pop.tenants}
    specs = [
        Tenant(n, Slo(slo), by_name[n].trace, "client08", server=by_name[n].server)
        for n, slo, _ in ORDER_8_CLIENT08
    ]
    levels = [level for _, _, level in ORDER_8_CLIENT08]
    _, curves = caches(pop)
    second = [pop.second[str(t.trace)] for t in specs]

    def w008(rules: list[Configured], mode: str) -> float:
        return replay_results(specs, second, rules, mode=mode)["w008"].judged(0.999).window_s

    levels_only = w008([Configured(level) for level in levels], "shaping")
    three = w008(
        [
            Configured(level, {d: curves.rate_limits(t, d) for d in ("in", "out")})
            for t, level in zip(specs, levels, strict=True)
        ],
        "demotion",
    )
    load = w008(
        [
            Configured(level, {d: (load_bucket(curves.curve(t, d)),) for d in ("in", "out")})
            for t, level in zip(specs, levels, strict=True)
        ],
        "demotion",
    )
    assert levels_only < 0.06 < three
    assert levels_only <= load < min(0.06, levels_only * 1.05)


def test_a_tenant_with_a_device_is_policed_on_the_network_only(data_dir: Path) -> None:
    """With an SSD profile, a tenant with a device gets its load buckets per network direction
    and none at its device (policing module docstring: measured, the device is left to the
    priorities); the plan holds them in demotion mode."""
    profile = data_dir / "wc62" / "profile_ssd.json"
    trace = data_dir / "wc62" / "traces" / "trace0003.txt"
    spec = Tenant("d", Slo(0.2), trace, "c0", server="s0", device="ssd0")
    tset = TenantSet((spec,), 125e6, ssd_profile=profile)
    curves = CurveCache(tset)
    policed = Policed(SncPolicy(lambda tenants: []), curves)
    (rule,) = policed.configure([spec])
    assert sorted(rule.buckets) == ["in", "out"]
    plan = network_plan("p", [spec], [rule], link_bytes_per_s=125e6, mode=policed.mode)
    (t,) = plan.tenants
    assert Stage.STORAGE not in t.limits
    for stage, d in ((Stage.NET_IN, "in"), (Stage.NET_OUT, "out")):
        assert (t.limits[stage].rate, t.limits[stage].bucket_s) == load_bucket(
            curves.curve(spec, d)
        )
        assert plan.disciplines[stage].mode == "demotion"
