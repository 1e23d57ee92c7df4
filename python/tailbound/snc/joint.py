"""The latency measured by replaying the tenants together: a floor no prediction may go under.

:class:`~tailbound.snc.alone.AloneFloor` raises a prediction to what a tenant's own trace measures
with nothing else on the network. A tenant's bursts can also queue behind its neighbours' bursts,
and the reference MMPP smooths both (docs/results-snc.md, Fig. 4.10: w121, admitted at 52.5 ms,
takes 81.1 ms when the admitted tenants' decision traces are replayed together). :class:`JointFloor`
closes that gap on the decision's own data: for a set of tenants it replays all their traces
together in the simulator — the four links of each tenant, the priorities the analysis gave them,
open loop — and raises each tenant's predicted latency to its measured latency at its percentile
(``TenantBound.latency_joint_s``). An admission decided with it never promises an SLO that the
traces it was decided from already break with the tenants it admits. It is tailbound's addition
(not in the thesis), opt-in because it costs one replay per admission check (a few seconds for
~100 tenants of 300 s block traces).

What it cannot do is see the future: behaviour absent from the decision traces (a larger burst
later on) is still up to the analysis.

The replay is skipped when the wrapped bounds already reject the set: the decision is the same,
and those bounds are returned unfloored. Tenants with a storage device are floored by their
network latency (the device stage only adds to it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from tailbound.snc.analysis import BoundFunction, TenantBound
from tailbound.snc.replay import Enforced, replayed_percentiles
from tailbound.snc.tenants import TenantSpec
from tailbound.traces.trace import Trace


class JointFloor:
    """A :data:`~tailbound.snc.analysis.BoundFunction` predicting ``max(bound, latency measured
    replaying the tenants together)`` (module docstring).

    ``trace_of`` gives the trace a tenant's decision is made from (``FitCache.trace``). The
    wrapped function's ``newcomer_bound`` screen is kept when it has one: a newcomer it rejects
    is rejected without a replay.
    """

    def __init__(
        self,
        bounds: BoundFunction,
        trace_of: Callable[[TenantSpec], Trace],
        link_bytes_per_s: float,
    ) -> None:
        self.bounds = bounds
        self.trace_of = trace_of
        self.link_bytes_per_s = link_bytes_per_s
        self.replays = 0  # replays run so far (they are the cost of this floor)
        if hasattr(bounds, "newcomer_bound"):
            self.newcomer_bound = bounds.newcomer_bound

    def measured(self, tenants: Sequence[TenantSpec], bounds: Sequence[TenantBound]) -> list[float]:
        """Each tenant's latency (s) at its percentile when ``tenants`` are replayed together at
        the priorities of ``bounds``."""
        self.replays += 1
        return replayed_percentiles(
            tenants,
            [self.trace_of(t) for t in tenants],
            [Enforced(b.priority) for b in bounds],
            link_bytes_per_s=self.link_bytes_per_s,
        )

    def __call__(self, tenants: Sequence[TenantSpec]) -> list[TenantBound]:
        bounds = self.bounds(tenants)
        if not all(b.meets_slo for b in bounds):
            return bounds
        return [
            dataclasses.replace(b, latency_s=max(b.latency_s, m), latency_joint_s=m)
            for b, m in zip(bounds, self.measured(tenants, bounds), strict=True)
        ]
