"""Infeasibility certificates of a server's LP, kept and reused for later newcomers (our addition
to wcPlacer, thesis §5.2.3; exact).

When HiGHS finds a server's LP (:mod:`tailbound.policies.wc_lp`) infeasible it returns a Farkas
dual ray. Its multipliers ``y >= 0`` on the coupling rows — capacity (Eq. 5.4), the rate bounds
of each level and path, and Eq. 5.7 — give, for every point feasible for those rows,
``y·A x <= y·u``. Writing ``y·A x = Σ_j Σ_s (c_js r_js + d_js b_js) + Σ_R e_R R``, every feasible
point also has each ``(r_js, b_js)`` in tenant ``j``'s region at stage ``s`` (on or above its r-b
curve, ``r`` in ``[ρ_0, 0.999]``, ``b <= SLO'_j``) and ``R`` in ``[0, 0.999]``, so

``L(y) = Σ_j Σ_s min_{region_js} (c_js r + d_js b) + Σ_R min(0, 0.999 e_R) − y·u > 0``

proves the LP infeasible (a Lagrangian bound: the tenants' own rows are kept exactly instead of
being multiplied). The proof stays valid for the same server with *another* newcomer: ``c`` and
``d`` of a newcomer of SLO ``σ`` on device ``δ`` depend only on which rows it would enter — the
capacity rows of its queues, the rate-bound rows of lower levels (``p > σ``) on paths through its
queues and the Eq. 5.7 rows of levels ``p >= σ`` there — and rows the new LP has but the old one
had not get multiplier 0 (any ``y >= 0`` on any subset of rows is a valid bound). It also stays
valid when tenants are *added* to the server: their terms are ``>= 0`` (``c, d >= 0`` and
``r, b >= 0``) and are simply left out. A departure changes the rows, so the server's
certificates are dropped then.

So a server that refused one newcomer usually refuses the next similar one without an LP. A
server is skipped only where ``L(y)`` exceeds a small relative margin (:data:`MARGIN`), a
mathematical proof up to rounding; placements are the same with or without the certificates
(tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from tailbound._core import wc_certificates
from tailbound.policies.server import Placed
from tailbound.policies.wc_tenant import prepared
from tailbound.policies.workload import TenantCurves

#: Margin on ``L(y) > 0``, relative to the sum of the magnitudes of its terms and of ``y``: far
#: above rounding, and above what HiGHS's feasibility tolerance (1e-7 per row) could hide, so a
#: server skipped this way is one the solver itself would have found infeasible.
MARGIN = 1e-6
#: Certificates kept per server (the newest); older ones are dropped.
KEEP = 8


@lru_cache(maxsize=65536)
def region_vertices(
    workload: TenantCurves,
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Lower-left vertices of the tenant's region at each stage, where ``c r + d b`` with
    ``c, d >= 0`` is smallest: the r-b curve between ``r_lo`` (the larger of its first rate and
    the rate where its bucket falls to ``SLO' = 0.999 SLO``) and ``r = 0.999``. Rates and
    buckets, shape ``(3, K)`` (padding repeats the last point); ``None`` if the region is empty
    at some stage (the tenant cannot meet its SLO). Computed in Rust
    (``crates/tailbound-core/src/wc_screen/mod.rs``) as part of the prepared tenant
    (:func:`tailbound.policies.wc_tenant.prepared`).

    Examples
    --------
    >>> from tailbound.characterize import RbCurve
    >>> c = RbCurve(np.array([0.1, 0.5, 1.0]), np.array([0.4, 0.1, 0.0]), 0.1)
    >>> from tailbound.model import Slo
    >>> from tailbound.policies.server import SLO_SCALE
    >>> from tailbound.stages import STORAGE_PATH
    >>> w = TenantCurves("w", Slo(0.2 / SLO_SCALE), {s: c for s in STORAGE_PATH})
    >>> r, b = region_vertices(w)  # b <= 0.2 from r = 0.4 on; the last point is at r = 0.999
    >>> r[0, :3].round(4).tolist(), b[0, :3].round(4).tolist()
    ([0.3667, 0.5, 0.999], [0.2, 0.1, 0.0002])
    """
    return prepared(workload).region()


def region_min(workload: TenantCurves, c: NDArray[np.float64], d: NDArray[np.float64]) -> float:
    """``Σ_s min_{region_s} (c_s r + d_s b)`` for ``c, d >= 0`` of shape ``(3,)``."""
    verts = region_vertices(workload)
    if verts is None:
        return np.inf
    rates, buckets = verts
    return float((c[:, None] * rates + d[:, None] * buckets).min(axis=1).sum())


@dataclass(frozen=True)
class Certificate:
    """A Farkas certificate of one server's LP, reduced to what a newcomer needs.

    ``constant`` is ``L(y)`` without the newcomer's terms; ``scale`` the sum of the magnitudes
    of its terms and of ``y`` (for :data:`MARGIN`). ``cap`` is ``y`` of the capacity rows per
    queue (``[net_in, net_out, storage_0, ...]``); per ``R_pπ``: its level ``p`` (SLO, s), its
    device, ``y`` of its three rate-bound rows (``rb``, per stage) and of its Eq. 5.7 row
    (``eq57``). ``only``: the ``(SLO, device)`` of the newcomers it applies to, if not all.
    """

    constant: float
    scale: float
    cap: NDArray[np.float64]
    level: NDArray[np.float64]
    device: NDArray[np.int64]
    rb: NDArray[np.float64]
    eq57: NDArray[np.float64]
    only: tuple[float, int] | None = None

    def coefficients(
        self, slo_s: float, device: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``c`` and ``d`` (each ``(3,)``) of a newcomer of SLO ``slo_s`` on ``device``: the
        sums of ``y`` over the rows it would enter."""
        on = np.ones((len(self.level), 3), dtype=bool)
        on[:, 1] = self.device == device
        lower = on & (self.level > slo_s)[:, None]
        inside = on & (self.level >= slo_s)[:, None]
        c = self.cap[[0, 2 + device, 1]] + (self.rb * lower).sum(axis=0)
        d = (self.eq57[:, None] * inside).sum(axis=0)
        return c, d

    def bound(self, workload: TenantCurves, device: int) -> float:
        """``L(y)`` of the LP with ``workload`` added on ``device`` (``-inf`` if this
        certificate does not apply to it)."""
        if self.only is not None and self.only != (workload.slo_s, device):
            return -np.inf
        c, d = self.coefficients(workload.slo_s, device)
        return self.constant + region_min(workload, c, d)

    def proves(self, workload: TenantCurves, device: int) -> bool:
        """Does this certificate prove the LP with ``workload`` added on ``device`` infeasible?"""
        return bool(self.bound(workload, device) > MARGIN * self.scale)


def from_dual_ray(
    tenants: Sequence[Placed],
    r_vars: Sequence[tuple[float, int]],
    devices: int,
    lp: LpRows,
    ray: NDArray[np.float64],
) -> list[Certificate]:
    """The certificates of the LP of ``tenants`` (the last one the newcomer) from HiGHS's dual
    ray ``ray`` (one entry per row); empty if the ray does not prove infeasibility this way.

    The rows of a level and path that only the newcomer brought (no other tenant of its SLO on
    its device) are not rows of the LP with another newcomer: a certificate using them is kept
    for newcomers of the same SLO and device only (``only``), and a second one without them,
    valid for every newcomer, is kept if it still proves this LP infeasible. The reduction
    runs in Rust (``crates/tailbound-core/src/wc_screen/certify.rs``).
    """
    level = np.array([r[0] for r in r_vars], dtype=np.float64)
    device = np.array([r[1] for r in r_vars], dtype=np.int64)
    made = wc_certificates(
        [(prepared(t.workload), t.device) for t in tenants],
        level,
        device,
        devices,
        np.asarray(lp.start, dtype=np.int64),
        np.asarray(lp.index, dtype=np.int64),
        np.asarray(lp.value, dtype=np.float64),
        np.asarray(lp.row_upper, dtype=np.float64),
        np.asarray(ray, dtype=np.float64),
        MARGIN,
    )
    new = (tenants[-1].workload.slo_s, tenants[-1].device)
    return [
        Certificate(constant, scale, cap, level, device, rb, eq57, new if only else None)
        for constant, scale, cap, rb, eq57, only in made
    ]


class LpRows(Protocol):
    """The rows of a server's LP as :func:`~tailbound.policies.wc_lp.build_lp` builds them:
    r-b curve rows first (lower bounds only), then the coupling rows (upper bounds only), each
    coupling row's ``R`` column (if any) last."""

    @property
    def start(self) -> NDArray[np.int32]: ...
    @property
    def index(self) -> NDArray[np.int32]: ...
    @property
    def value(self) -> NDArray[np.float64]: ...
    @property
    def row_upper(self) -> NDArray[np.float64]: ...
