"""One tenant as WorkloadCompactor's exact screens need it
(:mod:`tailbound.policies.cluster_screen`, :mod:`tailbound.policies.certificate_store` and the
certificates of :mod:`tailbound.policies.certificates`), prepared once per workload for their
Rust core (``tailbound._core.WcScreenTenant``, ``crates/tailbound-core/src/wc_screen/``) from
its r-b curves: its SLO, the points of its curves up to ``r = 0.999`` (the same table as
:func:`tailbound.policies.wc_lp._vertices`) and the vertices of its feasible region
(:func:`tailbound.policies.certificates.region_vertices`). The Rust object also caches the
cluster screen's terms ``h(p)`` per level."""

from __future__ import annotations

from functools import lru_cache

from tailbound._core import WcScreenTenant
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH


@lru_cache(maxsize=65536)
def screen_tenant(workload: TenantCurves) -> WcScreenTenant:
    """``workload`` prepared for the screens (cached per workload, which hashes by identity)."""
    curves = [workload.curves[s] for s in STORAGE_PATH]
    return WcScreenTenant(workload.slo_s, [c.rates for c in curves], [c.buckets for c in curves])
