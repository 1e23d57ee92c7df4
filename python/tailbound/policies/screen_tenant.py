"""One tenant as WorkloadCompactor's exact screens need it (:mod:`tailbound.policies.cluster_screen`
and :mod:`tailbound.policies.certificate_store`), prepared once per workload for their Rust core
(``tailbound._core.WcScreenTenant``, ``crates/tailbound-core/src/wc_screen/``): its SLO, the
points of its r-b curves up to ``r = 0.999`` (:func:`tailbound.policies.wc_lp._vertices`) and the
vertices of its feasible region (:func:`tailbound.policies.certificates.region_vertices`). The
Rust object also caches the screen's terms ``h(p)`` per level."""

from __future__ import annotations

from functools import lru_cache

from tailbound._core import WcScreenTenant
from tailbound.policies.certificates import region_vertices
from tailbound.policies.wc_lp import _vertices
from tailbound.policies.workload import TenantCurves


@lru_cache(maxsize=65536)
def screen_tenant(workload: TenantCurves) -> WcScreenTenant:
    """``workload`` prepared for the screens (cached per workload, which hashes by identity)."""
    rates, buckets = _vertices(workload)
    region = region_vertices(workload)
    if region is None:
        return WcScreenTenant(workload.slo_s, rates, buckets)
    return WcScreenTenant(workload.slo_s, rates, buckets, region[0], region[1])
