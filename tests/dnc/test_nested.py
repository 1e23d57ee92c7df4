"""The single-workload capacity of Nested QoS under EDF (Wang's thesis §3.2.2, Lemma 1, as
rebuilt in ``notes-nested-qos.md``): the worked example, Lemma 2's equal-rate form, and the
capacity checked against an EDF schedule of the worst-case arrivals."""

from __future__ import annotations

import heapq

import pytest

from tailbound.dnc.nested import (
    capacity_terms,
    demand,
    many_workload_capacity,
    single_workload_capacity,
)

#: The thesis' example SLA: (10, 100 IOPS, 5 ms), (20, 110 IOPS, 50 ms), (30, 120 IOPS, 500 ms).
SLA = [(10.0, 100.0, 0.005), (20.0, 110.0, 0.05), (30.0, 120.0, 0.5)]


def test_the_example_sla_needs_2000_iops_where_one_class_needs_6000() -> None:
    # max(10/0.005, (20 + 1 + 100·0.045)/0.05, (30 + 5.5 + 50.5)/0.5, 120)
    assert capacity_terms(SLA) == pytest.approx([2000.0, 510.0, 172.0])
    assert single_workload_capacity(SLA) == pytest.approx(2000.0)
    # the whole workload within the innermost deadline: one class (30, 120, 5 ms)
    assert single_workload_capacity([(30.0, 120.0, 0.005)]) == pytest.approx(6000.0)


def test_equal_rates_give_lemma_2() -> None:
    rho = 100.0
    classes = [(10.0, rho, 0.01), (25.0, rho, 0.02), (40.0, rho, 0.2)]
    d1 = classes[0][2]
    lemma2 = max(max(rho, (s + j + rho * (d - d1)) / d) for j, (s, _, d) in enumerate(classes))
    assert single_workload_capacity(classes) == pytest.approx(lemma2)


def test_a_rate_above_every_burst_term_is_the_capacity() -> None:
    assert single_workload_capacity([(1.0, 500.0, 1.0), (2.0, 600.0, 2.0)]) == 600.0


def test_in_seconds_of_work_the_capacity_is_a_utilisation() -> None:
    x = 1e-3  # one request is 1 ms of work: σ·x seconds, ρ·x utilisation
    work = [(s * x, r * x, d) for s, r, d in SLA]
    assert single_workload_capacity(work, request=x) == pytest.approx(2000.0 * x)


def _edf_misses(arrivals: list[tuple[float, float]], capacity: float) -> int:
    """Deadline misses of unit requests ``(arrival, deadline)`` served by EDF at ``capacity``
    requests per second, one at a time, work conserving."""
    arrivals = sorted(arrivals)
    heap: list[float] = []
    t, i, misses = 0.0, 0, 0
    while i < len(arrivals) or heap:
        if not heap:
            t = max(t, arrivals[i][0])
        while i < len(arrivals) and arrivals[i][0] <= t:
            heapq.heappush(heap, arrivals[i][1])
            i += 1
        deadline = heapq.heappop(heap)
        t += 1.0 / capacity
        misses += t > deadline + 1e-12
    return misses


def _greedy_classified(
    classes: list[tuple[float, float, float]], rate: float, n: int
) -> list[tuple[float, float]]:
    """``n`` requests arriving at ``rate`` (a burst at t = 0 when infinite), classified by the
    cascade of buckets (full at 0, refilled at ρ, capped at σ), each with its class' deadline;
    requests outside every class are dropped (best effort is not the lemma's concern)."""
    tokens = [s for s, _, _ in classes]
    last = 0.0
    out = []
    for k in range(n):
        t = 0.0 if rate == float("inf") else k / rate
        tokens = [
            min(s, tok + r * (t - last)) for (s, r, _), tok in zip(classes, tokens, strict=True)
        ]
        last = t
        passed = None
        for idx in range(len(classes) - 1, -1, -1):
            if tokens[idx] >= 1.0:
                tokens[idx] -= 1.0
                passed = idx
            else:
                break
        if passed is not None:
            out.append((t, t + classes[passed][2]))
    return out


@pytest.mark.parametrize("rate", [float("inf"), 400.0, 130.0])
def test_edf_at_the_capacity_meets_every_deadline_of_the_example(rate: float) -> None:
    """The bound is sufficient on the worst arrivals tried (a burst at t = 0, then steady
    streams), and tight for the burst: 10 % less capacity misses."""
    arrivals = _greedy_classified(SLA, rate, 200)
    c = single_workload_capacity(SLA)
    assert _edf_misses(arrivals, c * (1 + 1e-9)) == 0
    if rate == float("inf"):
        assert _edf_misses(arrivals, 0.9 * c) > 0


@pytest.mark.parametrize(
    ("classes", "words"),
    [
        ([], "at least one class"),
        ([(10.0, 0.0, 0.005)], "positive finite"),
        ([(20.0, 100.0, 0.005), (10.0, 110.0, 0.05)], "class 2 has sigma 10.0 < 20.0"),
        ([(10.0, 120.0, 0.005), (20.0, 110.0, 0.05)], "class 2 has rho"),
        ([(10.0, 100.0, 0.05), (20.0, 110.0, 0.005)], "class 2 has delta_s"),
    ],
)
def test_bad_classes_are_refused(classes: list[tuple[float, float, float]], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        single_workload_capacity(classes)


def test_demand_at_each_deadline_is_lemma_1s_numerator() -> None:
    terms = capacity_terms(SLA)
    for (_, _, delta), term in zip(SLA, terms, strict=True):
        assert demand(SLA, delta) / delta <= term + 1e-9
    assert demand(SLA, 0.004) == 0.0
    assert demand(SLA, 0.005) == pytest.approx(10.0)
    assert demand(SLA, 0.03) == pytest.approx(10.0 + 100.0 * 0.025)  # class 1 continued


def test_many_workloads_reduce_to_one_and_add_up() -> None:
    other = [(5.0, 50.0, 0.02), (8.0, 60.0, 0.2)]
    assert many_workload_capacity([SLA]) == pytest.approx(single_workload_capacity(SLA))
    assert many_workload_capacity([other]) == pytest.approx(single_workload_capacity(other))
    assert many_workload_capacity([SLA, SLA]) == pytest.approx(4000.0)
    both = many_workload_capacity([SLA, other])
    # at 5 ms only SLA's class 1 is due; at 20 ms SLA's 10 + 100·0.015 and other's 5
    assert both == pytest.approx(max(2000.0, (11.5 + 5.0) / 0.02))
    assert both <= single_workload_capacity(SLA) + single_workload_capacity(other)


@pytest.mark.parametrize("rate", [float("inf"), 400.0])
def test_edf_at_the_many_workload_capacity_meets_every_deadline(rate: float) -> None:
    """Two workloads with different deadlines, both bursting at t = 0 (the worst case) or
    steady: no miss at the capacity, misses at 0.9 of it for the burst."""
    other = [(15.0, 200.0, 0.02), (25.0, 220.0, 0.2)]
    arrivals = _greedy_classified(SLA, rate, 200) + _greedy_classified(other, rate, 200)
    c = many_workload_capacity([SLA, other])
    assert _edf_misses(arrivals, c * (1 + 1e-9)) == 0
    if rate == float("inf"):
        assert _edf_misses(arrivals, 0.9 * c) > 0
