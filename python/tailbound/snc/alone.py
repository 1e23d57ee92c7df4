"""A tenant's latency alone, measured from its trace: a floor under any predicted latency.

A tenant's request latency on the network can only grow when other tenants share its links: its
links are work-conserving and FIFO within a priority level, so traffic of the same or a higher
level only adds queueing, and lower levels add at most the non-preemptive blocking of one packet.
The latency its own trace gets *alone* — replayed open loop through its four links (client egress
and server ingress for the request, server egress and client ingress for the response) in the
simulator, nothing else present — is therefore a lower bound on its latency in any network, at
every percentile (per request, as the SLO is counted).

An analysis whose arrival model does not fit the trace can predict less than that. SNC-Meister's
reference MMPP (1 s intervals, Poisson arrivals and exponential work within a state) smooths the
sub-second runs of large writes of block-storage traces: on the wc62 traces its bound of a tenant
alone is up to 10× below the measured latency alone (docs/results-snc.md, "Why SNC-Meister
misses"). :class:`AloneFloor` wraps a bound function so that every tenant's predicted latency is
at least its measured latency alone at its percentile (``TenantBound.latency_alone_s`` records
it). This is tailbound's addition to SNC-Meister's admission (not in the thesis): it rejects a
tenant whose own bursts already miss its SLO, which the model would admit. It never lowers a
bound, so a guarantee of the wrapped analysis is kept. The DNC baselines do not need it: their
worst-case bounds of the same trace are never below its latency alone (tested against the
simulator in ``tests/snc/test_dnc_policies.py``).

The replay covers the network path only; a tenant with a storage device is floored by its
network latency alone (still a lower bound: the device stage adds to it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from tailbound.snc.analysis import BoundFunction, TenantBound
from tailbound.snc.replay import Enforced, replayed_percentiles
from tailbound.snc.tenants import TenantSpec
from tailbound.traces.trace import Trace


def alone_latency(spec: TenantSpec, trace: Trace, link_bytes_per_s: float) -> float:
    """``spec``'s latency (s) at its percentile when ``trace`` is replayed with nothing else on
    the network (host links of ``link_bytes_per_s`` bytes per second)."""
    (latency,) = replayed_percentiles(
        [spec], [trace], [Enforced(0)], link_bytes_per_s=link_bytes_per_s
    )
    return latency


class AloneFloor:
    """A :data:`~tailbound.snc.analysis.BoundFunction` predicting ``max(bound, latency alone)``
    for every tenant (module docstring).

    ``trace_of`` gives the trace a tenant's decision is made from (``FitCache.trace``: its file,
    or the first half of a trace an experiment primed). Latencies alone are measured once per
    (trace, percentile) and kept in ``alone`` (pass the same dictionary to share them between
    wrappers, e.g. over the arrival orders of an experiment). ``newcomer_bound`` (the admission
    screen) is kept when the wrapped function has it.
    """

    def __init__(
        self,
        bounds: BoundFunction,
        trace_of: Callable[[TenantSpec], Trace],
        link_bytes_per_s: float,
        alone: dict[tuple[str, float], float] | None = None,
    ) -> None:
        self.bounds = bounds
        self.trace_of = trace_of
        self.link_bytes_per_s = link_bytes_per_s
        self.alone = {} if alone is None else alone
        if hasattr(bounds, "newcomer_bound"):
            self.newcomer_bound = self._newcomer_bound

    def latency_alone(self, spec: TenantSpec) -> float:
        """``spec``'s measured latency alone (s) at its percentile, memoised."""
        key = (str(spec.trace), spec.percentile)
        if key not in self.alone:
            self.alone[key] = alone_latency(spec, self.trace_of(spec), self.link_bytes_per_s)
        return self.alone[key]

    def floor(self, spec: TenantSpec, bound: TenantBound) -> TenantBound:
        """``bound`` raised to ``spec``'s latency alone (unchanged if already above it)."""
        alone = self.latency_alone(spec)
        return dataclasses.replace(
            bound, latency_s=max(bound.latency_s, alone), latency_alone_s=alone
        )

    def __call__(self, tenants: Sequence[TenantSpec]) -> list[TenantBound]:
        return [self.floor(t, b) for t, b in zip(tenants, self.bounds(tenants), strict=True)]

    def _newcomer_bound(self, tenants: Sequence[TenantSpec]) -> TenantBound:
        screen = self.bounds.newcomer_bound  # type: ignore[attr-defined]
        return self.floor(tenants[-1], screen(tenants))
