"""Reference implementations of rbGen in numpy: the naive baselines for tests and benchmarks.

They compute exactly what thesis Algorithm 2.1 computes, by two other routes, so the fast Rust
implementation can be checked against them and measured against them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def rbgen_numpy(time: ArrayLike, tokens: ArrayLike, rates: ArrayLike) -> NDArray[np.float64]:
    """rbGen vectorised over requests, one numpy pass per rate.

    Unrolling Algorithm 2.1's recursion ``B_j = max(B_{j-1} - r (t_j - t_{j-1}), 0) + w_j`` gives
    ``B_j = max_{i <= j} (W_i..j - r (t_j - t_i))`` with ``W_i..j`` the tokens of requests i..j,
    so with cumulative tokens ``C``:
    ``b(r) = max_j [(C_j - r t_j) - min_{i <= j} (C_{i-1} - r t_i)]``.

    Parameters are arrival times (s, sorted), tokens per request (s of work) and rates
    (utilisations); returns the bucket size (s of work) per rate.
    """
    t = np.asarray(time, dtype=np.float64)
    w = np.asarray(tokens, dtype=np.float64)
    r = np.atleast_1d(np.asarray(rates, dtype=np.float64))
    if t.shape[0] == 0:
        return np.zeros_like(r)
    c = np.cumsum(w)
    c_before = c - w
    out = np.empty_like(r)
    for k, rate in enumerate(r):
        ends = c - rate * t
        starts = np.minimum.accumulate(c_before - rate * t)
        out[k] = np.max(ends - starts)
    return out


def rbgen_brute_force(time: ArrayLike, tokens: ArrayLike, rates: ArrayLike) -> NDArray[np.float64]:
    """``b(r) = max over all intervals [i, j] of (tokens of i..j) - r (t_j - t_i)``, in O(n²).

    For tiny traces only: the definition of the r-b curve, used to check the other routes.
    """
    t = np.asarray(time, dtype=np.float64)
    w = np.asarray(tokens, dtype=np.float64)
    r = np.atleast_1d(np.asarray(rates, dtype=np.float64))
    c = np.concatenate([[0.0], np.cumsum(w)])
    i, j = np.triu_indices(t.shape[0])
    work = c[j + 1] - c[i]
    span = t[j] - t[i]
    return np.max(work[None, :] - r[:, None] * span[None, :], axis=1)
