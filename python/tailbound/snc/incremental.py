"""SNC-Meister bounds re-using what an arrival does not change (for admission loops).

Admission control asks for every tenant's bound each time one tenant arrives, but SNC-Meister's
bound of a flow (thesis Appendix A.4) reads only: its own arrival and ``eps``, the rates of its
two queues, and — for every first queue ``Si`` feeding its second queue with flows of priority ≥
its own — the flows entering ``Si`` of priority ≥ the lowest such feeder flow (shared with its
second queue or not). :func:`flow_signature` is exactly that input; :class:`IncrementalSnc`
memoises bounds on it and runs the Rust θ search (:func:`~tailbound.snc.fast.snc_meister_all`)
only for flows whose signature is new. The results are the same numbers as
:func:`~tailbound.snc.analysis.snc_bound_function` (up to the order of floating-point sums when
feeder queues are listed in another order); networks with dependency groups, storage devices or
another analysis are passed to the full computation.

A :class:`Part` is a union of connected components of a larger set of tenants (the control
plane's re-analysis of what an arrival or departure can change,
:mod:`tailbound.service.snc_local`): its bounds are computed as the larger set's computation
would compute them — the larger set's priority levels, its path (memoised, or the full
computation; there, the general per-flow path for every flow when the larger set has
dependencies) — so they are the larger set's bounds of those tenants.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

from tailbound.model import Tenant, TenantSet
from tailbound.snc.analysis import TenantBound, snc_bound_function, snc_bounds
from tailbound.snc.fast import snc_meister_all
from tailbound.snc.flows import Flow, Network
from tailbound.snc.mmpp import MmppArrival
from tailbound.snc.tenants import FitCache, build_network


def _source(f: Flow, names: Sequence[str]) -> Hashable:
    assert isinstance(f.arrival, MmppArrival)
    return (names[f.tenant], f.path, id(f.arrival.model))


def flow_signature(net: Network, flow: Flow, names: Sequence[str]) -> Hashable:
    """Everything SNC-Meister's bound of the two-hop ``flow`` depends on (module docstring);
    ``names`` are the tenants' names by index (flows are identified by tenant and path)."""
    second = flow.path[1]
    feeders: dict[str, int] = {}
    for f in net.flows_at(second, 1):
        if f.priority <= flow.priority:
            feeders[f.path[0]] = max(feeders.get(f.path[0], f.priority), f.priority)
    parts = []
    for queue, lowest in sorted(feeders.items()):
        members = sorted(
            (_source(f, names), len(f.path) > 1 and f.path[1] == second)
            for f in net.flows_at(queue, 0)
            if f.priority <= lowest and f.id != flow.id
        )
        parts.append((queue, net.queues[queue], tuple(members)))
    return (_source(flow, names), flow.eps, net.queues[second], tuple(parts))


class Part(list[Tenant]):
    """Tenants (in the larger set's order) that are a union of connected components of a larger
    set — every flow any of their flows' bounds reads, and every member of their dependency
    groups, is among them — with what the larger set's analysis uses (module docstring).

    ``levels``: the larger set's priority level of each SLO latency (s) of these tenants
    (:func:`~tailbound.snc.tenants.slo_levels`); ``memo``: the larger set has no tenant with a
    device or a dependency group (:class:`IncrementalSnc`'s memoised path); ``dependent``: it
    has dependencies (a group with two members or more); ``whole``: its size."""

    def __init__(
        self,
        tenants: Iterable[Tenant],
        levels: Mapping[float, int],
        *,
        memo: bool,
        dependent: bool,
        whole: int,
    ) -> None:
        super().__init__(tenants)
        self.levels = levels
        self.memo = memo
        self.dependent = dependent
        self.whole = whole

    def priorities(self) -> list[int]:
        """Each tenant's priority level in the larger set."""
        return [self.levels[t.slo_s] for t in self]


class IncrementalSnc:
    """A :data:`~tailbound.snc.analysis.BoundFunction` for SNC-Meister with memoised flows."""

    def __init__(
        self, tset: TenantSet, cache: FitCache | None = None, search: str = "reference"
    ) -> None:
        self.tset = tset
        self.fits = cache if cache is not None else FitCache()
        self.search = search
        # Dependency groups go to the full computation, with the Hölder ``search`` asked for.
        self.full = snc_bound_function(tset, "snc-meister", self.fits, search)
        self.memo: dict[Hashable, float] = {}
        self.solved = 0

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        """Every tenant's bound with all of ``tenants`` present (of the larger set, for a
        :class:`Part`)."""
        if isinstance(tenants, Part):
            if not tenants.memo:
                return self._part_full(tenants)
            return self._bounds(tenants, range(len(tenants)), tenants.priorities())
        if any(t.device is not None or t.group is not None for t in tenants):
            return self.full(tenants)
        return self._bounds(tenants, range(len(tenants)))

    def newcomer_bound(self, tenants: Sequence[Tenant]) -> TenantBound:
        """The last tenant's bound with all of ``tenants`` present (the admission screen)."""
        if isinstance(tenants, Part):
            if not tenants.memo:
                return self._part_full(tenants)[-1]
            return self._bounds(tenants, [len(tenants) - 1], tenants.priorities())[0]
        if any(t.device is not None or t.group is not None for t in tenants):
            return self.full(tenants)[-1]
        return self._bounds(tenants, [len(tenants) - 1])[0]

    def _part_full(self, part: Part) -> list[TenantBound]:
        """The full computation of ``part``'s tenants as that of its larger set does it."""
        return snc_bounds(
            self.tset,
            part,
            self.fits,
            "snc-meister",
            self.search,
            priorities=part.priorities(),
            fast=not part.dependent,
        )

    def _bounds(
        self,
        tenants: Sequence[Tenant],
        which: Sequence[int] | range,
        priorities: Sequence[int] | None = None,
    ) -> list[TenantBound]:
        net, flows, priorities = build_network(self.tset, tenants, self.fits, priorities)
        names = [t.name for t in tenants]
        wanted = {i for w in which for i in flows[w].flows.values()}
        keys = {f.id: flow_signature(net, f, names) for f in net.flows if f.id in wanted}
        todo = [f for f in net.flows if f.id in wanted and keys[f.id] not in self.memo]
        if todo:
            fresh = snc_meister_all(net, todo)
            assert fresh is not None  # independent two-hop flows only (checked above)
            for f in todo:
                self.memo[keys[f.id]] = fresh[f.id]
            self.solved += len(todo)
        out = []
        for w in which:
            t, tf, prio = tenants[w], flows[w], priorities[w]
            per = {d: self.memo[keys[i]] for d, i in tf.flows.items()}
            out.append(TenantBound.of_directions(t, prio, per))
        return out
