"""Validation of the simulator against queueing theory.

Each test simulates one device queue (MPL 1, so the device is a single non-preemptive server)
under Poisson arrivals with a fixed seed, and compares with the closed-form result. Tolerances
are stated per test: they cover the statistical error of ~200,000 correlated samples (the
standard error of a mean waiting time at load 0.7 with batch means is about 1%); a wrong model
(e.g. a server serving faster or slower than one second of work per second) misses them by far
more.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tailbound.sim import single_queue

N = 200_000


def poisson(rate: float, n: int, rng: np.random.Generator) -> np.ndarray:
    return np.cumsum(rng.exponential(1.0 / rate, size=n))


def waits(arrival: np.ndarray, work: np.ndarray, **kw: object) -> np.ndarray:
    sim = single_queue([arrival], [work], **kw)  # type: ignore[arg-type]
    sim.run()
    return sim.results().workloads[0].latency - work


def test_queueing_mm1_mean_and_tail() -> None:
    """M/M/1, λ = 0.7, μ = 1: Wq = ρ/(μ − λ) = 7/3; P(W > t) = ρ·e^{−(μ−λ)t}."""
    rng = np.random.default_rng(1)
    lam = 0.7
    w = waits(poisson(lam, N, rng), rng.exponential(1.0, N))
    assert w.mean() == pytest.approx(lam / (1 - lam), rel=0.05)
    for t in (1.0, 5.0, 10.0):
        assert np.mean(w > t) == pytest.approx(lam * math.exp(-(1 - lam) * t), abs=0.01)
    # the sojourn time is exponential with rate μ − λ: its 99th percentile is ln(100)/0.3
    assert np.quantile(w + 0, 0.99) == pytest.approx(math.log(100 * lam) / (1 - lam), rel=0.06)


def md1_wait_cdf(t: float, lam: float) -> float:
    """Erlang's M/D/1 waiting-time distribution for unit service:
    P(W ≤ t) = (1 − ρ) Σ_{k=0}^{⌊t⌋} (λ(k − t))^k / k! · e^{−λ(k − t)}."""
    return (1 - lam) * sum(
        (lam * (k - t)) ** k / math.factorial(k) * math.exp(-lam * (k - t))
        for k in range(math.floor(t) + 1)
    )


def test_queueing_md1_mean_and_tail() -> None:
    """M/D/1, λ = 0.7, unit service: Wq = ρ/(2(1 − ρ)) = 7/6; the tail by Erlang's formula."""
    rng = np.random.default_rng(2)
    lam = 0.7
    w = waits(poisson(lam, N, rng), np.ones(N))
    assert w.mean() == pytest.approx(lam / (2 * (1 - lam)), rel=0.05)
    for t in (0.5, 2.0, 4.0, 8.0):
        assert np.mean(w <= t) == pytest.approx(md1_wait_cdf(t, lam), abs=0.01)


def test_queueing_cobham_two_class_priority() -> None:
    """Non-preemptive priority M/M/1 (Cobham 1954): W_k = W0 / ((1 − σ_{k−1})(1 − σ_k)) with
    W0 = Σ λ_i E[S²]/2 = 0.7 for λ = (0.3, 0.4), μ = 1: W_high = 1.0, W_low = 0.7/(0.7·0.3)."""
    rng = np.random.default_rng(3)
    arrivals = [poisson(0.3, N // 2, rng), poisson(0.4, N // 2 * 4 // 3, rng)]
    work = [rng.exponential(1.0, a.size) for a in arrivals]
    sim = single_queue(arrivals, work, scheduler={"kind": "priority", "priority": [1, 0]})
    sim.run()
    res = sim.results().workloads
    high, low = (r.latency - w for r, w in zip(res, work, strict=True))
    assert high.mean() == pytest.approx(1.0, rel=0.05)
    assert low.mean() == pytest.approx(0.7 / (0.7 * 0.3), rel=0.07)


def test_queueing_processor_sharing_mean_sojourn() -> None:
    """With MPL large the device is M/M/1-PS: the mean sojourn is 1/(μ − λ), as for FIFO, but a
    request's expected sojourn grows linearly with its work, E[T | S = s] = s/(1 − ρ)."""
    rng = np.random.default_rng(4)
    lam = 0.6
    arrival = poisson(lam, N, rng)
    work = rng.exponential(1.0, N)
    sim = single_queue([arrival], [work], mpl=1_000_000)
    sim.run()
    t = sim.results().workloads[0].latency
    assert t.mean() == pytest.approx(1 / (1 - lam), rel=0.05)
    small = work < 0.2
    assert np.mean(t[small] / work[small]) == pytest.approx(1 / (1 - lam), rel=0.05)
