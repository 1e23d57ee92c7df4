"""Per-tenant latency bounds for a fixed set of tenants (the ``tailbound bound`` command).

A *bound function* maps a list of tenants to one :class:`TenantBound` each; admission control
(:mod:`tailbound.policies.admission`) is written against that signature so other analyses (the DNC
baselines) plug in the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tailbound.model import Slo, Tenant, TenantSet
from tailbound.snc.network import flow_latencies
from tailbound.snc.tenants import FitCache, build_network, check_tenants


@dataclass(frozen=True)
class TenantBound:
    """A tenant's predicted latency at its percentile, per direction and in total (seconds)."""

    name: str
    priority: int
    latency_s: float
    latency_in_s: float
    latency_out_s: float
    latency_storage_s: float | None
    slo: Slo
    #: The tenant's measured latency alone at its percentile when the prediction is floored by
    #: it (:class:`tailbound.policies.floors.AloneFloor`); ``latency_s`` is then at least this.
    latency_alone_s: float | None = None
    #: The tenant's latency at its percentile measured by replaying the whole set together when
    #: the prediction is floored by it (:class:`tailbound.policies.floors.JointFloor`).
    latency_joint_s: float | None = None

    @classmethod
    def of_directions(cls, tenant: Tenant, priority: int, per: Mapping[str, float]) -> TenantBound:
        """A tenant's bound from its per-direction bounds (seconds): ``"in"``, ``"out"`` and
        optionally ``"storage"``, summed (a NaN from an unstable queue counts as infinite)."""
        total = math.fsum(per.values())
        return cls(
            name=tenant.name,
            priority=priority,
            latency_s=total if math.isfinite(total) else math.inf,
            latency_in_s=per["in"],
            latency_out_s=per["out"],
            latency_storage_s=per.get("storage"),
            slo=tenant.slo,
        )

    @property
    def meets_slo(self) -> bool:
        return self.slo.met_by(self.latency_s)


BoundFunction = Callable[[Sequence[Tenant]], list[TenantBound]]


def snc_bound_function(
    tset: TenantSet,
    analysis: str = "snc-meister",
    cache: FitCache | None = None,
    search: str = "reference",
) -> BoundFunction:
    """A bound function computing SNC bounds with ``analysis`` (fits cached across calls) and
    the Hölder ``search`` of :func:`~tailbound.snc.network.flow_latencies`."""
    check_tenants(tset)
    fits = cache if cache is not None else FitCache()

    def bounds(tenants: Sequence[Tenant]) -> list[TenantBound]:
        return snc_bounds(tset, tenants, fits, analysis, search)

    return bounds


def snc_bounds(
    tset: TenantSet,
    tenants: Sequence[Tenant],
    fits: FitCache,
    analysis: str = "snc-meister",
    search: str = "reference",
    *,
    priorities: Sequence[int] | None = None,
    fast: bool = True,
) -> list[TenantBound]:
    """Every tenant's SNC bound with all of ``tenants`` present (:func:`snc_bound_function`'s
    computation): their network (priorities by SLO, or the ``priorities`` given) and
    :func:`~tailbound.snc.network.flow_latencies` with ``analysis``, ``search`` and ``fast``."""
    net, flows, levels = build_network(tset, tenants, fits, priorities)
    latency = flow_latencies(net, analysis, search, fast=fast)
    out = []
    for t, tf, prio in zip(tenants, flows, levels, strict=True):
        per = {d: latency[i] for d, i in tf.flows.items()}
        out.append(TenantBound.of_directions(t, prio, per))
    return out
