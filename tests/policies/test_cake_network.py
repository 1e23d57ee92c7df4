"""Cake's network extension (thesis §3.3.1): weights as rate limits at shared links."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, Plan, StageLimit, TenantPlan
from tailbound.policies.registry import build
from tailbound.policies.scheduling import Cake, network_shares
from tailbound.stages import STORAGE_PATH, Stage


def _placed(*tenants: tuple[str, Slo | None, str]) -> Plan:
    """Tenants ``(name, slo, server)`` on device d0 of their server, each from a client of its
    own."""
    return Plan(
        "placed",
        1,
        [
            TenantPlan(n, slo, server, "d0", dict.fromkeys(STORAGE_PATH, None), {}, Bound(1, "x"))
            for n, slo, server in tenants
        ],
    )


def test_cake_net_shapes_shared_links_by_weight_and_leaves_the_device_to_sfq() -> None:
    placed = _placed(("A", Slo(0.05), "s0"), ("L", None, "s0"))
    plan = build("cake-net", "scheduling").plan(placed)
    assert plan.policy == "cake-net"
    assert plan.disciplines[Stage.STORAGE] == Discipline("sfq")
    for stage in (Stage.NET_IN, Stage.NET_OUT):  # server ingress and egress are shared
        assert plan.disciplines[stage] == Discipline("priority", "shaping")
        for t in plan.tenants:
            assert t.limits[stage] == StageLimit(0.5, Cake().burst_s)
    # without the extension: FIFO links, no limits
    plain = Cake().plan(placed)
    assert plain.disciplines[Stage.NET_OUT] == Discipline("fifo")
    assert all(not t.limits for t in plain.tenants)


def test_a_tenant_alone_on_its_links_is_not_limited() -> None:
    shares = network_shares(_placed(("A", Slo(0.05), "s0"), ("B", Slo(0.05), "s1")), {})
    assert shares == {}


def test_shares_are_the_least_along_the_stage() -> None:
    """A and B share s0's egress; B and C (on s1) share client c's ingress, where C weighs 3:
    B's limit is its quarter of c's ingress, not its half of s0's egress."""
    placed = _placed(("A", Slo(0.05), "s0"), ("B", None, "s0"), ("C", Slo(0.05), "s1"))
    tenants = [
        t if t.name == "A" else dataclasses.replace(t, client_host="c") for t in placed.tenants
    ]
    shares = network_shares(dataclasses.replace(placed, tenants=tenants), {"C": 3.0})
    assert shares[Stage.NET_OUT, "A"] == pytest.approx(0.5)
    assert shares[Stage.NET_OUT, "B"] == pytest.approx(0.25)
    assert shares[Stage.NET_OUT, "C"] == pytest.approx(0.75)


class _Recorder:
    """The controller's view of a simulator: every latency tenant's requests all late."""

    def __init__(self, late_s: float) -> None:
        self.late_s = late_s
        self.calls: list[tuple[str, str, str, Any]] = []
        self.now = 0.0

    def run(self, until: float) -> None:
        self.now = until

    def results(self) -> dict[str, Any]:
        n = int(10 * self.now)
        return {
            name: SimpleNamespace(finished=np.ones(n, bool), latency=np.full(n, self.late_s))
            for name in ("A", "L")
        }

    def set_param(self, queue: str, workload: str, name: str, value: Any) -> None:
        self.calls.append((queue, workload, name, value))


def test_a_weight_change_resets_every_shared_links_buckets() -> None:
    """A misses its SLO fourfold: its weight doubles (×min(2, 4)), and at once its and L's
    buckets at the shared server egress become 2/3 and 1/3 of the link."""
    cake = Cake(network=True)
    plan = cake.plan(_placed(("A", Slo(0.05, 0.99), "s0"), ("L", None, "s0")))
    sim = _Recorder(0.2)
    cake.run(sim, plan, 1.0)  # type: ignore[arg-type]
    assert ("s0.d0", "A", "weight", 2.0) in sim.calls
    buckets = {(q, w): v for q, w, name, v in sim.calls if name == "buckets"}
    assert buckets[("s0.egress", "A")] == [(pytest.approx(2 / 3), cake.burst_s)]
    assert buckets[("s0.egress", "L")] == [(pytest.approx(1 / 3), cake.burst_s)]
    # nothing changes when the weights do not
    quiet = _Recorder(0.01)
    Cake(network=True).run(quiet, plan, 1.0)  # type: ignore[arg-type]
    assert quiet.calls == []


def test_cake_net_refuses_a_bucket_that_is_not_positive() -> None:
    with pytest.raises(ValueError, match="burst_s"):
        Cake(network=True, burst_s=0.0).plan(_placed(("A", Slo(0.05), "s0")))
