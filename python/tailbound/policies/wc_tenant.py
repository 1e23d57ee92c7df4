"""A WorkloadCompactor tenant prepared once for the Rust core (``tailbound_core::wc``).

:func:`prepared` turns a :class:`~tailbound.policies.workload.TenantCurves` into a
:class:`tailbound._core.WcTenant` (cached per workload), the one prepared form of a tenant: its
six LP columns' bounds and its r-b curve rows per stage (thesis §5.2.2), its arrival curve per
stage (the shapers' delays, §5.2.1), its SLO, and what the exact screens need — each stage's
curve points up to ``r = 0.999`` (computed once; the per-server screen's and the cluster
screen's vertices), its mean rates, the vertices of its feasible region (the certificates') and
the cluster screen's terms per level (cached in Rust). The per-server LP
(:mod:`tailbound.policies.wc_lp`), the latency check (:mod:`tailbound.policies.server`), the
cluster screen (:mod:`tailbound.policies.cluster_screen`) and the certificates
(:mod:`tailbound.policies.certificates`, :mod:`tailbound.policies.certificate_store`) hand them to
the core, which does the per-server arithmetic; Python orchestrates.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from tailbound._core import WcTenant
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH

if TYPE_CHECKING:
    from tailbound.policies.server import Placed


@lru_cache(maxsize=65536)
def prepared(workload: TenantCurves) -> WcTenant:
    """``workload``'s arrays for the core (cached per workload object); a ``ValueError`` naming
    the tenant when a curve is not finite, not increasing in rate or has negative buckets.

    Examples
    --------
    >>> import numpy as np
    >>> from tailbound.characterize import RbCurve
    >>> from tailbound.model import Slo
    >>> c = RbCurve(np.array([0.1, 0.5, 1.0]), np.array([0.05, 0.01, 0.0]), 0.1)
    >>> t = prepared(TenantCurves("w", Slo(1.0), {s: c for s in STORAGE_PATH}))
    >>> t.slo_s, t.out_of_bounds, t.block()[0].tolist()
    (1.0, False, [0.1, 0.0, 0.1, 0.0, 0.1, 0.0])
    """
    curves = [workload.curves[stage] for stage in STORAGE_PATH]
    try:
        return WcTenant(workload.slo_s, [c.rates for c in curves], [c.buckets for c in curves])
    except ValueError as e:
        raise ValueError(f"tenant {workload.name!r}: {e}") from None


def server_inputs(tenants: Sequence[Placed]) -> tuple[list[WcTenant], list[int]]:
    """The prepared tenants of a server and their devices, as the core's functions take them."""
    return [prepared(t.workload) for t in tenants], [t.device for t in tenants]
