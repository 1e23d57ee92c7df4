from __future__ import annotations

import numpy as np
import pytest

from tailbound.model import Slo
from tailbound.traces.fleet import (
    DEMO_C2_RANGE,
    DEMO_RATE_RANGE,
    DEMO_SLO_LATENCIES_S,
    GeneratedTenant,
    demo_fleet,
)
from tailbound.traces.synthetic import Mmpp, OnOff, Poisson, empirical_c2


@pytest.fixture(scope="module")
def fleet() -> list[GeneratedTenant]:
    return demo_fleet(24, seed=0, duration_s=300.0)


def test_demo_fleet_shape(fleet: list[GeneratedTenant]) -> None:
    assert len(fleet) == 24
    assert len({w.name for w in fleet}) == 24
    assert all(w.trace.name == w.name and w.trace.duration == 300.0 for w in fleet)
    assert all(w.slo.latency_s in DEMO_SLO_LATENCIES_S for w in fleet)
    assert all(w.slo.percentile == 0.999 for w in fleet)


def test_demo_fleet_is_deterministic(fleet: list[GeneratedTenant]) -> None:
    again = demo_fleet(24, seed=0, duration_s=300.0)
    for a, b in zip(fleet, again, strict=True):
        assert a.name == b.name and a.slo == b.slo
        assert np.array_equal(a.trace.time, b.trace.time)
        assert np.array_equal(a.trace.size, b.trace.size)
    other = demo_fleet(24, seed=1, duration_s=300.0)
    assert [w.name for w in other] != [w.name for w in fleet] or any(
        len(a.trace) != len(b.trace) for a, b in zip(fleet, other, strict=True)
    )


def test_demo_fleet_prefix_is_stable() -> None:
    # workload i depends only on (seed, i): a smaller fleet is a prefix of a larger one
    small, large = demo_fleet(4, seed=3, duration_s=5.0), demo_fleet(8, seed=3, duration_s=5.0)
    assert [w.name for w in small] == [w.name for w in large[:4]]


def test_demo_fleet_spread(fleet: list[GeneratedTenant]) -> None:
    kinds = {type(w.arrivals) for w in fleet}
    assert kinds == {Poisson, OnOff, Mmpp}
    for w in fleet:
        assert w.arrivals is not None
        assert DEMO_RATE_RANGE[0] <= w.arrivals.mean_rate <= DEMO_RATE_RANGE[1]
        if isinstance(w.arrivals, OnOff):
            assert DEMO_C2_RANGE[0] <= w.arrivals.c2 <= DEMO_C2_RANGE[1]
        if isinstance(w.arrivals, Mmpp):
            assert w.arrivals.phases in (2, 3)
        sizes = w.trace.size
        assert sizes.min() >= 4096 and sizes.max() <= 262144
        assert w.trace.offset is not None
    read_fractions = {round(w.trace.summary().read_fraction, 1) for w in fleet}
    assert len(read_fractions) >= 4
    assert len({w.slo.latency_s for w in fleet}) >= 3
    assert max(w.arrivals.mean_rate for w in fleet if w.arrivals) > 10 * min(
        w.arrivals.mean_rate for w in fleet if w.arrivals
    )


def test_demo_fleet_rates_match_processes(fleet: list[GeneratedTenant]) -> None:
    for w in fleet:
        assert w.arrivals is not None
        expected = w.arrivals.mean_rate * 300.0
        # generous: bursty processes (C² up to 40, slow MMPP phases) vary a lot over 300 s
        assert len(w.trace) == pytest.approx(expected, rel=0.5), w.name


def test_demo_fleet_onoff_is_bursty(fleet: list[GeneratedTenant]) -> None:
    bursty = [w for w in fleet if isinstance(w.arrivals, OnOff) and w.arrivals.c2 > 5]
    assert bursty
    for w in bursty:
        assert empirical_c2(w.trace.time) > 2.0, w.name


def test_demo_fleet_empty_and_negative() -> None:
    assert demo_fleet(0) == []
    with pytest.raises(ValueError, match="n must be"):
        demo_fleet(-1)


@pytest.mark.parametrize(("latency", "percentile"), [(0.0, 0.99), (0.1, 0.0), (0.1, 1.5)])
def test_slo_rejects_bad_values(latency: float, percentile: float) -> None:
    with pytest.raises(ValueError, match="SLO"):
        Slo(latency, percentile)
