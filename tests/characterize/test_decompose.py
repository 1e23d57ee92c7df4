"""The response-time-threshold decomposition (:mod:`tailbound.characterize.decompose`, Nested
QoS thesis §3.2.3 ref. [31]): which requests stay in the primary stream on hand sequences, the
rate ``κ`` of a hand example, and properties on random traces — the kept stream conforms to the
``(κ δ, κ)`` envelope, and it keeps every request a FIFO server of all of them finishes in time
(so ``κ`` is never above the FIFO rule's)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.characterize.decompose import decomposed_rate, kept, primary

MS = 1e-3


def fifo_within(time: np.ndarray, work: np.ndarray, rate: float, delta: float) -> np.ndarray:
    """Reference: which requests a FIFO server of every request finishes within ``delta``
    (Lindley's recursion, one request at a time)."""
    finish, out = -np.inf, []
    for a, x in zip(time, work, strict=True):
        finish = max(finish, a) + x / rate
        out.append(finish - a <= delta * (1 + 1e-12))
    return np.array(out, dtype=bool)


@pytest.mark.parametrize(
    ("time_ms", "work_ms", "rate", "delta_ms", "expected"),
    [
        # a burst of four: two fit 2 ms, the other two are moved out and take no service, so the
        # request at 3.5 ms finds the queue empty (a FIFO server of all would finish it 1.5 ms late)
        ([0, 0, 0, 0, 3.5], [1] * 5, 1.0, 2, [1, 1, 0, 0, 1]),
        # at twice the rate all four of the burst fit
        ([0, 0, 0, 0, 3.5], [1] * 5, 2.0, 2, [1, 1, 1, 1, 1]),
        # a request too large for δ at this rate is moved out; the small one after it still fits
        ([0, 0, 0], [1, 3, 1], 1.0, 2, [1, 0, 1]),
        # the backlog of kept requests carries over: 1.5 ms left at 0.5 ms, 2.5 ms > 2 ms
        ([0, 0.5, 0.5, 2], [1, 1, 1, 1], 1.0, 2, [1, 1, 0, 1]),
        # exactly at the threshold stays (2 ms of work in 2 ms)
        ([0, 0], [1, 1], 1.0, 2, [1, 1]),
        # a burst of six and four lone requests: two of the burst, every lone one
        ([0] * 6 + [4, 5, 6, 7], [1] * 10, 1.0, 2, [1, 1, 0, 0, 0, 0, 1, 1, 1, 1]),
    ],
)
def test_primary_on_hand_sequences(
    time_ms: list[float], work_ms: list[float], rate: float, delta_ms: float, expected: list[int]
) -> None:
    t, w = np.array(time_ms) * MS, np.array(work_ms) * MS
    got = primary(t, w, rate, delta_ms * MS)
    assert got.tolist() == [bool(e) for e in expected], f"primary({t!r}, {w!r}, {rate}, ...)"
    assert kept(t, w, rate, delta_ms * MS) == sum(expected)


def test_kappa_of_the_hand_example_and_the_fifo_rule() -> None:
    """Six 1 ms requests at once and one at each of 4, 5, 6, 7 ms; 60% within 2 ms. Below rate
    1 only one of the burst fits, so five are kept: ``κ = 1``. A FIFO server of all ten is still
    busy with the burst at 4 ms: the lone requests finish within 2 ms only from rate 7/6 (the one
    at 4 ms finishes at 7 ms / rate)."""
    t = np.array([0.0] * 6 + [4, 5, 6, 7]) * MS
    w = np.full(10, MS)
    kappa = decomposed_rate(t, w, 2 * MS, 0.6)
    assert kappa == pytest.approx(1.0, rel=1e-9)
    assert kept(t, w, kappa, 2 * MS) >= 6 > kept(t, w, kappa * (1 - 1e-9), 2 * MS)
    assert fifo_within(t, w, 7 / 6, 2 * MS).sum() == 6
    assert fifo_within(t, w, 7 / 6 * (1 - 1e-9), 2 * MS).sum() < 6
    # every request within 10 ms: the burst's 6 ms of work within 10 ms, 0.6
    assert decomposed_rate(t, w, 10 * MS, 1.0) == pytest.approx(0.6, rel=1e-9)


def test_a_burst_beside_a_steady_stream() -> None:
    """40 requests at 0 beside one every 20 ms: at 100 IOPS (10 ms each) the decomposition keeps
    5 of the burst and all 200 of the stream, which sets ``κ`` for 205 of 240; a FIFO server
    that serves the whole burst first makes the stream late too and needs over 1.5 times it."""
    t = np.sort(np.concatenate([np.zeros(40), 0.01 + 0.02 * np.arange(200)]))
    w = np.ones(len(t))  # one unit each: rates in IOPS
    assert kept(t, w, 100.0, 0.05) == 5 + 200
    kappa = decomposed_rate(t, w, 0.05, 205 / 240)
    assert kappa == pytest.approx(100.0, rel=1e-9)
    assert fifo_within(t, w, 1.5 * kappa, 0.05).sum() < 205


traces = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=n, max_size=n),
    )
)


@settings(max_examples=300, deadline=None)
@given(
    trace=traces,
    rate=st.floats(0.2, 4.0),
    delta=st.floats(0.3, 6.0),
)
def test_kept_stream_conforms_and_keeps_what_fifo_finishes(
    trace: tuple[list[float], list[float]], rate: float, delta: float
) -> None:
    t, w = np.cumsum(trace[0]), np.array(trace[1])
    keep = primary(t, w, rate, delta)
    # every interval [a_i, a_j] of kept requests: their work is at most rate·δ + rate·(a_j − a_i)
    kt, kw = t[keep], np.cumsum(w[keep])
    for i in range(len(kt)):
        before = kw[i - 1] if i else 0.0
        work = kw[i:] - before
        assert np.all(work <= rate * delta + rate * (kt[i:] - kt[i]) + 1e-9), (t, w, rate, delta)
    # the primary backlog never exceeds a FIFO server's, so what FIFO finishes in time is kept
    fifo = fifo_within(t, w, rate, delta)
    assert np.all(keep[fifo]), (t.tolist(), w.tolist(), rate, delta)


@settings(max_examples=100, deadline=None)
@given(trace=traces, delta=st.floats(0.3, 6.0), fraction=st.floats(0.05, 1.0))
def test_kappa_keeps_the_fraction_and_uniform_work_is_least(
    trace: tuple[list[float], list[float]], delta: float, fraction: float
) -> None:
    t = np.cumsum(trace[0])
    w = np.ones(len(t))
    need = int(np.ceil(fraction * len(t) - 1e-9))
    kappa = decomposed_rate(t, w, delta, fraction)
    assert kept(t, w, kappa, delta) >= need
    assert kept(t, w, kappa * (1 - 1e-9), delta) < need, (t.tolist(), delta, fraction)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: primary([0.0], [1.0, 2.0], 1.0, 1.0), "2 work values"),
        (lambda: primary([1.0, 0.0], [1.0, 1.0], 1.0, 1.0), "non-decreasing"),
        (lambda: primary([0.0], [-1.0], 1.0, 1.0), "work -1"),
        (lambda: primary([0.0], [1.0], 0.0, 1.0), "rate must be > 0"),
        (lambda: decomposed_rate([], [], 1.0, 0.5), "non-empty"),
        (lambda: decomposed_rate([0.0], [1.0], 1.0, 0.0), r"fraction must be in \(0, 1\]"),
        (lambda: decomposed_rate([0.0], [0.0], 1.0, 0.5), "positive"),
        (lambda: decomposed_rate([0.0], [1.0], 0.0, 0.5), "delta_s must be positive"),
    ],
)
def test_bad_input_is_refused(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]
