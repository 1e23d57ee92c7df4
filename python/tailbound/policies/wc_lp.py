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

import highspy
import numpy as np
from numpy.typing import NDArray

from tailbound import _core
from tailbound._core import WcTenant
from tailbound.dnc.highs import solver
from tailbound.policies import certificates
from tailbound.policies.certificates import Certificate
from tailbound.policies.server import (
    REFERENCE,
    Placed,
    ServerModel,
    model_terms,
)
from tailbound.policies.wc_tenant import server_inputs


@dataclass(frozen=True)
class LpSolution:
    """Rates and buckets chosen for each tenant and stage, shape ``(n, 3)``, and the ``R_p``."""

    rate: NDArray[np.float64]
    bucket: NDArray[np.float64]
    rate_bounds: dict[tuple[float, int], float]
    objective: float


def build_lp(
    tenants: Sequence[Placed], devices: int, model: ServerModel = REFERENCE
) -> tuple[LpArrays, list[tuple[float, int]]]:
    """The LP of the tenants on one server (see the module docstring), and the ``(SLO, device)``
    of each ``R`` variable in column order after the ``2·3·n`` rate and bucket columns.

    Rows in order: every tenant's r-b curve rows (tenant by tenant, stage by stage), one
    capacity row per queue with a tenant (``net_in``, ``net_out``, then the devices), and per
    ``R`` its rate-bound rows (``net_in``, storage, ``net_out``: those with a term) and its Eq.
    5.7 row. With a :class:`~tailbound.policies.server.ServerModel` the rows follow its bound:
    the blocking terms of a level's path (the largest sum of a tenant's
    :meth:`~tailbound.policies.server.ServerModel.constants` among the level's tenants on the
    path's device) come off the right-hand side of its Eq. 5.7 row, and at a shared device the
    level's own rates count in its rate bound. Built in the core
    (``tailbound_core::wc::lp``)."""
    return _build(tenants, *server_inputs(tenants), model)


def _build(
    tenants: Sequence[Placed],
    prepared_tenants: list[WcTenant],
    device_of: list[int],
    model: ServerModel,
) -> tuple[LpArrays, list[tuple[float, int]]]:
    """:func:`build_lp` from the tenants' prepared arrays and devices."""
    constants, shares = model_terms(tenants, model)
    cost, col_lo, col_hi, row_lo, row_hi, start, index, value, r_vars = _core.wc_build_lp(
        prepared_tenants, device_of, constants, shares
    )
    return LpArrays(cost, col_lo, col_hi, row_lo, row_hi, start, index, value), r_vars


@dataclass(frozen=True)
class LpArrays:
    """An LP ``min cost·x, row_lower <= A x <= row_upper, col_lower <= x <= col_upper`` with
    ``A`` row-wise sparse (``start``, ``index``, ``value``)."""

    cost: NDArray[np.float64]
    col_lower: NDArray[np.float64]
    col_upper: NDArray[np.float64]
    row_lower: NDArray[np.float64]
    row_upper: NDArray[np.float64]
    start: NDArray[np.int32]
    index: NDArray[np.int32]
    value: NDArray[np.float64]

    def dense(self) -> NDArray[np.float64]:
        """``A`` as a dense matrix (for tests)."""
        a = np.zeros((len(self.row_lower), len(self.cost)))
        for i in range(len(self.row_lower)):
            lo, hi = self.start[i], self.start[i + 1]
            a[i, self.index[lo:hi]] = self.value[lo:hi]
        return a

    def pass_to(self, h: highspy.Highs) -> None:
        """Hand the LP to a HiGHS instance (numpy arrays passed as they are)."""
        h.passModel(
            len(self.cost),
            len(self.row_lower),
            len(self.value),
            int(highspy.MatrixFormat.kRowwise),
            int(highspy.ObjSense.kMinimize),
            0.0,
            self.cost,
            self.col_lower,
            self.col_upper,
            self.row_lower,
            self.row_upper,
            self.start,
            self.index,
            self.value,
            np.zeros(len(self.cost), dtype=np.int32),  # all continuous
        )


def solve(
    tenants: Sequence[Placed], devices: int = 1, model: ServerModel = REFERENCE
) -> LpSolution | None:
    """Solve the server's LP; ``None`` when infeasible (the tenants do not fit together).

    Examples
    --------
    >>> import numpy as np
    >>> from tailbound.characterize import RbCurve
    >>> from tailbound.model import Slo
    >>> from tailbound.policies.workload import TenantCurves
    >>> from tailbound.stages import STORAGE_PATH
    >>> c = RbCurve(np.array([0.1, 0.5, 1.0]), np.array([0.05, 0.01, 0.0]), 0.1)
    >>> w = TenantCurves("w", Slo(1.0), {s: c for s in STORAGE_PATH})
    >>> sol = solve([Placed(w), Placed(w.with_slo(1.0, "v"))])
    >>> sol.rate.round(3).tolist()  # a loose SLO: both stay at their mean rate
    [[0.1, 0.1, 0.1], [0.1, 0.1, 0.1]]
    >>> tight = [Placed(w.with_slo(0.1, name)) for name in "abc"]
    >>> solve(tight[:2]).rate.round(3).tolist()  # 100 ms: rates rise so buckets shrink
    [[0.5, 0.499, 0.103], [0.499, 0.5, 0.5]]
    >>> solve(tight) is None  # three such tenants cannot share a server
    True
    """
    return solve_certified(tenants, devices, certify=False, model=model)[0]


def solve_certified(
    tenants: Sequence[Placed],
    devices: int = 1,
    *,
    certify: bool = True,
    model: ServerModel = REFERENCE,
) -> tuple[LpSolution | None, list[Certificate]]:
    """:func:`solve`, and when the LP is infeasible (and ``certify``) the certificates of
    :mod:`tailbound.policies.certificates` made from HiGHS's dual ray, for later newcomers on
    the same server (the last of ``tenants`` is the newcomer)."""
    prepared_tenants, device_of = server_inputs(tenants)
    if any(p.out_of_bounds for p in prepared_tenants):
        return None, []
    lp, r_vars = _build(tenants, prepared_tenants, device_of, model)
    certify = certify and model is REFERENCE  # certificates are derived for the reference LP
    h = solver("wc")
    lp.pass_to(h)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        if not certify or h.getModelStatus() != highspy.HighsModelStatus.kInfeasible:
            return None, []
        _, has_ray, ray = h.getDualRay()  # type: ignore[attr-defined]  # not in the stubs
        if not has_ray:
            return None, []
        return None, certificates.from_dual_ray(tenants, r_vars, devices, lp, np.asarray(ray))
    n = len(tenants)
    rate, bucket, r_values = _core.wc_split_solution(h.getSolution().col_value, n)
    bounds = dict(zip(r_vars, r_values, strict=True))
    solution = LpSolution(rate, bucket, bounds, h.getObjectiveValue())
    return solution, []


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
    Never wrong; sometimes inconclusive (then the LP decides). Computed in the core
    (``tailbound_core::wc::screen``).
    """
    prepared_tenants, device_of = server_inputs(tenants)
    return _core.wc_certainly_infeasible(prepared_tenants, device_of, newcomer)
