"""The infeasibility screen of :func:`tailbound.policies.wc_lp.certainly_infeasible`, over all
servers of a cluster at once (our addition to wcPlacer, thesis §5.2.3; exact).

The screen's proof for one level ``p`` and path ``π`` (device ``d``) of a server is

``Σ_{j,s in} h_js(p) − λ SLO'_p (3·0.999 − Σ_{j lower} ρ_js) > SLO'_p`` for some ``(w, λ)``,

where ``h_js(p) = min_r [f_js(r) + SLO'_p (w_s [SLO_j < p] + λ) r]`` depends only on tenant
``j`` and the level. The sums over the server's tenants are therefore kept per server, level and
device and updated when the server's tenants change (its limits do not enter the proof). A
newcomer's own terms are added for every candidate server; a server is skipped only where a
level ``p >= SLO_new`` with an Eq. 5.7 row on path ``d`` (a tenant of level ``p`` on device
``d``, or the newcomer itself) has a proof, so the LP there is infeasible and placements are the
same with or without this screen. The ``(w, λ)`` grid: ``w`` on the simplex in steps of 1/4 plus
its centre, ``λ`` in {0, 0.25, 0.5, 1, 2, 4} (it contains the per-server screen's grid).

The sums live in Rust (``tailbound._core.WcClusterScreen``,
``crates/tailbound-core/src/wc_screen/cluster.rs``); this class is its thin wrapper. The former
numpy implementation is the test oracle (``tests/policies/screen_oracle.py``).

Levels are the distinct SLOs seen so far. Beyond :data:`MAX_LEVELS` of them the arrays would grow
too large and the screen turns itself off (the per-server screen and the LP still decide).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from tailbound._core import WcClusterScreen
from tailbound.policies.server import Placed
from tailbound.policies.wc_tenant import prepared
from tailbound.policies.workload import TenantCurves

#: Distinct SLOs beyond which the screen switches off (its arrays grow with the level count).
MAX_LEVELS = 64
#: Slack on the proof's inequality: wider than the per-server screen's 1e-9 because the sums are
#: added in another order (a wider slack only makes the screen more cautious).
TOLERANCE = 1e-7


class ClusterScreen:
    """Per-server sums of the screen's terms; :meth:`infeasible` tests a newcomer everywhere."""

    def __init__(self, max_devices: int) -> None:
        self.max_devices = max_devices
        self._core = WcClusterScreen(max_devices, MAX_LEVELS, TOLERANCE)

    @property
    def active(self) -> bool:
        """Whether the screen still proves anything (off beyond :data:`MAX_LEVELS` SLOs)."""
        return self._core.active

    @property
    def levels(self) -> list[float]:
        """The levels (distinct SLOs, s) in the order seen."""
        return self._core.levels

    def fork(self) -> ClusterScreen:
        """An independent copy (for :meth:`Placer.fork
        <tailbound.policies.placement.Placer.fork>`): servers are shared until one side
        changes them."""
        new = copy.copy(self)
        new._core = self._core.fork()
        return new

    def __deepcopy__(self, memo: dict[int, object]) -> ClusterScreen:
        """``copy.deepcopy`` (of a whole :class:`~tailbound.policies.placement.Placer`, say): a
        :meth:`fork`, since the Rust state cannot be copied field by field."""
        return self.fork()

    # ------------------------------------------------------------------ bookkeeping
    def add_server(self, devices: int) -> None:
        """A new empty server at the end of the cluster."""
        self._core.add_server(devices)

    def set_server(self, i: int, tenants: Sequence[Placed], devices: int) -> None:
        """Server ``i`` now holds ``tenants`` (recomputes its sums)."""
        self._core.set_server(i, [(prepared(t.workload), t.device) for t in tenants], devices)

    # ------------------------------------------------------------------ the test
    def infeasible(
        self, workload: TenantCurves, device: int, servers: NDArray[np.int64]
    ) -> NDArray[np.bool_]:
        """For each server in ``servers``: does the screen prove that ``workload`` on ``device``
        makes that server's LP infeasible? (All ``False`` when the screen is off.)"""
        return self._core.infeasible(
            prepared(workload), device, np.ascontiguousarray(servers, dtype=np.int64)
        )
