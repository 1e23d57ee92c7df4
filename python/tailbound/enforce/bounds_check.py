"""Each tenant's bound under the discipline ``tailbound enforce net`` realises, checked against
its SLO and the Plan's bound: what the enforcer warns about and what it refuses
(docs/enforcement.md, "Checked against the Plan").

The bound itself is :func:`tailbound.enforce.realised.network_bounds` (the analysis in
:mod:`tailbound.dnc.htb`); this module only compares it with the Plan and words the verdict, so
it lives with the enforcer that acts on the verdict rather than in the analysis layer, which
knows no Plan.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from tailbound.enforce.realised import network_bounds
from tailbound.plan import Plan
from tailbound.stages import Stage


@dataclass(frozen=True)
class BoundCheck:
    """A tenant's bound with its network stages served by the realised discipline, against its
    SLO and the Plan's bound.

    ``realised_s``: for a network-only tenant the network bound (worst case); for a tenant with
    storage whose Plan bound splits by stage, the Plan's bound with its network stages' parts
    replaced by the realised ones; without the split, the Plan's bound plus the realised network
    bound (an upper bound: the Plan's network part is not subtracted). A worst-case network part
    added to a bound at percentile p is still a bound at percentile p."""

    tenant: str
    slo_s: float
    plan_s: float
    network_s: float
    realised_s: float
    #: The Plan's bound's percentile: below 1 it is a stochastic bound (SNC).
    plan_percentile: float = 1.0

    @property
    def stochastic(self) -> bool:
        """The Plan's bound is stochastic (SNC, percentile below 1): a worst-case bound above it,
        or above the SLO, does not contradict it (SNC-Meister admits on statistical
        multiplexing)."""
        return self.plan_percentile < 1

    @property
    def unbounded_stochastic(self) -> bool:
        """No worst-case bound (a tenant at or above the level has no buckets) while the Plan's
        bound is stochastic (SNC-Meister plans without policing rate-limit nothing): the
        worst-case check does not apply; the Plan's analysis assumed FIFO within a level where
        HTB round-robins."""
        return not math.isfinite(self.realised_s) and self.stochastic

    @property
    def over_slo(self) -> bool:
        """The realised worst case misses the SLO that the Plan's worst-case bound met: refused.
        Not for a stochastic Plan (warned, :meth:`line`)."""
        return self.realised_s > self.slo_s and not self.stochastic

    @property
    def over_plan(self) -> bool:
        return self.realised_s > self.plan_s * (1 + 1e-9)

    def line(self) -> str:
        pct = f"(p{100 * self.plan_percentile:g}) and assumes FIFO within a level"
        if self.over_slo:
            verdict = "ABOVE THE SLO"
        elif self.unbounded_stochastic:
            verdict = f"no worst-case bound without buckets; the plan's is stochastic {pct}"
        elif self.stochastic and self.realised_s > self.slo_s:
            verdict = f"worst case above the SLO; the plan's bound is stochastic {pct}"
        elif self.over_plan:
            verdict = "above the plan's bound"
        else:
            verdict = "within the plan's bound"
        return (
            f"{self.tenant}: realised bound {_ms(self.realised_s)} (network {_ms(self.network_s)})"
            f", plan's bound {_ms(self.plan_s)}, SLO {_ms(self.slo_s)}: {verdict}"
        )


def _ms(x: float) -> str:
    return f"{1e3 * x:.3g} ms" if math.isfinite(x) else "none"


def check_bounds(
    plan: Plan, link_rate: float, tenants: Iterable[str] | None = None
) -> list[BoundCheck]:
    """:class:`BoundCheck` of ``tenants`` (all with an SLO and a network stage by default)."""
    network = network_bounds(plan, link_rate)
    wanted = set(tenants) if tenants is not None else None
    out = []
    for t in plan.tenants:
        if t.slo is None or (wanted is not None and t.name not in wanted):
            continue
        if not any(s in t.stages for s in (Stage.NET_IN, Stage.NET_OUT)):
            continue
        net_s = network.get(t.name, float("inf"))
        planned = t.bound.latency_s
        if t.device is None:
            realised = net_s
        elif not math.isfinite(planned):
            realised = planned
        elif all(s in t.bound.stages for s in (Stage.NET_IN, Stage.NET_OUT)):
            realised = planned - t.bound.stages[Stage.NET_IN] - t.bound.stages[Stage.NET_OUT]
            realised += net_s
        else:
            realised = planned + net_s
        out.append(BoundCheck(t.name, t.slo_s, planned, net_s, realised, t.bound.percentile))
    return out
