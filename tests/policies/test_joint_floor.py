"""The latency replayed together as a floor under predictions (tailbound.policies.floors)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tailbound.experiments.snc_fig410 import population
from tailbound.model import DEFAULT_LINK_BYTES_PER_S as LINK_BYTES_PER_S
from tailbound.model import Slo, Tenant
from tailbound.policies.admission import Configured, SncPolicy, admit_in_order
from tailbound.policies.floors import JointFloor, alone_latency, replay
from tailbound.sim.results import percentile
from tailbound.snc.analysis import TenantBound
from tailbound.snc.tenants import priorities_by_slo
from tailbound.traces.trace import Trace


class _Fixed(SncPolicy):
    """An admission policy predicting ``latency_s`` for every tenant, priorities by SLO, with
    a newcomer screen; counts its calls."""

    def __init__(self, latency_s: float) -> None:
        super().__init__(self.bound)
        self.latency_s = latency_s
        self.calls = 0

    def bound(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        return self(tenants)

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        self.calls += 1
        per = {"in": self.latency_s / 2, "out": self.latency_s / 2}
        levels = priorities_by_slo([t.slo_s for t in tenants])
        return [TenantBound.of_directions(t, p, per) for t, p in zip(tenants, levels, strict=True)]

    def newcomer_bound(self, tenants: Sequence[Tenant]) -> TenantBound:
        return self(tenants)[-1]


def _pair(data_dir: Path) -> tuple[list[Tenant], dict[str, Trace]]:
    """Two tenants of the Fig. 4.10 population on the same client and server (60 s of their
    first halves), which delay each other."""
    pop = population(data_dir, 45, seed=410)
    a, b = pop.tenants[33], pop.tenants[44]  # wc62 traces 33 and 44
    specs = [Tenant(t.name, Slo(1.0, 0.999), t.trace, "client", server="server") for t in (a, b)]
    traces = {t.name: pop.first[str(t.trace)].slice_time(0.0, 60.0) for t in specs}
    return specs, traces


def test_floor_is_the_replayed_latency_at_the_analysis_priorities(data_dir: Path) -> None:
    specs, traces = _pair(data_dir)
    specs[1] = Tenant(specs[1].name, Slo(0.5), specs[1].trace, "client", server="server")
    floor = JointFloor(_Fixed(1e-6), lambda t: traces[t.name], LINK_BYTES_PER_S)
    bounds = floor(specs)
    assert floor.replays == 1
    # the tighter SLO gets level 0, and the replay runs at those levels
    assert [b.priority for b in bounds] == [1, 0]
    direct = replay(specs, [traces[t.name] for t in specs], [Configured(1), Configured(0)])
    for t, b in zip(specs, bounds, strict=True):
        assert b.latency_joint_s == percentile(direct[t.name], t.percentile)
        assert b.latency_s == b.latency_joint_s > 1e-6
    # a prediction above the replayed latency stays
    high = JointFloor(_Fixed(0.9), lambda t: traces[t.name], LINK_BYTES_PER_S)(specs)
    assert [b.latency_s for b in high] == [0.9, 0.9]


def test_no_replay_when_the_wrapped_bounds_already_reject(data_dir: Path) -> None:
    specs, traces = _pair(data_dir)
    floor = JointFloor(_Fixed(2.0), lambda t: traces[t.name], LINK_BYTES_PER_S)
    bounds = floor(specs)
    assert floor.replays == 0 and all(b.latency_joint_s is None for b in bounds)
    assert floor.newcomer_bound(specs).latency_s == 2.0  # the screen is the wrapped one


def test_admission_rejects_a_newcomer_whose_bursts_make_a_neighbour_miss(data_dir: Path) -> None:
    """Each tenant meets the SLO alone; together, the first misses it. An analysis predicting
    too little admits both; the joint floor rejects the second and names the first."""
    specs, traces = _pair(data_dir)
    alone = [alone_latency(t, traces[t.name], LINK_BYTES_PER_S) for t in specs]
    together = replay(specs, [traces[t.name] for t in specs], [Configured(0), Configured(0)])
    first_together = percentile(together[specs[0].name], 0.999)
    assert first_together > 1.3 * max(alone)  # the setting is meaningful (1.46x)
    slo = (max(alone) + first_together) / 2
    specs = [Tenant(t.name, Slo(slo), t.trace, "client", server="server") for t in specs]
    model = admit_in_order(specs, _Fixed(1e-6))
    assert [d.admitted for d in model] == [True, True]
    floor = JointFloor(_Fixed(1e-6), lambda t: traces[t.name], LINK_BYTES_PER_S)
    decisions = admit_in_order(specs, floor)
    assert [d.admitted for d in decisions] == [True, False]
    assert specs[0].name in decisions[1].violated
    assert decisions[0].bound.latency_joint_s == alone[0]  # alone, the replay is the floor's
    assert floor.replays == 2
