"""wcOptimizer: the per-server linear program that chooses every tenant's ``(r, b)`` at every
stage jointly (thesis §5.2.2; paper §2.3.1), solved with HiGHS.

Variables, for tenant ``j`` at stage ``s`` (``net_in``, ``storage``, ``net_out``): ``r_js``
(utilisation) and ``b_js`` (seconds of work); for each priority level ``p`` and each path ``π``
(one per device) that carries a tenant of level ``p``: ``R_pπ``. Constraints:

- r-b curve: for each segment ``k`` of ``j``'s (convex) curve at ``s``, with points
  ``(ρ_k, β_k)`` and slope ``σ_k < 0``: ``b_js − σ_k r_js >= β_k − σ_k ρ_k``; and
  ``r_js >= ρ_0`` (the mean rate), ``b_js >= β_last``.
- capacity (Eq. 5.4): ``Σ_{j at queue q} r_jq <= 0.999`` for every queue.
- the rate bound of level ``p`` on path ``π``: ``Σ_{j at q, SLO_j < SLO_p} r_jq <= R_pπ`` for
  each queue ``q`` of ``π``.
- the relaxed multi-stage SLO (Eq. 5.7): ``Σ_{q in π} Σ_{j at q, SLO_j <= SLO_p} b_jq
  + SLO'_p R_pπ <= SLO'_p`` with ``SLO' = 0.999 SLO``.
- bounds ``0 <= r <= 0.999``, ``0 <= b <= SLO'_j``, ``0 <= R <= 0.999``.

Objective: minimise ``Σ r`` (the thesis: "the specific choice of objective function is not
critical"). Infeasible means the tenants cannot share the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import highspy
import numpy as np
from numpy.typing import NDArray

from tailbound.characterize import RbCurve
from tailbound.policies.server import RATE_CAP, SLO_SCALE, Placed, queue_ids, slos
from tailbound.stages import STORAGE_PATH

_INF = highspy.kHighsInf


@dataclass(frozen=True)
class LpSolution:
    """Rates and buckets chosen for each tenant and stage, shape ``(n, 3)``, and the ``R_p``."""

    rate: NDArray[np.float64]
    bucket: NDArray[np.float64]
    rate_bounds: dict[tuple[float, int], float]
    objective: float


@lru_cache(maxsize=65536)
def segment_rows(curve: RbCurve) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(−σ_k, β_k − σ_k ρ_k)`` per segment: the rows ``b − σ_k r >= rhs_k`` (cached)."""
    r, b = curve.rates, curve.buckets
    if len(r) < 2:
        return np.zeros(0), np.zeros(0)
    slope = np.diff(b) / np.diff(r)
    return -slope, b[:-1] - slope * r[:-1]


class _Rows:
    """Row-wise sparse constraint matrix under construction."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.index: list[NDArray[np.int64]] = []
        self.value: list[NDArray[np.float64]] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.nnz = 0

    def add(self, cols: NDArray[np.int64], vals: NDArray[np.float64], lo: float, hi: float) -> None:
        self.starts.append(self.nnz)
        self.index.append(np.asarray(cols, dtype=np.int32))
        self.value.append(np.asarray(vals, dtype=np.float64))
        self.lower.append(lo)
        self.upper.append(hi)
        self.nnz += len(cols)


def build_lp(tenants: Sequence[Placed], devices: int) -> tuple[highspy.HighsLp, list[tuple[float, int]]]:
    """The LP of the tenants on one server (see the module docstring), and the ``(SLO, device)``
    of each ``R`` variable in column order after the ``2·3·n`` rate and bucket columns."""
    n = len(tenants)
    q = queue_ids(tenants)
    slo = slos(tenants)
    scaled = slo * SLO_SCALE
    n_rb = 6 * n

    def r_col(j: int, s: int) -> int:
        return 6 * j + 2 * s

    col_lower = np.zeros(n_rb)
    col_upper = np.zeros(n_rb)
    rows = _Rows()
    for j, t in enumerate(tenants):
        for s, stage in enumerate(STORAGE_PATH):
            curve = t.workload.curves[stage]
            rc = r_col(j, s)
            col_lower[rc] = curve.rates[0]
            col_upper[rc] = RATE_CAP
            col_lower[rc + 1] = curve.buckets[-1]
            col_upper[rc + 1] = scaled[j]
            coef, rhs = segment_rows(curve)
            pair = np.array([rc, rc + 1])
            for k in range(len(coef)):
                rows.add(pair, np.array([coef[k], 1.0]), float(rhs[k]), _INF)
    # capacity of every queue (Eq. 5.4)
    for queue in range(2 + devices):
        members = np.argwhere(q == queue)
        if len(members):
            cols = np.array([r_col(j, s) for j, s in members])
            rows.add(cols, np.ones(len(cols)), -_INF, RATE_CAP)
    # Eq. 5.7 per priority level and path
    r_vars: list[tuple[float, int]] = []
    for level in np.unique(slo):
        for device in sorted({t.device for t, s in zip(tenants, slo, strict=True) if s == level}):
            rv = n_rb + len(r_vars)
            r_vars.append((float(level), device))
            path_queues = (0, 2 + device, 1)
            b_cols: list[int] = []
            for s, queue in zip((0, 1, 2), path_queues, strict=True):
                at_q = q[:, s] == queue
                higher = np.flatnonzero(at_q & (slo < level))
                if len(higher):
                    cols = np.append([r_col(j, s) for j in higher], rv)
                    rows.add(cols, np.append(np.ones(len(higher)), -1.0), -_INF, 0.0)
                b_cols.extend(r_col(j, s) + 1 for j in np.flatnonzero(at_q & (slo <= level)))
            slo_p = float(level) * SLO_SCALE
            cols = np.append(np.array(b_cols, dtype=np.int64), rv)
            rows.add(cols, np.append(np.ones(len(b_cols)), slo_p), -_INF, slo_p)
    n_col = n_rb + len(r_vars)
    lp = highspy.HighsLp()
    lp.num_col_ = n_col
    lp.num_row_ = len(rows.lower)
    cost = np.zeros(n_col)
    cost[0:n_rb:2] = 1.0
    lp.col_cost_ = cost
    lp.col_lower_ = np.append(col_lower, np.zeros(len(r_vars)))
    lp.col_upper_ = np.append(col_upper, np.full(len(r_vars), RATE_CAP))
    lp.row_lower_ = np.array(rows.lower)
    lp.row_upper_ = np.array(rows.upper)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.array([*rows.starts, rows.nnz], dtype=np.int32)
    lp.a_matrix_.index_ = np.concatenate(rows.index) if rows.index else np.zeros(0, np.int32)
    lp.a_matrix_.value_ = np.concatenate(rows.value) if rows.value else np.zeros(0)
    return lp, r_vars


_solver: highspy.Highs | None = None


def _highs() -> highspy.Highs:
    global _solver
    if _solver is None:
        _solver = highspy.Highs()
        _solver.setOptionValue("output_flag", False)
    return _solver


def solve(tenants: Sequence[Placed], devices: int = 1) -> LpSolution | None:
    """Solve the server's LP; ``None`` when infeasible (the tenants do not fit together).

    Examples
    --------
    >>> import numpy as np
    >>> from tailbound.characterize import RbCurve
    >>> from tailbound.policies.workload import Workload
    >>> from tailbound.stages import STORAGE_PATH
    >>> c = RbCurve(np.array([0.1, 0.5, 1.0]), np.array([0.05, 0.01, 0.0]), 0.1)
    >>> w = Workload("w", 0.1, {s: c for s in STORAGE_PATH})
    >>> sol = solve([Placed(w), Placed(w.with_slo(0.1, "v"))])
    >>> sol.rate.round(3).tolist()  # both stay at their mean rate, buckets 0.05 s
    [[0.1, 0.1, 0.1], [0.1, 0.1, 0.1]]
    >>> solve([Placed(w)] * 3) is None  # 3 × 3 stages × 0.05 s of bursts > 0.0999 s
    True
    """
    for t in tenants:
        for stage in STORAGE_PATH:
            c = t.workload.curves[stage]
            if c.rates[0] > RATE_CAP or c.buckets[-1] > t.workload.slo_s * SLO_SCALE:
                return None
    lp, r_vars = build_lp(tenants, devices)
    h = _highs()
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = np.array(h.getSolution().col_value)
    n = len(tenants)
    rb = x[: 6 * n].reshape(n, 3, 2)
    rate = np.clip(rb[:, :, 0], 0.0, RATE_CAP)
    bucket = np.maximum(rb[:, :, 1], 0.0)
    bounds = {key: float(x[6 * n + i]) for i, key in enumerate(r_vars)}
    return LpSolution(rate, bucket, bounds, float(h.getInfo().objective_function_value))
