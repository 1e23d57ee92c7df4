"""Arrival-order admission control (thesis §4.2, SNC-Meister's admission loop).

Tenants arrive one at a time. Priorities are by SLO (tightest first) over the admitted tenants and
the newcomer. The newcomer is admitted if, with it added, the bound function predicts that it and
every admitted tenant meet their SLOs; otherwise it is rejected (it may run as best-effort traffic
at the lowest priority, which does not affect the admitted tenants). The policy is any
:data:`~tailbound.snc.analysis.BoundFunction`, so DNC-based policies plug in unchanged.

Checking every admitted tenant (not only those sharing a queue with the newcomer, as the reference
implementation does) gives the same decisions: a tenant sharing no queue, directly or through the
flows it competes with, has an unchanged bound.

A bound function may also offer ``newcomer_bound(trial)``: the last tenant's bound alone, computed
without the others'. When it misses the newcomer's SLO the newcomer is rejected at once (the same
decision, since its bound is the same either way; ``violated`` then names only the newcomer),
which saves computing every admitted tenant's bound for the many arrivals a full system rejects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tailbound.snc.analysis import BoundFunction, TenantBound
from tailbound.snc.tenants import TenantSpec


@dataclass(frozen=True)
class Decision:
    """The decision on one arriving tenant and the bounds it was based on."""

    tenant: TenantSpec
    admitted: bool
    bound: TenantBound
    violated: tuple[str, ...]  # tenants that would miss their SLO (empty when admitted)

    def to_json(self) -> dict[str, object]:
        out = self.bound.to_json()
        out["admitted"] = self.admitted
        out["violated"] = list(self.violated)
        return out


def admit_in_order(tenants: Sequence[TenantSpec], bounds: BoundFunction) -> list[Decision]:
    """Decide on ``tenants`` in arrival order; returns one :class:`Decision` each."""
    admitted: list[TenantSpec] = []
    decisions = []
    screen = getattr(bounds, "newcomer_bound", None)
    for tenant in tenants:
        trial = [*admitted, tenant]
        if screen is not None:
            alone = screen(trial)
            if not alone.meets_slo:
                decisions.append(Decision(tenant, False, alone, (tenant.name,)))
                continue
        results = bounds(trial)
        violated = tuple(r.name for r in results if not r.meets_slo)
        ok = not violated
        if ok:
            admitted.append(tenant)
        decisions.append(Decision(tenant, ok, results[-1], violated))
    return decisions
