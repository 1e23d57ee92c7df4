"""The delay bound of HTB's realised discipline (``tailbound.dnc.htb``): by hand, on the numbers
of the private analysis it replaced (``enforce/net.py`` at commit 74bf056: ``_deviation``,
``_queue_bounds``, ``network_bounds``), against a fine grid and against the closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tailbound.dnc import (
    Curve,
    HtbFlow,
    TokenBucket,
    path_delays,
    queue_delays,
    round_robin_delay,
    token_bucket_min,
)

C = 12_500_000.0  # bytes/s: a 100 Mbit/s link
BLOCKING = 2 * 1514.0  # bytes: two full Ethernet frames

Buckets = tuple[tuple[float, float], ...]  # (rate, burst)


def curve(buckets: Buckets) -> Curve:
    return token_bucket_min([r for r, _ in buckets], [b for _, b in buckets])


def flow(name: str, level: int, buckets: Buckets | None, path: tuple[str, ...] = ()) -> HtbFlow:
    tbs = None if buckets is None else tuple(TokenBucket(r, b) for r, b in buckets)
    return HtbFlow(name, level, tbs, path)


# ------------------------------------------------------------------------------ by hand
def test_single_bucket_closed_form_by_hand() -> None:
    """One bucket per flow, a unit-rate queue: A (r 0.1, b 10 ms) shares level 1 with B (0.2,
    20 ms) under H at level 0 (0.3, 30 ms), 2 ms of blocking. A waits for every burst at its
    level and above, the blocking, and its peers' rates slow the service:
    (0.010 + 0.020 + 0.030 + 0.002) / (1 − 0.2 − 0.3) = 0.062 / 0.5 = 124 ms; H only for its own
    burst and the blocking: 32 ms; the level-2 flow D (0.1, 5 ms) below all of them:
    (0.065 + 0.002) / (1 − 0.6) = 167.5 ms."""
    flows = [
        flow("H", 0, ((0.3, 0.030),)),
        flow("A", 1, ((0.1, 0.010),)),
        flow("B", 1, ((0.2, 0.020),)),
        flow("D", 2, ((0.1, 0.005),)),
    ]
    d = queue_delays(flows, 1.0, 0.002)
    assert d["A"] == pytest.approx(0.124, rel=1e-12)
    assert d["B"] == pytest.approx(0.062 / 0.6, rel=1e-12)
    assert d["H"] == pytest.approx(0.032, rel=1e-12)
    assert d["D"] == pytest.approx(0.1675, rel=1e-12)


def test_single_bucket_in_bytes_by_hand() -> None:
    """The same in the network enforcer's units: a 10 kB burst at 1.25 MB/s beside a 20 kB
    burst at 2.5 MB/s, two 1514-byte frames of blocking: (10 000 + 20 000 + 3028) / (12.5 MB/s
    − 2.5 MB/s) = 3.3028 ms."""
    d = round_robin_delay(TokenBucket(1.25e6, 10_000), [TokenBucket(2.5e6, 20_000)], C, BLOCKING)
    assert d == pytest.approx(33_028 / 10e6, rel=1e-12)


def test_a_path_by_hand() -> None:
    """A from host a and B from host b meet at s's side, both at level 0, unit-rate links, no
    blocking. First queues: A 10 ms, B 20 ms alone. At s, bursts grown by r·d: A 0.01 + 0.1·0.01
    = 0.011, B 0.02 + 0.2·0.02 = 0.024; A's delay there (0.011 + 0.024) / (1 − 0.2) = 43.75 ms."""
    a = flow("A", 0, ((0.1, 0.01),), ("a.out", "s.in"))
    b = flow("B", 0, ((0.2, 0.02),), ("b.out", "s.in"))
    d = path_delays([a, b], 1.0)
    assert d["A"] == pytest.approx(0.01 + 0.035 / 0.8, rel=1e-12)
    assert d["B"] == pytest.approx(0.02 + 0.035 / 0.9, rel=1e-12)


# ------------------------------------------------------------------------------ as before the move
#: ``(own buckets, other flows' buckets, enforce.net._deviation(own, others, C))`` captured from
#: the private code before it was deleted: the first eight chosen (one bucket each, no peer,
#: PriorityMeister's fast-burst-then-slow-rate shape, equal rates, bucket rates above the link, a
#: zero rate, rates equal to the leftover, unstable), the rest drawn at random (seed 23).
DEVIATION_CASES: list[tuple[Buckets, list[Buckets], float]] = [
    (((1250000.0, 10000.0),), [((2500000.0, 20000.0),)], 0.0033028),
    (((1250000.0, 10000.0),), [], 0.00104224),
    (
        ((12487500.0, 5000.0), (1250000.0, 40000.0)),
        [((12487500.0, 2000.0), (3750000.0, 30000.0)), ((625000.0, 8000.0),)],
        0.0073372700607512616,
    ),
    (
        ((1250000.0, 10000.0), (1250000.0, 20000.0)),
        [((3750000.0, 5.0), (3750000.0, 6.0))],
        0.0014894857142857144,
    ),
    (
        ((25000000.0, 5000.0), (1250000.0, 40000.0)),
        [((37500000.0, 2000.0), (3750000.0, 30000.0))],
        0.007082899248120299,
    ),
    (((0.0, 5000.0),), [((3750000.0, 30000.0),)], 0.004346057142857143),
    (((6250000.0, 1000.0),), [((6250000.0, 1000.0),)], 0.00080448),
    (((7500000.0, 1.0),), [((6250000.0, 1.0),)], math.inf),
    (
        ((6706696.0, 8355.0), (4491201.0, 42375.0)),
        [
            ((515909.0, 19200.0), (1458721.0, 22104.0)),
            ((2829974.0, 10590.0), (3068823.0, 49824.0)),
            ((1662902.0, 73421.0),),
        ],
        0.015297118024245732,
    ),
    (
        ((5809460.0, 20563.0), (385409.0, 36911.0)),
        [((773136.0, 73521.0), (1821589.0, 86014.0), (3030685.0, 28127.0))],
        0.00546164110075544,
    ),
    (
        ((4350769.0, 81428.0), (1435034.0, 48308.0)),
        [((2052135.0, 18203.0), (660620.0, 32341.0), (2572620.0, 19561.0)), ((371981.0, 42614.0),)],
        0.011013046637690028,
    ),
    (
        ((2157288.0, 57282.0), (6177391.0, 33080.0), (2851198.0, 28848.0)),
        [
            ((1771980.0, 25842.0), (446382.0, 78381.0)),
            ((2510243.0, 49301.0), (1109786.0, 14245.0), (2360942.0, 10035.0)),
        ],
        0.007481934833359221,
    ),
    (((1358541.0, 97501.0), (537409.0, 41622.0)), [((2553690.0, 68721.0),)], 0.01139829745905768),
    (
        ((6061608.0, 94883.0),),
        [
            ((2372043.0, 34614.0), (3048173.0, 37700.0)),
            ((235980.0, 26432.0),),
            ((714935.0, 93358.0), (2976361.0, 21595.0), (435510.0, 52897.0)),
        ],
        0.022403081404503394,
    ),
]


@pytest.mark.parametrize(("own", "others", "before"), DEVIATION_CASES)
def test_round_robin_delay_as_before_the_move(
    own: Buckets, others: list[Buckets], before: float
) -> None:
    got = round_robin_delay(curve(own), [curve(o) for o in others], C, BLOCKING)
    if math.isinf(before):
        assert math.isinf(got)
    else:
        # the old code evaluated β⁻¹ at max(α(t), 1e-9): a zero burst differed by 1e-16 s
        assert got == pytest.approx(before, rel=1e-12, abs=1e-15)


def test_queue_delays_as_before_the_move() -> None:
    """Levels, a multi-bucket flow and an unshaped flow at level 2, which leaves itself and the
    level below it unbounded (``enforce.net._queue_bounds`` before the move)."""
    flows = [
        flow("A", 0, ((0.1 * C, 10_000.0), (0.5 * C, 2_000.0))),
        flow("B", 0, ((0.2 * C, 20_000.0),)),
        flow("L", 1, ((0.05 * C, 50_000.0),)),
        flow("U", 2, None),
        flow("V", 3, ((0.01 * C, 1_000.0),)),
    ]
    before = {
        "A": 0.0025028,
        "B": 0.0029358222222222222,
        "L": 0.009488914285714287,
        "U": math.inf,
        "V": math.inf,
    }
    got = queue_delays(flows, C, BLOCKING)
    assert got == pytest.approx(before, rel=1e-12)


def test_path_delays_as_before_the_move() -> None:
    """Two senders, two receivers: A and L from c, B and E from d; A, L, B received by s, E by
    e (the old ``network_bounds``' algorithm: first queues, then the second with each burst
    grown by ``r·d``)."""
    flows = [
        flow("A", 0, ((0.1 * C, 10_000.0), (0.6 * C, 3_000.0)), ("c.egress", "s.ingress")),
        flow("L", 1, ((0.2 * C, 50_000.0),), ("c.egress", "s.ingress")),
        flow("B", 0, ((0.2 * C, 20_000.0),), ("d.egress", "s.ingress")),
        flow("E", 2, ((0.1 * C, 5_000.0),), ("d.egress", "e.ingress")),
    ]
    before = {
        "A": 0.003907279999999999,
        "L": 0.017287359999999998,
        "B": 0.005241031111111111,
        "E": 0.00372532,
    }
    assert path_delays(flows, C, BLOCKING) == pytest.approx(before, rel=1e-12)


# ------------------------------------------------------------------------------ properties
def _grid_delay(own: Buckets, others: list[Buckets], c: float, blocking: float) -> float:
    """The horizontal deviation on a fine grid (1 µs), for checking the exact one."""
    t = np.arange(0, 0.2, 1e-6)

    def alpha(buckets: Buckets, x: np.ndarray) -> np.ndarray:
        return np.min([b + r * x for r, b in buckets], axis=0)

    beta = np.maximum(c * t - sum(alpha(o, t) for o in others) - blocking, 0)
    a = alpha(own, t[:50_000])  # the worst is within the first 50 ms here
    return float(np.max(t[np.searchsorted(beta, a)] - t[:50_000]))


def test_several_buckets_against_a_fine_grid() -> None:
    # own: a fast burst then a slow rate; others: one at a higher level with two buckets
    own = ((0.999 * C, 5_000.0), (0.1 * C, 40_000.0))
    others = [((0.999 * C, 2_000.0), (0.3 * C, 30_000.0)), ((0.05 * C, 8_000.0),)]
    exact = round_robin_delay(curve(own), [curve(o) for o in others], C, BLOCKING)
    assert exact == pytest.approx(_grid_delay(own, others, C, BLOCKING), abs=2e-6)


def test_extra_buckets_tighten_and_unshaped_or_unstable_is_unbounded() -> None:
    a = flow("A", 0, ((0.1 * C, 40_000.0),))
    k = flow("A", 0, ((0.1 * C, 40_000.0), (0.5 * C, 5_000.0)))
    b = flow("B", 0, ((0.3 * C, 30_000.0),))
    assert queue_delays([k, b], C, BLOCKING)["B"] < queue_delays([a, b], C, BLOCKING)["B"]
    assert math.isinf(round_robin_delay(TokenBucket(0.6, 0.0), [TokenBucket(0.5, 0.0)], 1.0))
    # an unshaped flow bounds nobody at or below its level, and nothing above it
    low = flow("B", 2, ((0.3, 0.03),))
    d = queue_delays([flow("H", 0, ((0.1, 0.01),)), flow("U", 1, None), low], 1.0)
    assert math.isinf(d["U"]) and math.isinf(d["B"]) and math.isfinite(d["H"])


def test_an_unbounded_first_queue_leaves_the_flow_unbounded_after() -> None:
    u = flow("U", 0, None, ("x.out", "s.in"))
    a = flow("A", 0, ((0.1, 0.01),), ("x.out", "s.in"))
    b = flow("B", 1, ((0.1, 0.01),), ("y.out", "s.in"))
    d = path_delays([u, a, b], 1.0)
    assert all(math.isinf(v) for v in d.values())
    # without U, A's second queue sees its burst grown
    assert math.isfinite(path_delays([a, b], 1.0)["B"])


def test_path_delays_refuses_what_it_cannot_order() -> None:
    loop = [flow("A", 0, ((0.1, 0.01),), ("p", "q")), flow("B", 0, ((0.1, 0.01),), ("q", "p"))]
    with pytest.raises(ValueError, match="not feed-forward"):
        path_delays(loop, 1.0)
    with pytest.raises(ValueError, match="unique"):
        path_delays([flow("A", 0, None, ("p",)), flow("A", 1, None, ("q",))], 1.0)
    with pytest.raises(ValueError, match="not empty"):
        HtbFlow("A", 0, ())
    with pytest.raises(ValueError, match="capacity"):
        round_robin_delay(TokenBucket(0.1, 0.0), [], 0.0)


#: rates and bursts of a unit-rate queue: 0, or not below 1e-3 and 1e-6 (the general path
#: leaves rounding residues of ~1e-19 in the leftover, which a rate of 1e-9 turns into 1e-10 s)
bucket = st.tuples(
    st.one_of(st.just(0.0), st.floats(1e-3, 0.3)), st.one_of(st.just(0.0), st.floats(1e-6, 0.05))
)


@settings(max_examples=80, deadline=None)
@given(bucket, st.lists(bucket, max_size=4), st.floats(0.0, 0.01))
def test_closed_form_fast_path_and_general_path_agree(
    own: tuple[float, float], others: list[tuple[float, float]], blocking: float
) -> None:
    """One bucket each: the closed form, the operators' fast paths (token buckets, rate-latency
    leftover) and their general paths (the same curves as plain :class:`Curve`) agree; all are
    infinite when the flow's rate exceeds what the others leave."""
    # a flow that sends nothing (α = 0) waits 0 by the definition of h (the general path) and
    # T + 0/R by the token-bucket fast path: no traffic, no bound to compare
    assume(own != (0.0, 0.0))
    r_sum = sum(r for r, _ in others)
    assume(abs(own[0] - (1 - r_sum)) > 1e-9)  # not at the edge of stability
    stable = own[0] < 1 - r_sum
    closed = (own[1] + sum(b for _, b in others) + blocking) / (1 - r_sum) if stable else math.inf
    fast = round_robin_delay(TokenBucket(*own), [TokenBucket(*o) for o in others], 1.0, blocking)

    def plain(rb: tuple[float, float]) -> Curve:
        return Curve([0.0], [rb[1]], rb[0])

    general = round_robin_delay(plain(own), [plain(o) for o in others], 1.0, blocking)
    assert fast == pytest.approx(closed, rel=1e-9, abs=1e-12)
    assert general == pytest.approx(closed, rel=1e-9, abs=1e-12)
