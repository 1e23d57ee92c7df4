"""PriorityMeister on a Plan: the prioritized plan replayed by the simulator
(``scenario_from_plan`` in demotion mode) stays within its LP bounds, end to end."""

from __future__ import annotations

import numpy as np

from tailbound.model import Slo
from tailbound.plan import Bound, Plan, StageLimit, TenantPlan
from tailbound.policies.pm_plan import groups, plan_tenant, prioritize_all, prioritized_plan
from tailbound.policies.prioritymeister import PmTenant
from tailbound.profiles import SsdProfile
from tailbound.sim import Scenario, scenario_from_plan
from tailbound.sim.fields import Fields
from tailbound.sim.sources import synthetic_trace
from tailbound.stages import STORAGE_PATH, Stage

PROFILE = {
    "bandwidthTable": [
        {"requestSize": 4096, "readBandwidth": 4e7, "writeBandwidth": 2e7},
        {"requestSize": 65536, "readBandwidth": 1.5e8, "writeBandwidth": 8e7},
    ]
}
BANDWIDTH = 125e6


def spec(rate: float, c2: float, size: int, seed: int) -> dict:
    return {
        "synthetic": {
            "kind": "onoff",
            "rate": rate,
            "c2": c2,
            "duration_s": 30.0,
            "seed": seed,
            "size_bytes": size,
        }
    }


def test_prioritized_plan_replays_within_its_bounds() -> None:
    sources = {
        "A": spec(300.0, 4.0, 4096, 1),
        "B": spec(60.0, 10.0, 65536, 2),
        "C": spec(900.0, 2.0, 4096, 3),
    }
    slos = {"A": 0.05, "B": 0.08, "C": 0.06}
    limit = StageLimit(1.0, 1.0)
    placed = Plan(
        "workloadcompactor",
        1,
        [
            TenantPlan(
                n,
                Slo(slos[n]),
                "s0",
                "d0",
                {s: 0 for s in STORAGE_PATH},
                {s: limit for s in STORAGE_PATH},
                Bound(0.0, "test"),
            )
            for n in sources
        ],
    )
    profile = SsdProfile.from_json(PROFILE)
    traces = {n: synthetic_trace(Fields(s["synthetic"], None, ""), n) for n, s in sources.items()}
    tenants = [
        plan_tenant(t, traces[t.name], profile=profile, link_bandwidth_bytes_per_s=BANDWIDTH, k=3)
        for t in placed.tenants
    ]
    result = prioritize_all(tenants)
    plan = prioritized_plan(
        placed, tenants, result, link_bandwidth_bytes_per_s=BANDWIDTH, policy="prioritymeister"
    )
    assert all(len(t.buckets(Stage.STORAGE)) >= 2 for t in plan.tenants)
    assert plan.discipline(Stage.STORAGE).mode == "demotion"  # PriorityMeister's enforcer
    assert all(t.bound.analysis == "pm-lp" for t in plan.tenants)
    doc = scenario_from_plan(plan, sources, profile=PROFILE, link_bandwidth_bytes_per_s=BANDWIDTH)
    for d in doc["devices"]:  # non-preemptive, one request at a time, no low beside high
        d.update(read_mpl=1, write_mpl=1, low_priority_mpl=0)
    sim = Scenario.from_dict(doc).simulator()
    sim.run()
    results = sim.results()
    for t in plan.tenants:
        worst = float(np.max(results[t.name].latency))
        assert np.isfinite(t.latency_bound_s)
        assert worst <= t.latency_bound_s, (t.name, worst, t.latency_bound_s)


def test_groups_join_tenants_that_share_a_queue() -> None:
    def tenant(name: str, device: str) -> PmTenant:
        return PmTenant(name, 1.0, {Stage.STORAGE: (device,)}, {Stage.STORAGE: ((0.1, 0.1),)}, {})

    found = groups([tenant("a", "x"), tenant("b", "y"), tenant("c", "x")])
    assert [[t.name for t in g] for g in found] == [["a", "c"], ["b"]]


def test_prioritize_all_byslo_matches_levels() -> None:
    ts = [
        PmTenant(n, slo, {Stage.STORAGE: ("d",)}, {Stage.STORAGE: ((0.1, 0.001),)}, {})
        for n, slo in (("a", 0.5), ("b", 0.1))
    ]
    r = prioritize_all(ts, "byslo")
    assert r.priorities["b"][Stage.STORAGE] == 0 and r.priorities["a"][Stage.STORAGE] == 1
