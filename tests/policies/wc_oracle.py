"""The numpy implementations of WorkloadCompactor's per-server arithmetic, kept as test oracles
for the Rust core that replaced them (``tailbound_core::wc``, reached through
:mod:`tailbound.policies.wc_tenant`, :mod:`tailbound.policies.wc_lp` and
:mod:`tailbound.policies.server`): imported only by tests.

The code is the library's as it was before the move (commit 7320441), unchanged but for the
imports; the Rust core must give the same numbers up to rounding (numpy's pairwise and BLAS
summation orders make last-bit differences possible) and the same LP sparsity.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import highspy
import numpy as np
from numpy.typing import NDArray

from tailbound.characterize import RbCurve
from tailbound.dnc.curves import token_bucket_min
from tailbound.policies.server import (
    RATE_CAP,
    REFERENCE,
    SLO_SCALE,
    STORAGE,
    Placed,
    ServerModel,
    pad_edge,
    queue_ids,
    slos,
)
from tailbound.policies.wc_lp import LpArrays
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH

_INF = highspy.kHighsInf


@lru_cache(maxsize=65536)
def arrival_points(curve: RbCurve) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Breakpoints ``(xs, ys)`` and tail rate of the arrival curve ``min_i (r_i t + b_i)`` of an
    r-b curve (cached per curve object): :func:`~tailbound.dnc.curves.token_bucket_min`'s
    result, computed in one vectorised pass when every bucket is on the envelope."""
    fast = _envelope_points(curve.rates, curve.buckets)
    if fast is not None:
        return fast
    alpha = token_bucket_min(curve.rates, curve.buckets)
    return alpha.xs, alpha.ys, alpha.tail


def _envelope_points(
    rates: NDArray[np.float64], buckets: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], float] | None:
    """:func:`~tailbound.dnc.curves.token_bucket_min`'s walk without its loop, for the common
    case where the walk drops no line from its stack (a convex r-b curve): the same lines in the
    same order and the same arithmetic, so the same floats (tested); ``None`` otherwise (or
    when one bucket is left), and the caller takes the general walk."""
    order = np.lexsort((rates, buckets))
    r, b = rates[order], buckets[order]
    before = np.minimum.accumulate(np.concatenate([[np.inf], r[:-1]]))
    keep = r < before  # the walk skips a line whose rate is no smaller than the last kept one
    r, b = r[keep], b[keep]
    if len(r) < 2 or np.any(r < 0) or np.any(b < 0):
        return None
    x = (b[1:] - b[:-1]) / (r[:-1] - r[1:])  # where consecutive lines cross
    if not (x[0] > 0 and np.all(x[1:] > x[:-1])):
        return None  # the walk would pop a line
    xs = np.concatenate([[0.0], x])
    ys = np.concatenate([[b[0]], b[:-1] + r[:-1] * x])
    xs.flags.writeable = False
    ys.flags.writeable = False
    return xs, ys, float(r[-1])


def shaper_delays(
    tenants: Sequence[Placed], rate: NDArray[np.float64], bucket: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Delay of each tenant in its own token-bucket shaper at each stage, shape ``(n, 3)``:
    ``h(α, r t + b) = max_i ((α(x_i) − b)/r − x_i)+`` over the breakpoints of the concave
    arrival curve ``α`` (infinite if ``r`` is below the mean rate). Equals
    :func:`tailbound.dnc.shaper_delay` (the general operator), tested."""
    n = len(tenants)
    points = [arrival_points(t.workload.curves[stage]) for t in tenants for stage in STORAGE_PATH]
    lengths = np.array([len(p[0]) for p in points])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    xs = np.concatenate([p[0] for p in points])
    ys = np.concatenate([p[1] for p in points])
    tail = np.array([p[2] for p in points])
    r, b = rate.reshape(-1), bucket.reshape(-1)  # tenant by tenant, stage by stage, as points
    on = np.repeat(np.arange(3 * n), lengths)
    positive = r > 0
    # the same arithmetic per breakpoint as one curve at a time, then the largest per curve
    worst = np.maximum.reduceat((ys - b[on]) / np.where(positive, r, 1.0)[on] - xs, starts)
    out = np.where(
        positive, np.maximum(0.0, worst), np.where(ys[starts + lengths - 1] <= b, 0, np.inf)
    )
    out = np.where(tail > r * (1 + 1e-12) + 1e-15, np.inf, out)
    return out.reshape(n, 3)


def queue_delays(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    model: ServerModel = REFERENCE,
) -> NDArray[np.float64]:
    """Eq. 5.1 for each tenant at each of its queues, shape ``(n, 3)``:
    ``(c_j + Σ_{k same queue, SLO_k <= SLO_j} b_k) / (1 − Σ_{k same queue, SLO_k < SLO_j} r_k)``,
    with ``c_j`` the model's blocking terms and, at a device the model says is shared
    (processor sharing), ``SLO_k <= SLO_j`` in the rate sum too."""
    q = queue_ids(tenants)
    slo = slos(tenants)
    at_or_above = slo[None, :] <= slo[:, None]  # [j, k]: k's priority >= j's
    above = slo[None, :] < slo[:, None]
    extra = model.constants(tenants)
    out = np.empty((len(tenants), 3))
    for s in range(3):
        same = q[:, s][:, None] == q[:, s][None, :]
        b_sum = (same & at_or_above) @ bucket[:, s] + extra[:, s]
        sharing = at_or_above if s == STORAGE and model.shares_levels else above
        r_sum = (same & sharing) @ rate[:, s]
        with np.errstate(divide="ignore"):
            out[:, s] = np.where(r_sum < 1.0, b_sum / np.maximum(1.0 - r_sum, 1e-300), np.inf)
    return out


def latency_bounds(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    model: ServerModel = REFERENCE,
) -> NDArray[np.float64]:
    """Each tenant's predicted worst-case latency (s): Eq. 5.5 plus its shaper delays."""
    if not tenants:
        return np.zeros(0)
    delays = queue_delays(tenants, rate, bucket, model) + shaper_delays(tenants, rate, bucket)
    return delays.sum(axis=1)


def queue_rate_sums(
    tenants: Sequence[Placed], rate: NDArray[np.float64], devices: int
) -> NDArray[np.float64]:
    """Sum of configured rates per queue: ``[net_in, net_out, storage_0, ...]``."""
    sums = np.zeros(2 + devices)
    if tenants:
        q = queue_ids(tenants)
        for s in range(3):
            np.add.at(sums, q[:, s], rate[:, s])
    return sums


def check(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    devices: int,
    model: ServerModel = REFERENCE,
) -> bool:
    """The wcLatencyChecker: every queue within capacity (Eq. 5.4) and every bound <= SLO."""
    if np.any(queue_rate_sums(tenants, rate, devices) > RATE_CAP + 1e-9):
        return False
    bounds = latency_bounds(tenants, rate, bucket, model)
    return bool(np.all(bounds <= slos(tenants) * (1 + 1e-9)))


@lru_cache(maxsize=65536)
def segment_rows(curve: RbCurve) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(−σ_k, β_k − σ_k ρ_k)`` per segment: the rows ``b − σ_k r >= rhs_k`` (cached)."""
    r, b = curve.rates, curve.buckets
    if len(r) < 2:
        return np.zeros(0), np.zeros(0)
    slope = np.diff(b) / np.diff(r)
    return -slope, b[:-1] - slope * r[:-1]


@lru_cache(maxsize=65536)
def tenant_block(workload: TenantCurves) -> tuple[NDArray[np.float64], ...]:
    """A tenant's part of the LP, cached: column bounds of its six columns
    ``(r_in, b_in, r_st, b_st, r_out, b_out)`` and its r-b curve rows (local rate column,
    coefficient of ``r``, right-hand side)."""
    lower, upper = np.zeros(6), np.zeros(6)
    cols, coefs, rhss = [], [], []
    for s, stage in enumerate(STORAGE_PATH):
        curve = workload.curves[stage]
        lower[2 * s], upper[2 * s] = curve.rates[0], RATE_CAP
        lower[2 * s + 1], upper[2 * s + 1] = curve.buckets[-1], workload.slo_s * SLO_SCALE
        coef, rhs = segment_rows(curve)
        cols.append(np.full(len(coef), 2 * s, dtype=np.int64))
        coefs.append(coef)
        rhss.append(rhs)
    return lower, upper, np.concatenate(cols), np.concatenate(coefs), np.concatenate(rhss)


def _out_of_bounds(workload: TenantCurves) -> bool:
    """Whether a column of the tenant's block has its lower bound above its upper one: a mean
    rate above 0.999 or a smallest bucket above ``SLO'`` at some stage (no server takes it)."""
    lower, upper = tenant_block(workload)[:2]
    return bool(np.any(lower > upper))


def build_lp(
    tenants: Sequence[Placed], devices: int, model: ServerModel = REFERENCE
) -> tuple[LpArrays, list[tuple[float, int]]]:
    """The LP of the tenants on one server (see the module docstring), and the ``(SLO, device)``
    of each ``R`` variable in column order after the ``2·3·n`` rate and bucket columns.

    With a :class:`~tailbound.policies.server.ServerModel` the rows follow its bound: the
    blocking terms of a level's path come off the right-hand side of its Eq. 5.7 row, and at a
    shared device the level's own rates count in its rate bound."""
    n = len(tenants)
    q = queue_ids(tenants)
    slo = slos(tenants)
    n_rb = 6 * n

    blocks = [tenant_block(t.workload) for t in tenants]
    # r-b curve rows, two non-zeros each: coef·r + 1·b >= rhs
    sizes = [len(blk[2]) for blk in blocks]
    r_cols = np.concatenate([blk[2] for blk in blocks]) + np.repeat(6 * np.arange(n), sizes)
    m = len(r_cols)
    curve_index = np.empty(2 * m, dtype=np.int64)
    curve_index[0::2] = r_cols
    curve_index[1::2] = r_cols + 1
    curve_value = np.ones(2 * m)
    curve_value[0::2] = np.concatenate([blk[3] for blk in blocks])
    # the rate column of every (tenant, stage): (n, 3)
    rc = 6 * np.arange(n)[:, None] + 2 * np.arange(3)[None, :]
    # capacity of every queue (Eq. 5.4)
    cap_cols = [rc[q == queue] for queue in np.unique(q)]
    cap_sizes = np.array([len(c) for c in cap_cols], dtype=np.int64)
    # Eq. 5.7 per priority level and path, all at once (same rows, same order as one by one)
    devices_of = np.array([t.device for t in tenants])
    r_vars = sorted({(float(level), int(d)) for level, d in zip(slo, devices_of, strict=True)})
    eq57 = _eq57_rows(q, slo, rc, r_vars, n_rb, model, _path_constants(tenants, r_vars, model))
    n_eq57 = len(eq57[0]) - 1
    cap_end = 2 * m + int(cap_sizes.sum())
    start = np.concatenate(
        [
            2 * np.arange(m),
            2 * m + np.concatenate([[0], np.cumsum(cap_sizes)[:-1]]),
            cap_end + eq57[0],
        ]
    )
    n_col = n_rb + len(r_vars)
    cost = np.zeros(n_col)
    cost[0:n_rb:2] = 1.0
    return LpArrays(
        cost=cost,
        col_lower=np.concatenate([blk[0] for blk in blocks] + [np.zeros(len(r_vars))]),
        col_upper=np.concatenate([blk[1] for blk in blocks] + [np.full(len(r_vars), RATE_CAP)]),
        row_lower=np.concatenate(
            [blk[4] for blk in blocks] + [np.full(len(cap_cols) + n_eq57, -_INF)]
        ),
        row_upper=np.concatenate(
            [np.full(m, _INF), np.full(len(cap_cols), RATE_CAP), eq57[3].astype(np.float64)]
        ),
        start=start.astype(np.int32),
        index=np.concatenate([curve_index, *cap_cols, eq57[1]]).astype(np.int32),
        value=np.concatenate([curve_value, np.ones(int(cap_sizes.sum())), eq57[2]]),
    ), r_vars


def _path_constants(
    tenants: Sequence[Placed], r_vars: list[tuple[float, int]], model: ServerModel
) -> NDArray[np.float64]:
    """The seconds the model adds to each ``R`` variable's path (its level's tenants on its
    device all have the same less important neighbours, so the same terms)."""
    out = np.zeros(len(r_vars))
    if model is REFERENCE:
        return out
    extra = model.constants(tenants).sum(axis=1)
    slo = slos(tenants)
    device = np.array([t.device for t in tenants])
    for v, (level, d) in enumerate(r_vars):
        out[v] = float(extra[(slo == level) & (device == d)].max())
    return out


def _eq57_rows(
    q: NDArray[np.int64],
    slo: NDArray[np.float64],
    rc: NDArray[np.int64],
    r_vars: list[tuple[float, int]],
    n_rb: int,
    model: ServerModel = REFERENCE,
    constants: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.float64], NDArray[np.float64]]:
    """Rows of Eq. 5.7 and its rate bounds for every ``R_pπ`` (in ``r_vars`` order): per ``R``,
    the rows ``Σ_{j at q, SLO_j < p} r_jq − R <= 0`` for ``q`` = ``net_in``, storage, ``net_out``
    (those with a tenant) then ``Σ b + SLO'_p R <= SLO'_p``. Row starts (with the end),
    columns, values, upper bounds."""
    n = len(slo)
    level = np.array([v[0] for v in r_vars])
    path = np.stack(
        [
            np.zeros(len(r_vars), dtype=np.int64),
            2 + np.array([v[1] for v in r_vars]),
            np.ones(len(r_vars), dtype=np.int64),
        ],
        axis=1,
    )  # (V, 3)
    on = q[None, :, :] == path[:, None, :]  # (V, n, 3)
    higher = on & (slo[None, :] < level[:, None])[:, :, None]
    inside = on & (slo[None, :] <= level[:, None])[:, :, None]
    v_count = len(r_vars)
    # entries (V, 4 kinds, n·3 + 1 positions): kind s < 3 is the rate row of stage s, kind 3 the
    # bucket row; position j·3 + s is tenant j's column at stage s, the last one is R
    mask = np.zeros((v_count, 4, 3 * n + 1), dtype=bool)
    for s in range(3):
        shared = s == STORAGE and model.shares_levels  # processor sharing: equal levels count
        mask[:, s, s : 3 * n : 3] = (inside if shared else higher)[:, :, s]
    mask[:, 3, : 3 * n] = inside.reshape(v_count, 3 * n)
    mask[:, :, -1] = True
    keep = np.ones((v_count, 4), dtype=bool)
    keep[:, :3] = mask[:, :3, :-1].any(axis=2)
    cols = np.empty((v_count, 4, 3 * n + 1), dtype=np.int64)
    cols[:, :3, : 3 * n] = rc.reshape(-1)
    cols[:, 3, : 3 * n] = rc.reshape(-1) + 1
    cols[:, :, -1] = (n_rb + np.arange(v_count))[:, None]
    slo_p = level * SLO_SCALE
    vals = np.ones((v_count, 4, 3 * n + 1))
    vals[:, :3, -1] = -1.0
    vals[:, 3, -1] = slo_p
    upper = np.zeros((v_count, 4))
    upper[:, 3] = slo_p - (0.0 if constants is None else constants)
    m = mask[keep]
    lengths = m.sum(axis=1)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    return starts, cols[keep][m].astype(np.int32), vals[keep][m], upper[keep]


_K = 16  # points per stage in the screen's arrays (12 segments + the 0.999 point fit)


@lru_cache(maxsize=65536)
def _vertices(workload: TenantCurves) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each stage's r-b curve points with ``r <= 0.999`` plus the point at ``r = 0.999``,
    padded to a common length: rates and buckets, shape ``(3, K)`` (padding repeats the last
    point, which changes no minimum)."""
    rs, bs = [], []
    for stage in STORAGE_PATH:
        c = workload.curves[stage]
        keep = c.rates < RATE_CAP
        rs.append(np.append(c.rates[keep], RATE_CAP))
        bs.append(np.append(c.buckets[keep], float(c.bucket_at(RATE_CAP))))
    k = max(_K, *(len(r) for r in rs))
    return pad_edge(rs, k), pad_edge(bs, k)


#: Weights ``w`` of the three queues in ``R_p >= Σ_q w_q Σ_{higher at q} r`` (each a convex
#: combination, so implied by Eq. 5.7's three rate-bound rows).
_WEIGHTS = np.array([[1 / 3, 1 / 3, 1 / 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
#: Multipliers of the capacity rows (Eq. 5.4), in units of ``SLO'_p``.
_LAMBDAS = np.array([0.0, 0.5, 2.0])


def certainly_infeasible(tenants: Sequence[Placed], newcomer: int) -> bool:
    """A cheap proof that the server's LP has no solution (so it need not be solved).

    Weak duality on the constraints of one level ``p`` and path ``π``: Eq. 5.7 with the
    rate-bound rows gives, for convex weights ``w`` over the path's three queues,
    ``Σ_{j,s in} b_js + SLO'_p Σ_s w_s Σ_{j higher at s} r_js <= SLO'_p``; the capacity rows give
    ``Σ_{j in at s} r_js <= A_s = 0.999 − Σ_{j lower at s} ρ_js`` (lower tenants run at least at
    their mean rate ``ρ``). Adding ``λ SLO'_p`` times the capacity rows and using
    ``b_js >= f_js(r_js)`` (the convex r-b curve), every feasible point has
    ``Σ_{j,s in} min_r [f_js(r) + (SLO'_p w_s [j higher] + λ SLO'_p) r] − λ SLO'_p Σ_s A_s
    <= SLO'_p``; the minima are at curve points with ``r <= 0.999``. If the left side exceeds
    ``SLO'_p`` for some ``w``, ``λ`` (a small grid) the LP is infeasible. Only the levels at or
    below the newcomer's priority are checked (the newcomer does not enter the others' rows).
    Never wrong; sometimes inconclusive (then the LP decides).
    """
    slo = slos(tenants)
    q = queue_ids(tenants)
    verts = [_vertices(t.workload) for t in tenants]
    if len({v[0].shape[1] for v in verts}) > 1:  # a curve with more points than _K: pad all
        k = max(v[0].shape[1] for v in verts)
        verts = [
            (
                np.pad(r, ((0, 0), (0, k - r.shape[1])), mode="edge"),
                np.pad(b, ((0, 0), (0, k - b.shape[1])), mode="edge"),
            )
            for r, b in verts
        ]
    rates = np.stack([v[0] for v in verts])
    buckets = np.stack([v[1] for v in verts])
    means = rates[:, :, 0]
    for level in np.unique(slo[slo >= slo[newcomer]]):
        scaled = float(level) * SLO_SCALE
        higher = (slo < level)[:, None, None, None, None]
        # cost of r per tenant, stage, weight, multiplier: (n, 3, W, L, 1)
        c = scaled * (
            _WEIGHTS.T[None, :, :, None, None] * higher + _LAMBDAS[None, None, None, :, None]
        )
        hmin = (buckets[:, :, None, None, :] + c * rates[:, :, None, None, :]).min(axis=4)
        for device in np.unique(q[slo == level, STORAGE_IDX] - 2):
            path = np.array([0, 2 + device, 1])
            on = q == path[None, :]  # (n, 3): tenant j's stage s is on this path's queue
            inside = on & (slo <= level)[:, None]
            lower = on & (slo > level)[:, None]
            avail = RATE_CAP * 3 - float((means * lower).sum())
            total = (hmin * inside[:, :, None, None]).sum(axis=(0, 1))  # (W, L)
            total = total - scaled * _LAMBDAS[None, :] * avail
            if float(total.max()) > scaled * (1 + 1e-9):
                return True
    return False


STORAGE_IDX = 1
