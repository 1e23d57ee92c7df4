"""PriorityMeister's multiple rate limiters as a placement policy (thesis §5.4.7, Fig. 5.12).

For the tenants of one server, each gets ``k`` buckets per stage from its r-b curve
(:func:`~tailbound.policies.prioritymeister.rate_limits`), the prioritizer orders them, and they
fit together when every tenant's LP bound meets its SLO. The server is modelled as
WorkloadCompactor models it (:mod:`tailbound.policies.server`): one ``net_in`` and one ``net_out``
queue on the server's link, one queue per device, unit capacities, no non-preemption term.
The limits returned to the placer (its bookkeeping of rate sums) are each tenant's lowest-rate
bucket, its long-run rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tailbound.policies.placement import Limits
from tailbound.policies.prioritymeister import PmTenant, prioritize, rate_limits
from tailbound.policies.server import REFERENCE, Placed, ServerModel
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH, Stage


def server_tenant(placed: Placed, name: str, k: int) -> PmTenant:
    """A placed workload as a :class:`PmTenant` on the server's queues."""
    w = placed.workload
    queues = {
        Stage.NET_IN: ("net_in",),
        Stage.STORAGE: (f"storage{placed.device}",),
        Stage.NET_OUT: ("net_out",),
    }
    buckets = {s: rate_limits(w.curves[s], k) for s in STORAGE_PATH}
    return PmTenant(name, w.slo_s, queues, buckets, {})


@dataclass
class PriorityMeisterPolicy:
    """Configure a server's tenants with PriorityMeister (``k`` buckets per stage)."""

    k: int = 3
    name: str = "prioritymeister"
    #: The server model: with a device model, PriorityMeister's LP counts the device's blocking
    #: and its sharing inside a level (:mod:`tailbound.dnc.lp`).
    model: ServerModel = REFERENCE
    _buckets: dict[int, dict[Stage, tuple[tuple[float, float], ...]]] = field(default_factory=dict)

    def _tenant(self, placed: Placed, i: int) -> PmTenant:
        key = id(placed.workload)
        if key not in self._buckets:
            self._buckets[key] = dict(server_tenant(placed, "", self.k).buckets)
        w: TenantCurves = placed.workload
        queues = {
            Stage.NET_IN: ("net_in",),
            Stage.STORAGE: (f"storage{placed.device}",),
            Stage.NET_OUT: ("net_out",),
        }
        return PmTenant(f"{i}:{w.name}", w.slo_s, queues, self._buckets[key], {})

    def configure(
        self, tenants: Sequence[Placed], devices: int, newcomer: int | None = None
    ) -> Limits | None:
        pm = [self._tenant(p, i) for i, p in enumerate(tenants)]
        # cheap necessary condition first: long-run rates below capacity at every queue
        loads: dict[str, float] = {}
        for t in pm:
            for s in STORAGE_PATH:
                q = t.queues[s][0]
                loads[q] = loads.get(q, 0.0) + min(r for r, _ in t.buckets[s])
        if max(loads.values()) >= 1.0:
            return None
        shared = (
            {f"storage{d}": self.model.device for d in range(devices)}
            if self.model.device is not None
            else None
        )
        # per stage: a placement sees r-b curves, not traces, so its tenants have no end-to-end
        # buckets (``PmTenant.path_buckets``) and the path LP would only add solver time
        result = prioritize(pm, devices=shared, analysis="stages")
        if not all(result.meets(pm).values()):
            return None
        rate = np.array([[min(t.buckets[s])[0] for s in STORAGE_PATH] for t in pm])
        bucket = np.array([[min(t.buckets[s])[1] for s in STORAGE_PATH] for t in pm])
        return rate, bucket
