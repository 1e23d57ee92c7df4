"""Split levels (tailbound.policies.floors.AloneFloor, ``split_levels``): within an SLO class, the
analysis' misfits are enforced one level below the tenants it describes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tailbound.experiments.snc_fig410 import caches, population
from tailbound.model import DEFAULT_LINK_BYTES_PER_S as LINK_BYTES_PER_S
from tailbound.model import Slo, Tenant, TenantSet
from tailbound.policies.admission import Configured, SncPolicy, admit_in_order
from tailbound.policies.floors import AloneFloor, alone_latency, replay_results
from tailbound.snc.analysis import TenantBound
from tailbound.snc.incremental import IncrementalSnc


class _PerTenant:
    """A bound function giving each tenant a fixed latency by name."""

    def __init__(self, latency_s: dict[str, float]) -> None:
        self.latency_s = latency_s

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        return [
            TenantBound.of_directions(t, 0, {"in": self.latency_s[t.name] / 2, "out": 0.0})
            for t in tenants
        ]


def _specs(data_dir: Path, slos: Sequence[float]) -> tuple[list[Tenant], dict[str, object]]:
    pop = population(data_dir, len(slos), seed=410)
    specs = [
        Tenant(t.name, Slo(s), t.trace, t.client_host, server=t.server)
        for t, s in zip(pop.tenants, slos, strict=True)
    ]
    return specs, {str(t.trace): pop.first[str(t.trace)].slice_time(0.0, 30.0) for t in specs}


def test_misfits_go_one_level_below_their_class_and_decisions_do_not_change(
    data_dir: Path,
) -> None:
    specs, first = _specs(data_dir, (0.05, 0.05, 0.1, 0.1))
    trace_of = lambda t: first[str(t.trace)]  # noqa: E731
    measured = {t.name: alone_latency(t, trace_of(t), LINK_BYTES_PER_S) for t in specs}
    # the "model" under-predicts w000 and w003 alone, over-predicts the others
    model = {t.name: measured[t.name] * (0.5 if t.name in ("w000", "w003") else 2.0) for t in specs}
    flat = AloneFloor(SncPolicy(_PerTenant(model)), trace_of, LINK_BYTES_PER_S)
    split = AloneFloor(SncPolicy(_PerTenant(model)), trace_of, LINK_BYTES_PER_S, split_levels=True)
    assert [c.level for c in flat.configure(specs)] == [0, 0, 1, 1]
    assert [split.misfit(t) for t in specs] == [True, False, False, True]
    assert [c.level for c in split.configure(specs)] == [1, 0, 2, 3]
    # what is admitted does not depend on what is enforced
    assert [(d.admitted, d.bound) for d in admit_in_order(specs, flat)] == [
        (d.admitted, d.bound) for d in admit_in_order(specs, split)
    ]
    # five SLO classes in the enforcers' 7 tenant levels: the two most important are split
    # (every tenant here a misfit: the model predicts 0), the others keep one level each
    five, first5 = _specs(data_dir, (0.01, 0.02, 0.05, 0.1, 0.2))
    many = AloneFloor(
        SncPolicy(_PerTenant(dict.fromkeys((t.name for t in five), 0.0))),
        lambda t: first5[str(t.trace)],
        LINK_BYTES_PER_S,
        split_levels=True,
    )
    assert [c.level for c in many.configure(five)] == [1, 3, 4, 5, 6]
    # seven classes fill the 7 levels: none is split
    seven, first7 = _specs(data_dir, (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3))
    full = AloneFloor(
        SncPolicy(_PerTenant(dict.fromkeys((t.name for t in seven), 0.0))),
        lambda t: first7[str(t.trace)],
        LINK_BYTES_PER_S,
        split_levels=True,
    )
    assert [c.level for c in full.configure(seven)] == list(range(7))


def test_split_levels_keep_a_burst_the_first_half_lacked_off_its_classmate(
    data_dir: Path,
) -> None:
    """Fig. 4.10, order 3 (docs/results-snc.md): w078 (wc62 trace 16, 0.6 ms alone) and w138
    (trace 14, whose second half holds a 69 ms write burst) share client06's links in the 60 ms
    class. In one FIFO level w078 queues behind the burst and misses its SLO; w138 is a misfit
    (its measured latency alone on the first half is far above SNC-Meister's bound alone), so
    split levels put it below w078, which then keeps its latency alone."""
    pop = population(data_dir, 139, seed=410)
    by_name = {t.name: t for t in pop.tenants}
    specs = [
        Tenant(n, Slo(0.06), by_name[n].trace, "client06", server=by_name[n].server)
        for n in ("w078", "w138")
    ]
    fits, _ = caches(pop)
    tset = TenantSet(tuple(specs))
    floor = AloneFloor(
        SncPolicy(IncrementalSnc(tset, fits)), fits.trace, LINK_BYTES_PER_S, split_levels=True
    )
    assert [floor.misfit(t) for t in specs] == [False, True]
    assert [c.level for c in floor.configure(specs)] == [0, 1]
    second = [pop.second[str(t.trace)] for t in specs]
    flat = replay_results(specs, second, [Configured(0), Configured(0)])
    split = replay_results(specs, second, floor.configure(specs))
    assert flat["w078"].judged(0.999).whole_s > 0.06  # the violation through sharing
    assert split["w078"].judged(0.999).window_s < 0.005
    assert split["w138"].judged(0.999).whole_s > 0.06  # it misses alone anyway


class _Crowded:
    """A bound function whose latency grows with the number of tenants: ``base × len``."""

    def __init__(self, base_s: dict[str, float]) -> None:
        self.base_s = base_s

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        return [
            TenantBound.of_directions(t, 0, {"in": self.base_s[t.name] * len(tenants), "out": 0})
            for t in tenants
        ]


def test_model_error_adds_what_the_analysis_misses_alone_to_a_misfits_bound(
    data_dir: Path,
) -> None:
    """``add_model_error``: prediction ``max(bound, alone, bound + alone − model alone)``. A
    misfit (model alone = half its measured latency alone) among one other tenant, whose bound
    doubles: ``2b + (alone − b)`` with ``b = alone / 2``, i.e. 1.5 × alone, where the plain floor
    says ``alone``; a tenant the model over-predicts keeps its bound."""
    specs, first = _specs(data_dir, (0.05, 0.05))
    trace_of = lambda t: first[str(t.trace)]  # noqa: E731
    measured = {t.name: alone_latency(t, trace_of(t), LINK_BYTES_PER_S) for t in specs}
    base = {"w000": measured["w000"] / 2, "w001": measured["w001"] * 2}
    plain = AloneFloor(SncPolicy(_Crowded(base)), trace_of, LINK_BYTES_PER_S)
    corrected = AloneFloor(
        SncPolicy(_Crowded(base)), trace_of, LINK_BYTES_PER_S, add_model_error=True
    )
    p0, p1 = plain(specs)
    c0, c1 = corrected(specs)
    assert p0.latency_s == pytest.approx(measured["w000"])
    assert c0.latency_s == pytest.approx(1.5 * measured["w000"])
    assert c0.latency_alone_s == p0.latency_alone_s == measured["w000"]
    assert c1.latency_s == p1.latency_s == pytest.approx(4 * measured["w001"])
    assert corrected.model_alone(specs[0]) == pytest.approx(base["w000"])
