"""MMPP fitting (thesis §4.2.4, the reference implementation's procedure) and its MGF bound."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from tailbound.snc.bounds import STEP_S
from tailbound.snc.mmpp import (
    EMPTY_STATE_MU,
    MmppModel,
    assign_states,
    fit_mmpp,
    interval_counts,
    place_states,
    transition_matrix,
)
from tailbound.snc.tenants import read_requests, work

SECOND = 1_000_000_000


def arrivals_with_counts(counts: list[int]) -> np.ndarray:
    """Arrival times (ns) with ``counts[k]`` arrivals spread inside second ``k``."""
    parts = [k * SECOND + np.arange(c) * (SECOND // max(c, 1)) for k, c in enumerate(counts)]
    return np.concatenate(parts).astype(np.int64)


def test_interval_counts_from_time_zero() -> None:
    ns = np.array([5, SECOND - 1, SECOND, 3 * SECOND + 7], dtype=np.int64)
    assert interval_counts(ns).tolist() == [2, 1, 0, 1]


def test_states_by_hand() -> None:
    # counts 2, 24, 1: top state lambda + 2 sqrt(lambda) = 24 -> 16; next sqrt = 4 - 2 -> 4;
    # next would be 0 < 1 (smallest count): two states.
    counts = np.array([2, 24, 1])
    lambdas, a = place_states(counts)
    assert lambdas == [4.0, 16.0]
    assert a == 2.0
    # lower edges: 4 - 4 = 0 and 16 - 8 = 8: 2 and 1 -> state 0, 24 -> state 1
    assert assign_states(counts, lambdas, a).tolist() == [0, 1, 0]


def test_transition_matrix_by_hand() -> None:
    states = np.array([0, 1, 0])
    m = transition_matrix(states, 2)
    steps0, steps1 = math.floor(2.0 / STEP_S), math.floor(1.0 / STEP_S)
    # floor(1 s / 1e-5 s) is 99999 in floating point, as in the reference implementation
    assert steps1 == 99999
    expect = [[1 - 1 / steps0, 1 / steps0], [1 / steps1, 1 - 1 / steps1]]
    np.testing.assert_allclose(m, expect, rtol=1e-12)


def test_fit_by_hand() -> None:
    ns = arrivals_with_counts([2, 24, 1])
    w = np.concatenate([[0.2, 0.1], np.full(24, 0.3), [0.3]])
    m = fit_mmpp(ns, w)
    assert m.states == 2
    assert m.p_request.tolist() == pytest.approx([4.0 * STEP_S, 16.0 * STEP_S])
    # state 0 holds the requests of seconds 0 and 2: 3 requests, 0.6 work; state 1: 24 of 0.3
    assert m.mu.tolist() == pytest.approx([3 / 0.6, 1 / 0.3])
    # MGF_s(theta) = 1 - p + p mu / (mu - theta), infinite at theta >= mu
    theta = np.array([0.1, 4.0])
    mgf = m.state_mgf(theta)
    p0, mu0 = 4 * STEP_S, 5.0
    assert mgf[0, 0] == pytest.approx(1 - p0 + p0 * mu0 / (mu0 - 0.1))
    assert mgf[1, 1] == np.inf


def test_many_levels_use_ten_states_and_search_a() -> None:
    counts = np.array([0, 5, 50, 200, 500, 1000, 3000, 6000, 10000] * 3)
    lambdas, a = place_states(counts)
    assert len(lambdas) == 10
    assert lambdas == sorted(lambdas)
    top = lambdas[-1] + a * math.sqrt(lambdas[-1])
    assert top == pytest.approx(10000)
    # consecutive states touch: upper edge of s equals lower edge of s + 1
    for lo, hi in itertools.pairwise(lambdas):
        assert lo + a * math.sqrt(lo) == pytest.approx(hi - a * math.sqrt(hi), rel=1e-9, abs=1e-9)
    # the bottom edge reaches the smallest count to the search's precision (0.01 in a)
    bottom = lambdas[0] - a * math.sqrt(lambdas[0])
    assert abs(bottom - 0.0) < 0.5


def test_two_level_synthetic_counts_recover_two_rates() -> None:
    rng = np.random.default_rng(3)
    level = np.repeat(rng.integers(0, 2, 60), 5)  # 300 s of 5-second phases
    counts = rng.poisson(np.where(level == 1, 400, 40))
    ns = arrivals_with_counts(counts.tolist())
    m = fit_mmpp(ns, np.full(ns.shape, 1000.0))
    states = m.state_of_interval
    assert states is not None
    # the intervals of the two phases fall into disjoint sets of states
    assert set(states[level == 0]).isdisjoint(states[level == 1])
    rates = m.lambdas[states]
    assert np.all(np.abs(rates[level == 1] - 400) < 4 * math.sqrt(400) + 40)
    assert np.all(np.abs(rates[level == 0] - 40) < 4 * math.sqrt(40) + 10)


def test_constant_counts_give_one_state() -> None:
    ns = arrivals_with_counts([100] * 4)
    m = fit_mmpp(ns, np.full(ns.shape, 1000.0))
    assert m.states == 1
    assert m.transition.tolist() == [[1.0]]


def test_state_without_requests_uses_default_mu() -> None:
    ns = arrivals_with_counts([0, 0, 0, 9, 0, 30, 0, 60, 120, 500, 900, 0])
    m = fit_mmpp(ns, np.full(ns.shape, 10.0))
    assert EMPTY_STATE_MU in m.mu.tolist()


@pytest.mark.parametrize("n", [2, 3, 10])
def test_spectral_radius_matches_eigenvalues(n: int) -> None:
    rng = np.random.default_rng(n)
    raw = rng.random((n, n)) * 1e-3
    np.fill_diagonal(raw, 0)
    transition = raw + np.diag(1 - raw.sum(axis=1))
    model = MmppModel(transition, rng.random(n) * 0.1, rng.random(n) + 0.5, np.ones(n))
    theta = np.array([0.01, 0.1, 0.3])
    mgf = model.state_mgf(theta)
    expect = [np.abs(np.linalg.eigvals(np.diag(mgf[i]) @ transition)).max() for i in range(3)]
    assert model.spectral_radius(theta).tolist() == pytest.approx(expect, rel=1e-12)
    assert model.spectral_radius(np.array([10.0]))[0] == np.inf


def test_wc62_trace_fit(data_dir: Path) -> None:
    req = read_requests(data_dir / "wc62" / "traces" / "trace0003.txt")
    from tailbound.snc.tenants import TenantSet

    for direction in ("in", "out"):
        m = fit_mmpp(req.arrival_ns, work(req, direction, TenantSet(())))
        assert 1 <= m.states <= 10
        assert np.allclose(m.transition.sum(axis=1), 1.0)
        assert np.all(m.transition >= 0)
        assert np.all(np.diff(m.lambdas) > 0)
        counts = interval_counts(req.arrival_ns)
        top = m.lambdas[-1] + m.a * math.sqrt(m.lambdas[-1])
        assert top == pytest.approx(counts.max())
        # the effective rate rises from the mean towards the peak as theta grows
        theta = np.array([1e-9, 1e-6, 1e-5])
        rho = m.rho(theta)
        assert np.all(np.diff(rho) > 0)
        mean_work_per_step = work(req, direction, TenantSet(())).sum() / (counts.size / STEP_S)
        assert rho[0] == pytest.approx(m.mean_rate(), rel=5e-3)
        assert 0.3 * mean_work_per_step < m.mean_rate() < 3 * mean_work_per_step


def test_fit_on_half_second_intervals_by_hand() -> None:
    # The counts 2, 24, 1 of test_fit_by_hand, now per half second: the same states (rates per
    # interval 4 and 16), but p_s = lambda_s STEP_S / 0.5 s and the steps spent in a state halve.
    half = SECOND // 2
    ns = np.concatenate(
        [k * half + np.arange(c) * (half // c) for k, c in enumerate([2, 24, 1])]
    ).astype(np.int64)
    w = np.concatenate([[0.2, 0.1], np.full(24, 0.3), [0.3]])
    assert interval_counts(ns, half).tolist() == [2, 24, 1]
    m = fit_mmpp(ns, w, half)
    assert m.lambdas.tolist() == [4.0, 16.0]
    assert m.p_request.tolist() == pytest.approx([8.0 * STEP_S, 32.0 * STEP_S])
    assert m.mu.tolist() == pytest.approx([3 / 0.6, 1 / 0.3])
    # state 0: two half-second intervals = 1 s = floor(1 / 1e-5) = 99999 steps, one 0 -> 1
    # transition; state 1: 0.5 s = floor(0.5 / 1e-5) = 49999 steps (floating point, as the
    # reference's 1 s), one 1 -> 0 transition
    assert math.floor(0.5 / STEP_S) == 49999
    expect = [[1 - 1 / 99999, 1 / 99999], [1 / 49999, 1 - 1 / 49999]]
    np.testing.assert_allclose(m.transition, expect, rtol=1e-12)
    # the same arrivals on 1-second intervals: counts 26, 1 (the reference fit is untouched)
    assert interval_counts(ns).tolist() == [26, 1]


def test_model_pickles_and_copies_exactly() -> None:
    import copy
    import pickle

    ns = arrivals_with_counts([0, 0, 0, 9, 0, 30, 0, 60, 120, 500, 900, 0])
    fitted = fit_mmpp(ns, np.full(ns.shape, 10.0))
    given = MmppModel([[0.5, 0.5], [0.25, 0.75]], [0.1, 0.2], [1.0, 2.0], [1.0, 5.0], a=3.0)
    for m in (fitted, given):
        for back in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
            assert back.a == m.a
            for name in ("transition", "p_request", "mu", "lambdas"):
                assert np.array_equal(getattr(back, name), getattr(m, name))
            assert (back.state_of_interval is None) == (m.state_of_interval is None)
    assert given.state_of_interval is None
    assert np.array_equal(
        pickle.loads(pickle.dumps(fitted)).state_of_interval, fitted.state_of_interval
    )
