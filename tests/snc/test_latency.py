"""The latency operator (thesis Theorem 1): hand values, the theta search, stability, Hölder,
and the bound of an MMPP source at a constant-rate server against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tailbound.snc.bounds import STEP_S, ConstantService, FixedBound, Leftover
from tailbound.snc.latency import LatencyBound, latency_bound
from tailbound.snc.mmpp import MmppArrival, MmppModel


def test_latency_formula_by_hand() -> None:
    # A: rho = 0.5 + theta/10, sigma = 0.2; S: 1 work/step. L(theta) in steps:
    # [log(eps (1 - exp(theta (rho_A + rho_S)))) / theta - sigma] / rho_S
    a = FixedBound(lambda t: 0.5 + t / 10, lambda t: 0.2 + 0 * t, deps={1})
    s = ConstantService(1 / STEP_S)
    bound = LatencyBound(a, s, 1e-3)
    for theta in (0.5, 1.0, 3.0):
        rho_a = 0.5 + theta / 10
        expect = (math.log(1e-3 * (1 - math.exp(theta * (rho_a - 1)))) / theta - 0.2) / -1
        assert bound.latency_steps(np.array([theta]))[0] == pytest.approx(expect)
        assert bound.latency_s(np.array([theta]))[0] == pytest.approx(expect * STEP_S)


def test_theta_search_finds_the_minimum_of_a_dense_grid() -> None:
    a = FixedBound(lambda t: 0.5 + t / 10, deps={1})
    bound = LatencyBound(a, ConstantService(1 / STEP_S), 1e-4)
    dense = np.linspace(1e-3, 4.99, 200_000)
    best_dense = np.min(bound.latency_s(dense))
    found = bound.latency()
    assert found == pytest.approx(best_dense, rel=1e-6)


def test_unstable_queue_gives_infinite_bound() -> None:
    a = FixedBound(lambda t: 2.0 + 0 * t, deps={1})
    assert latency_bound(a, ConstantService(1 / STEP_S), 1e-3) == math.inf
    # leftover service that is all used up: infinite, no exception
    other = FixedBound(lambda t: 1.5 + 0 * t, deps={2})
    s = Leftover(ConstantService(1 / STEP_S), other)
    assert latency_bound(FixedBound(lambda t: 0.1 + 0 * t, deps={1}), s, 1e-3) == math.inf


def test_latency_decreases_with_eps() -> None:
    a = FixedBound(lambda t: 0.5 + t / 10, deps={1})
    values = [latency_bound(a, ConstantService(1 / STEP_S), eps) for eps in (1e-1, 1e-3, 1e-6)]
    assert values[0] < values[1] < values[2]


def test_holder_dependent_bound_is_no_tighter_than_independent() -> None:
    def source(deps: set[int]) -> FixedBound:
        return FixedBound(lambda t: 0.3 + t / 5, deps=deps)

    independent = latency_bound(
        source({1}), Leftover(ConstantService(1 / STEP_S), source({2})), 1e-3
    )
    dependent = latency_bound(source({1}), Leftover(ConstantService(1 / STEP_S), source({1})), 1e-3)
    assert dependent > independent


# --------------------------------------------------------------------------- brute force
def two_state_source() -> MmppModel:
    """A bursty per-step MMBP: long quiet phases (p = 0.1), short bursts (p = 0.6); Exp(1) work."""
    return MmppModel(
        transition=np.array([[0.99, 0.01], [0.05, 0.95]]),
        p_request=np.array([0.1, 0.6]),
        mu=np.array([1.0, 1.0]),
        lambdas=np.array([0.1, 0.6]) / STEP_S,
    )


def simulate_delays(
    model: MmppModel, c: float, steps: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Virtual delay (steps) at every step and at every arrival of the discrete-time FIFO queue
    served at ``c`` work per step: Lindley's recursion, vectorised with prefix minima."""
    rng = np.random.default_rng(seed)
    leave = 1 - np.diag(model.transition)
    states, total, state = [], 0, 0
    while total < steps:  # geometric sojourns alternate between the two states
        length = int(rng.geometric(leave[state]))
        states.append(np.full(length, state))
        total += length
        state = 1 - state
    s = np.concatenate(states)[:steps]
    arrive = rng.random(steps) < model.p_request[s]
    work = np.where(arrive, rng.exponential(1.0 / model.mu[s]), 0.0)
    walk = np.cumsum(work - c)
    after = walk - np.minimum(np.minimum.accumulate(walk), 0.0)  # backlog after service
    before = np.concatenate([[0.0], after[:-1]]) + work  # backlog including this step's arrival
    delay = np.ceil(before / c)
    return delay, delay[arrive]


@pytest.mark.parametrize(("c", "eps"), [(0.3, 1e-2), (0.3, 1e-3), (0.45, 1e-3)])
def test_mmpp_bound_covers_simulated_tail(c: float, eps: float) -> None:
    model = two_state_source()
    bound_steps = latency_bound(MmppArrival(model, {1}), ConstantService(c / STEP_S), eps) / STEP_S
    at_steps, at_arrivals = simulate_delays(model, c, 2_000_000, seed=11)
    tail_time = np.quantile(at_steps, 1 - eps)
    tail_requests = np.quantile(at_arrivals, 1 - eps)
    assert bound_steps >= tail_time
    assert bound_steps >= tail_requests
    # and not absurdly loose: within a small factor of the simulated request tail
    assert bound_steps <= 4 * tail_requests


def test_mmpp_rho_tends_to_mean_rate() -> None:
    model = two_state_source()
    mean = model.mean_rate()
    rho = model.rho(np.array([1e-7]))[0]
    assert rho == pytest.approx(mean, rel=1e-4)
    assert mean == pytest.approx((0.05 * 0.1 + 0.01 * 0.6) / 0.06)
