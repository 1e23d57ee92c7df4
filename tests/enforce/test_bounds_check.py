"""Each tenant's realised bound against its SLO and the Plan's bound: within, above the Plan's
(a warning), above the SLO (refused), and the stochastic Plans that are only warned."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tailbound.enforce.bounds_check import check_bounds
from tailbound.model import Slo
from tailbound.plan import Bound
from tailbound.stages import Stage

from .net_plans import C, plan, tenant, two_clients


def test_check_bounds_against_the_slo_and_the_plan() -> None:
    checks = {c.tenant: c for c in check_bounds(two_clients(), C)}
    a = checks["A"]  # SLO 25 ms, plan 25 ms, realised 20.2 ms
    assert not a.over_slo and not a.over_plan and "within the plan's bound" in a.line()
    low = dataclasses.replace(two_clients().tenants[0], bound=Bound(0.005, "test"))
    p = dataclasses.replace(two_clients(), tenants=[low, *two_clients().tenants[1:]])
    a = next(c for c in check_bounds(p, C) if c.tenant == "A")
    assert a.over_plan and not a.over_slo and "above the plan's bound" in a.line()
    tight = dataclasses.replace(low, slo=Slo(0.019, 0.99))
    p = dataclasses.replace(two_clients(), tenants=[tight, *two_clients().tenants[1:]])
    assert [c.tenant for c in check_bounds(p, C) if c.over_slo] == ["A"]
    # a storage tenant: the plan's network parts are replaced by the realised ones
    stor = dataclasses.replace(
        two_clients().tenants[0],
        device="ssd0",
        priority={**two_clients().tenants[0].priority, Stage.STORAGE: 0},
        bound=Bound(
            0.02, "t", stages={Stage.NET_IN: 0.001, Stage.STORAGE: 0.017, Stage.NET_OUT: 0.002}
        ),
        slo=Slo(0.05, 0.99),
    )
    p = dataclasses.replace(two_clients(), tenants=[stor, *two_clients().tenants[1:]])
    a = next(c for c in check_bounds(p, C) if c.tenant == "A")
    assert a.realised_s == pytest.approx(0.02 - 0.003 + a.network_s)
    # without the split the network part is added to the whole bound (an upper bound)
    stor = dataclasses.replace(stor, bound=Bound(0.02, "t"))
    p = dataclasses.replace(two_clients(), tenants=[stor, *two_clients().tenants[1:]])
    a = next(c for c in check_bounds(p, C) if c.tenant == "A")
    assert a.realised_s == pytest.approx(0.02 + a.network_s)


def test_a_plan_without_buckets_and_a_stochastic_bound_is_warned_not_refused() -> None:
    snc = [
        dataclasses.replace(
            tenant(n, lvl, 0.1, 1000, slo=0.05), limits={}, bound=Bound(0.02, "snc", 0.99)
        )
        for n, lvl in (("A", 0), ("L", 1))
    ]
    checks = check_bounds(plan("shaping", *snc), C)
    assert all(c.unbounded_stochastic and not c.over_slo and c.over_plan for c in checks)
    assert "the plan's is stochastic (p99)" in checks[0].line()
    # the same without buckets but a worst-case plan bound is refused
    worst = [dataclasses.replace(t, bound=Bound(0.02, "dnc", 1.0)) for t in snc]
    assert all(c.over_slo for c in check_bounds(plan("shaping", *worst), C))


def test_a_policed_stochastic_plan_whose_worst_case_misses_the_slo_is_warned_not_refused() -> None:
    # SNC-Meister with conformance policing: buckets (so a finite worst case) but a stochastic
    # bound; a worst case above the SLO is what statistical multiplexing admits, not a refusal
    big = 1_000_000  # bytes: 80 ms of the link
    snc = [
        tenant(n, lvl, 0.3, big, slo=0.02, bound=Bound(0.015, "snc-meister", 0.999))
        for n, lvl in (("A", 0), ("L", 1))
    ]
    a = check_bounds(plan("demotion", *snc), C)[0]  # the more important one: bounded
    assert math.isfinite(a.realised_s) and a.realised_s > a.slo_s
    assert a.stochastic and not a.over_slo and not a.unbounded_stochastic
    assert "worst case above the SLO; the plan's bound is stochastic (p99.9)" in a.line()
    # the same buckets under a worst-case plan bound are refused
    worst = [dataclasses.replace(t, bound=Bound(0.015, "dnc", 1.0)) for t in snc]
    assert check_bounds(plan("demotion", *worst), C)[0].over_slo
