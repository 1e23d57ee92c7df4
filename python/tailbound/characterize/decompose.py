"""The response-time-threshold decomposition of a trace and the rate it needs (Lu, Jin and
Varman, "RTT: graduated QoS by decomposing bursts", ICDCS 2009: the decomposition algorithm
Wang's Nested QoS thesis cites for choosing a class, §3.2.3, its ref. [31];
``docs/nested-qos.md``).

**Decomposition** (:func:`primary`). Requests in arrival order ``a_k`` (s) with work ``x_k``
(s of device work) are offered to a *primary* FIFO queue served at ``rate`` (a utilisation:
work seconds per second). Request ``k`` stays in the primary stream when it would finish there
within ``δ`` of arriving, counting only the requests kept before it; otherwise it is moved out
and takes no service from the primary queue::

    f_k = max(F_{k−1}, a_k) + x_k / rate,   keep_k = (f_k − a_k ≤ δ),
    F_k = f_k if keep_k else F_{k−1}        (F_0 = −∞)

Every kept request finishes within ``δ`` at ``rate``, so the kept stream conforms to the token
bucket ``(rate · δ, rate)`` (its work arriving in ``[s, t]`` is served within ``[s, t + δ]``).
Unlike a FIFO server that serves every request, the excess of a burst does not delay the
requests after it: a burst of six 1 ms requests and four lone ones at 4, 5, 6 and 7 ms keep six
of ten within 2 ms at rate 1 (two of the burst and the four after it), where a FIFO server of
all ten needs rate 7/6.

**The rate** (:func:`decomposed_rate`): ``κ``, the smallest rate at which the primary stream
keeps ``⌈f · N⌉`` of the ``N`` requests within ``δ`` — the thesis' "minimum capacity ``κ_1``
required for a fraction ``f_1`` of the workload to meet the deadline ``δ_1``". Found by
bisection to a relative :data:`RTOL`. With requests of one size the count kept is
non-decreasing in the rate and ``κ`` is the least such rate; with sizes that differ a faster
rate can keep fewer (a large request that now fits blocks two small ones; a Rust unit test of
``tailbound_core::decompose`` shows one), and ``κ`` is a rate that keeps the fraction within
:data:`RTOL` of one the bisection found that does not — never a rate that falls short.

The loop over requests runs in the Rust core (``tailbound_core::decompose``); one count is one
pass over the arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tailbound import _core

#: Relative precision of the bisection on ``κ``.
RTOL = 1e-12


def _arrays(time_s: ArrayLike, work_s: ArrayLike) -> tuple[NDArray[np.float64], ...]:
    t = np.ascontiguousarray(time_s, dtype=np.float64)
    w = np.ascontiguousarray(work_s, dtype=np.float64)
    return t, w


def primary(time_s: ArrayLike, work_s: ArrayLike, rate: float, delta_s: float) -> NDArray[np.bool_]:
    """Which requests stay in the primary stream at ``rate`` (utilisation) with threshold
    ``delta_s`` (s): arrivals ``time_s`` (s, non-decreasing), ``work_s`` per request (s of
    work at rate 1). Raises :class:`ValueError` for bad input (module documentation).

    Four 1 ms requests at once and one at 3.5 ms, 2 ms at rate 1: the first two finish at 1 and
    2 ms, the next two would finish at 3 ms and are moved out, the last finds the queue empty.

    >>> primary([0.0, 0.0, 0.0, 0.0, 0.0035], [1e-3] * 5, 1.0, 0.002).tolist()
    [True, True, False, False, True]
    """
    t, w = _arrays(time_s, work_s)
    return _core.decompose_primary(t, w, float(rate), float(delta_s))


def kept(time_s: ArrayLike, work_s: ArrayLike, rate: float, delta_s: float) -> int:
    """How many requests stay in the primary stream (the count of :func:`primary`).

    >>> kept([0.0] * 6 + [0.004, 0.005, 0.006, 0.007], [1e-3] * 10, 1.0, 0.002)
    6
    """
    t, w = _arrays(time_s, work_s)
    return _core.decompose_count(t, w, float(rate), float(delta_s))


def decomposed_rate(time_s: ArrayLike, work_s: ArrayLike, delta_s: float, fraction: float) -> float:
    """``κ``: the smallest rate (utilisation) at which the decomposition keeps
    ``⌈fraction · N⌉`` of the ``N`` requests within ``delta_s`` (module documentation), to a
    relative :data:`RTOL`. Raises :class:`ValueError` for an empty trace, ``fraction`` outside
    (0, 1], ``delta_s`` not positive or work not positive.

    >>> round(decomposed_rate([0.0] * 6 + [0.004, 0.005, 0.006, 0.007], [1e-3] * 10, 0.002, 0.6), 9)
    1.0
    """
    t, w = _arrays(time_s, work_s)
    if len(t) == 0 or len(t) != len(w):
        raise ValueError("expected a non-empty trace with one work value per request")
    if not (0 < fraction <= 1):
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if not (delta_s > 0 and math.isfinite(delta_s)):
        raise ValueError(f"delta_s must be positive and finite, got {delta_s}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("every request's work must be positive and finite")
    need = math.ceil(fraction * len(t) - 1e-9)

    def enough(rate: float) -> bool:
        return _core.decompose_count(t, w, rate, delta_s) >= need

    hi = float(np.max(w)) / delta_s  # the largest request alone fits
    while not enough(hi):
        hi *= 2
    lo = hi / 2
    while lo > 0 and enough(lo):
        hi, lo = lo, lo / 2
    while hi - lo > RTOL * hi:
        mid = (lo + hi) / 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
