"""PriorityMeister's LP latency analysis (thesis §3.2.3): Eq. 5.1 on one queue, the general
min-plus route with several buckets, tighter than per-hop sums on two hops, the sampled service
curve, and never below simulated latencies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.dnc import bounds
from tailbound.dnc.curves import TokenBucket, constant_rate, token_bucket_min
from tailbound.dnc.lp import LpFlow, PathFlow, lp_delay, path_delay, service_inverse
from tailbound.dnc.operators import aggregate, horizontal_deviation, leftover
from tailbound.sim import shape, single_queue


def one_queue(name: str, level: int, buckets, max_request: float = 0.0) -> LpFlow:
    return LpFlow(name, ("q",), {"q": level}, tuple(buckets), max_request)


@settings(max_examples=40, deadline=None)
@given(
    levels=st.lists(st.integers(0, 3), min_size=1, max_size=5),
    seed=st.integers(0, 2**32 - 1),
    load=st.floats(0.05, 0.95),
)
def test_lp_delay_single_queue_equals_eq51(levels: list[int], seed: int, load: float) -> None:
    rng = np.random.default_rng(seed)
    n = len(levels)
    rates = rng.dirichlet(np.ones(n)) * load
    sizes = rng.uniform(0.001, 0.05, n)
    flows = [one_queue(f"f{i}", levels[i], [(rates[i], sizes[i])]) for i in range(n)]
    for i, f in enumerate(flows):
        others = flows[:i] + flows[i + 1 :]
        at_or_above = sum(b for b, p in zip(sizes, levels, strict=True) if p <= levels[i])
        above = sum(r for r, p in zip(rates, levels, strict=True) if p < levels[i])
        expected = bounds.static_priority_delay(at_or_above, above)
        got = lp_delay(f, others)
        assert got == pytest.approx(expected, rel=1e-7, abs=1e-10), (levels, rates, sizes, i)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 4), load=st.floats(0.1, 0.9))
def test_lp_delay_multiple_buckets_matches_min_plus(seed: int, k: int, load: float) -> None:
    """Several buckets per flow, distinct levels: the LP equals ``h(α_w, [t − Σ α_higher]+↑)``
    computed by the DNC operators with ``α = min_i (r_i t + b_i)``."""
    rng = np.random.default_rng(seed)
    n = 3
    mean = rng.dirichlet(np.ones(n)) * load
    flows, curves = [], []
    for i in range(n):
        # concave: rates rising from the mean, buckets falling
        r = np.sort(mean[i] * (1 + rng.uniform(0, 3, k)))
        r[0] = mean[i]
        b = np.sort(rng.uniform(0.001, 0.05, k))[::-1]
        flows.append(one_queue(f"f{i}", i, list(zip(r.tolist(), b.tolist(), strict=True))))
        curves.append(token_bucket_min(r.tolist(), b.tolist()))
    for i in range(n):
        service = leftover(constant_rate(1.0), aggregate(curves[:i])) if i else constant_rate(1.0)
        expected = horizontal_deviation(curves[i], service)
        got = lp_delay(flows[i], flows[:i] + flows[i + 1 :])
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_lp_delay_two_hops_tighter_than_per_hop_sum() -> None:
    """A flow through two queues with a more important cross flow at each: the per-hop sum
    (``two_hop_delay``, which pays the flow's burst at both hops) is larger than the LP."""
    w = LpFlow("w", ("a", "b"), {"a": 1, "b": 1}, ((0.2, 0.02),))
    x1 = LpFlow("x1", ("a",), {"a": 0}, ((0.3, 0.01),))
    x2 = LpFlow("x2", ("b",), {"b": 0}, ((0.4, 0.015),))
    lp = lp_delay(w, [x1, x2])
    per_hop = bounds.two_hop_delay(
        TokenBucket(0.2, 0.02),
        bounds.Hop(1.0, higher=[TokenBucket(0.3, 0.01)]),
        bounds.Hop(1.0, higher=[TokenBucket(0.4, 0.015)]),
    )
    # pay bursts only once: (0.02 + 0.01 + 0.015) served by the convolution of the leftovers
    assert lp < per_hop - 1e-3
    # and the LP is no smaller than the concatenation bound h(α, β1 ⊗ β2) of the leftovers
    # (rate-latency (0.7, 1/70) and (0.6, 1/40)): latencies 0.01/0.7 + 0.015/0.6 plus 0.02/0.6
    assert lp == pytest.approx(0.01 / 0.7 + 0.015 / 0.6 + 0.02 / 0.6, rel=1e-6)


def test_lp_delay_cross_flow_through_both_hops_counts_its_burst_once() -> None:
    w = LpFlow("w", ("a", "b"), {"a": 1, "b": 1}, ((0.1, 0.01),))
    x = LpFlow("x", ("a", "b"), {"a": 0, "b": 0}, ((0.3, 0.02),))
    per_hop = 2 * bounds.static_priority_delay(0.01 + 0.02, 0.3)
    assert lp_delay(w, [x]) < per_hop


def test_service_inverse_sampled_gives_the_lp_delay() -> None:
    hi = one_queue("hi", 0, [(0.3, 0.02), (0.6, 0.005)])
    w = one_queue("w", 1, [(0.1, 0.03), (0.4, 0.01)])
    alpha = token_bucket_min([0.1, 0.4], [0.03, 0.01])
    ys = np.linspace(1e-4, 0.2, 400)
    inverse = np.array([service_inverse(w, [hi], y) for y in ys])
    # α^{-1}(y): the earliest time y seconds of work can have arrived
    ts = np.linspace(0, 2, 20001)
    arrived = alpha(ts)
    alpha_inv = np.array([ts[np.searchsorted(arrived, y)] if y > arrived[0] else 0.0 for y in ys])
    sampled = float(np.max(inverse - alpha_inv))
    exact = lp_delay(w, [hi])
    assert sampled <= exact + 1e-4
    assert sampled == pytest.approx(exact, rel=2e-2)
    assert np.all(np.diff(inverse) >= -1e-12)  # β^{-1} increasing


def test_lp_delay_overloaded_is_infinite() -> None:
    hi = one_queue("hi", 0, [(0.7, 0.01)])
    w = one_queue("w", 1, [(0.4, 0.01)])
    assert lp_delay(w, [hi]) == float("inf")


def test_lp_delay_blocking_adds_lower_priority_request() -> None:
    lo = one_queue("lo", 2, [(0.1, 0.01)], max_request=0.004)
    w = one_queue("w", 1, [(0.2, 0.01)])
    assert lp_delay(w, [lo]) == pytest.approx(0.014)
    assert lp_delay(w, [lo], blocking=False) == pytest.approx(0.01)


def test_lp_delay_without_fifo_at_the_first_queue_counts_the_level_in_full() -> None:
    """FIFO at ``q_0``: the same level counts up to the tagged bit's arrival,
    ``(0.02 + 0.01) / 1``; without it, as a more important flow: ``(0.02 + 0.01) / (1 − 0.4)``."""
    peer = one_queue("peer", 1, [(0.4, 0.01)])
    w = one_queue("w", 1, [(0.1, 0.02)])
    assert lp_delay(w, [peer]) == pytest.approx(0.03)
    assert lp_delay(w, [peer], fifo_first=False) == pytest.approx(0.05)
    hi = one_queue("hi", 0, [(0.4, 0.01)])
    assert lp_delay(w, [peer], fifo_first=False) == pytest.approx(lp_delay(w, [hi]))


def bursty_arrivals(rng: np.random.Generator, n: int) -> np.ndarray:
    gaps = np.where(rng.uniform(size=n) < 0.05, rng.exponential(0.5, n), rng.exponential(1e-4, n))
    return np.cumsum(gaps)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), load=st.floats(0.3, 0.95))
def test_simulated_latency_never_exceeds_lp_bound(seed: int, load: float) -> None:
    """Three workloads at three levels on one non-preemptive device, each shaped by two buckets
    (the simulator's multi-bucket shaper): the worst simulated latency stays within the LP bound
    (with the largest lower-priority request as blocking)."""
    rng = np.random.default_rng(seed)
    n = 3
    rates = rng.dirichlet(np.ones(n)) * load
    arrivals, works, flows = [], [], []
    for i in range(n):
        small = float(rng.uniform(0.002, 0.02))
        buckets = [(float(rates[i]), small * 4), (float(min(0.99, rates[i] * 3)), small)]
        arrival = bursty_arrivals(rng, 2000)
        work = rng.uniform(0.0, small, arrival.size)
        arrivals.append(shape(arrival, work, buckets))
        works.append(work)
        flows.append(one_queue(f"w{i}", i, buckets, float(work.max())))
    sim = single_queue(
        arrivals, works, scheduler={"kind": "priority", "priority": [n - i for i in range(n)]}
    )
    sim.run()
    for i, res in enumerate(sim.results().workloads):
        bound = lp_delay(flows[i], flows[:i] + flows[i + 1 :])
        worst = float(res.latency.max())
        assert worst <= bound + 1e-9, (seed, load, i, worst, bound)


# ------------------------------------------------------------------ the end-to-end LP


def link(name: str, queue: str, level: int, buckets, max_request: float = 0.0) -> LpFlow:
    return LpFlow(name, (queue,), {queue: level}, tuple(buckets), max_request)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), load=st.floats(0.05, 0.9))
def test_path_delay_of_one_stage_is_lp_delay(seed: int, load: float) -> None:
    """One stage (two links), no path buckets: the path LP is the stage's LP."""
    rng = np.random.default_rng(seed)
    rates = rng.dirichlet(np.ones(3)) * load
    qs = ("a", "b")
    w = LpFlow("w", qs, {"a": 1, "b": 1}, ((float(rates[0]), 0.02),))
    others = [
        LpFlow("h", qs, {"a": 0, "b": 0}, ((float(rates[1]), 0.01),)),
        LpFlow("p", ("b",), {"b": 1}, ((float(rates[2]), 0.005),)),
        LpFlow("l", ("a",), {"a": 2}, ((0.1, 0.01),), 0.003),
    ]
    assert path_delay(PathFlow("w", (w,)), others) == pytest.approx(lp_delay(w, others))


def test_path_delay_pays_the_burst_once_hand_example() -> None:
    """Two one-link stages. w: ten requests of 5 ms of work at each stage (buckets (0.3, 50 ms)
    at both, and on the per-request maximum); at the second link a more important flow h with
    (0.2, 10 ms). Per stage: 50 ms + (10 + 50) / 0.8 = 125 ms. End to end (by hand): the LP
    puts y_B = 50 ms at the second link and y_A = 5 ms (the straddling request) at the first,
    whose backlog periods chain: y_A + (y_B + 10 ms) / 0.8 = 5 + 75 = 80 ms (s = 0; a later
    arrival s gains 0.3·1.25 < 1 per second)."""
    a = link("w/a", "l1", 1, [(0.3, 0.05)])
    b = link("w/b", "l2", 1, [(0.3, 0.05)])
    h = link("h", "l2", 0, [(0.2, 0.01)])
    summed = lp_delay(a, [h]) + lp_delay(b, [h])
    assert summed == pytest.approx(0.125)
    path = path_delay(PathFlow("w", (a, b), ((0.3, 0.05),), (0.005, 0.005)), [h])
    assert path == pytest.approx(0.08)
    # without the path buckets the stages are joined through time only: no gain
    assert path_delay(PathFlow("w", (a, b)), [h]) == pytest.approx(summed)


def test_path_delay_is_exact_for_a_burst_through_two_links() -> None:
    """Ten requests of 5 ms at once through two links in tandem: the tenth leaves the second
    link at 55 ms, which the path LP gives exactly (per stage summed: 100 ms)."""
    a = link("w/a", "l1", 0, [(0.5, 0.05)])
    b = link("w/b", "l2", 0, [(0.5, 0.05)])
    assert path_delay(PathFlow("w", (a, b), ((0.5, 0.05),), (0.005, 0.005)), []) == (
        pytest.approx(0.055)
    )
    assert lp_delay(a, []) + lp_delay(b, []) == pytest.approx(0.1)


def test_path_delay_refuses_a_queue_twice_and_missing_work() -> None:
    a = link("w/a", "l1", 0, [(0.5, 0.05)])
    with pytest.raises(ValueError, match="twice"):
        path_delay(PathFlow("w", (a, a)), [])
    with pytest.raises(ValueError, match="max_work_s"):
        path_delay(PathFlow("w", (a,), ((0.5, 0.05),)), [])


def test_path_delay_of_a_device_alone_is_lp_delay() -> None:
    """A local tenant (its only stage a device with a read and a write in service): the path
    LP is the device's LP, shared level and blocking included."""
    from tailbound.dnc.device import DeviceLimits

    sizes = np.array([512.0])
    dev = {"d": DeviceLimits(1, 1, np.inf, np.inf, sizes, sizes, sizes, None)}
    w = link("w", "d", 1, [(0.2, 0.01), (0.5, 0.004)], 0.001)
    others = [
        link("h", "d", 0, [(0.3, 0.02)], 0.002),
        link("l", "d", 2, [(0.1, 0.02)], 0.003),
        link("e", "d", 1, [(0.1, 0.005)], 0.003),
    ]
    got = path_delay(PathFlow("w", (w,)), others, devices=dev)
    assert got == pytest.approx(lp_delay(w, others, devices=dev))
    assert got > lp_delay(w, others)  # the device model counts more than one blocker
