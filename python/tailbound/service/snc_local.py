"""Which admitted tenants' SNC-Meister bounds an arrival or a departure can change, kept as a
graph updated per event, so that a decision re-analyses those tenants only (docs/service.md,
"Load benchmark").

**Couplings.** SNC-Meister's bound of a flow on ``S1 → V1`` (:func:`tailbound.snc.network.
snc_meister`, thesis Appendix A.4) reads the flows at its own queues and, through
:func:`tailbound.snc.flows.feeder_groups`, the flows at every first queue ``Si`` feeding ``V1``
— each of which shares a queue with a flow that shares ``V1`` with ours; a one-hop flow (a
device's queue) reads the flows at that queue. A tenant's flows are analysed together, and a
dependency group's flows depend on each other (:func:`~tailbound.snc.tenants.build_network`).
So :class:`Graph` joins two tenants when they share a queue (a link direction or a device: the
queues of :func:`~tailbound.snc.tenants.flow_paths`) or a dependency group
(:func:`coupling_keys`); every input a bound reads besides the tenants of its connected
component is then one of three properties of the whole admitted set, which :class:`Graph` also
keeps:

- **the priority levels** — dense ranks of the SLOs capped at
  :data:`~tailbound.snc.tenants.PRIORITY_LEVELS` − 1 (:func:`~tailbound.snc.tenants.slo_levels`):
  the analysis compares priorities only, so a component's bounds change only when the order its
  levels put its tenants in changes. Levels are distinct below the cap, so that order changes
  only where an SLO class enters or leaves the capped last level: with more than
  ``PRIORITY_LEVELS`` distinct SLOs, an arrival with a new SLO can merge the last two levels of
  a component far away (its tenants then compete as equals: bounds grow, maybe past an SLO), a
  departure split them (:func:`reordered`);
- **the path**: :class:`~tailbound.snc.incremental.IncrementalSnc` memoises a set without a
  device or a group, and runs the full computation otherwise (``memo``);
- **dependencies**: a set with a group of two or more members is analysed by the general
  per-flow path for every flow, which gives the all-flows search's numbers up to the last bits
  (``dependent``).

**Events.** An arrival re-analyses the newcomer's component and the components whose level
order changed; a departure, the departed tenant's old component (it may split: analysed
together, the parts are analysed as apart) and those whose order changed; both re-analyse every
tenant when ``memo`` or ``dependent`` changes (the first tenant with a device or a group, a
group's second member: rare). The tenants re-analysed go to the policy as a
:class:`~tailbound.snc.incremental.Part` (the whole set's levels and path), so their bounds
are the full re-analysis's; the others keep theirs (their priority field restamped when their
level moved). The decision is :func:`~tailbound.policies.admission.decide_on` of the part: a
tenant outside it keeps a bound that met its SLO, so the same decision and ``violated``
(tested against the full re-analysis: ``tests/service/test_snc_local.py``).

Exact behind per-tenant layers only (:func:`analysis`: the alone floor and policing of
tailbound's default rule; not a joint floor, which replays the whole set). Up to the order of
floating-point sums where two tenants in different components share a trace (the all-flows
search sums each flow's sources in the order the batch first uses them), as
:class:`~tailbound.snc.incremental.IncrementalSnc` already is.

**Cost.** Per event, Python work in the tenants re-analysed (building their network, their
flows' signatures) and the graph's update (the event's few queues); the copies of the graph's
and the bounds' dictionaries (C speed, linear in the tenants); and, only when the set of
distinct SLOs changes, a scan of the members for the levels that moved.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from tailbound.model import Tenant
from tailbound.snc.tenants import PRIORITY_LEVELS, flow_paths, slo_levels

#: The capped last priority level: SLO classes past it share it.
LAST_LEVEL = PRIORITY_LEVELS - 1


def analysis(policy: Any) -> Any:
    """The :class:`~tailbound.snc.incremental.IncrementalSnc` under ``policy`` when every layer
    between is per tenant — :class:`~tailbound.policies.policing.Policed` (the inner bounds
    unchanged) and :class:`~tailbound.policies.floors.AloneFloor` (each bound floored by its
    own tenant's latency alone) over :class:`~tailbound.policies.admission.SncPolicy` —; None
    otherwise (e.g. a :class:`~tailbound.policies.floors.JointFloor`, which replays the whole
    set)."""
    from tailbound.policies.admission import SncPolicy
    from tailbound.policies.floors import AloneFloor
    from tailbound.policies.policing import Policed
    from tailbound.snc.incremental import IncrementalSnc

    while type(policy) in (Policed, AloneFloor):
        policy = policy.policy
    if type(policy) is SncPolicy and type(policy.bounds) is IncrementalSnc:
        return policy.bounds
    return None


def remember_floors(policy: Any, tenants: Iterable[Tenant], bounds: Mapping[str, Any]) -> None:
    """Give ``policy``'s :class:`~tailbound.policies.floors.AloneFloor` (when it has one, under
    :func:`analysis`'s layers) the latency alone each of ``tenants``' ``bounds`` carries
    (``latency_alone_s``: what the floor measured when it made them), so an engine restored
    from a snapshot does not replay each tenant alone again when it re-analyses it."""
    from tailbound.policies.floors import AloneFloor
    from tailbound.policies.policing import Policed

    floors = []
    while type(policy) in (Policed, AloneFloor):
        if type(policy) is AloneFloor:
            floors.append(policy)
        policy = policy.policy
    if len(floors) != 1:  # none, or nested floors: the outer one's values only are stored
        return
    for t in tenants:
        alone = bounds[t.name].latency_alone_s
        if alone is not None:
            floors[0].remember_alone(t, alone)


def coupling_keys(tenant: Tenant) -> frozenset[Hashable]:
    """What joins ``tenant`` to others in :class:`Graph`: the queues its flows cross (names as
    :func:`~tailbound.snc.tenants.flow_paths` gives them) and ``("group", name)`` for its
    dependency group.

    >>> from pathlib import Path
    >>> from tailbound.model import Slo
    >>> t = Tenant("a", Slo(0.1), Path("t.csv"), client_host="c0", server="s0", group="g")
    >>> sorted(map(str, coupling_keys(t)))
    ["('group', 'g')", 'c0/egress', 'c0/ingress', 's0/egress', 's0/ingress']
    """
    keys: set[Hashable] = {q for path in flow_paths(tenant).values() for q in path}
    if tenant.group is not None:
        keys.add(("group", tenant.group))
    return frozenset(keys)


@dataclass(frozen=True)
class Member:
    """An admitted tenant in :class:`Graph`: its arrival number, itself, its coupling keys."""

    order: int
    tenant: Tenant
    keys: frozenset[Hashable]


@dataclass(frozen=True)
class Graph:
    """The admitted tenants' coupling graph and the whole set's properties the analysis reads
    (module docstring). A value: :meth:`add` and :meth:`remove` return a new graph sharing the
    unchanged parts (each dictionary is copied, the entries of the event's keys replaced)."""

    members: Mapping[str, Member] = field(default_factory=dict)
    #: Coupling key → the members having it.
    at: Mapping[Hashable, frozenset[str]] = field(default_factory=dict)
    #: Distinct SLO latency (s) → how many members have it.
    slos: Mapping[float, int] = field(default_factory=dict)
    #: Dependency group → how many members are in it.
    groups: Mapping[str, int] = field(default_factory=dict)
    #: Members with a device or a group.
    special: int = 0
    #: Groups with two members or more.
    paired: int = 0
    #: The next arrival number.
    arrivals: int = 0

    @property
    def memo(self) -> bool:
        """Whether the whole set takes the memoised path (no device, no group)."""
        return self.special == 0

    @property
    def dependent(self) -> bool:
        """Whether the whole set has dependencies (a group of two members or more)."""
        return self.paired > 0

    def levels(self) -> dict[float, int]:
        """Each SLO latency's priority level in the whole set."""
        return slo_levels(self.slos)

    def add(self, tenant: Tenant) -> Graph:
        """The graph with ``tenant`` admitted last."""
        if tenant.name in self.members:
            raise ValueError(f"{tenant.name} is admitted already")
        keys = coupling_keys(tenant)
        members = dict(self.members)
        members[tenant.name] = Member(self.arrivals, tenant, keys)
        at = dict(self.at)
        for k in keys:
            at[k] = at.get(k, frozenset()) | {tenant.name}
        slos = dict(self.slos)
        slos[tenant.slo_s] = slos.get(tenant.slo_s, 0) + 1
        groups, paired = self.groups, self.paired
        if tenant.group is not None:
            count = groups.get(tenant.group, 0) + 1
            groups = {**groups, tenant.group: count}
            paired += count == 2
        special = self.special + (tenant.device is not None or tenant.group is not None)
        return Graph(members, at, slos, groups, special, paired, self.arrivals + 1)

    def remove(self, name: str) -> Graph:
        """The graph without the member ``name``."""
        gone = self.members[name]
        tenant = gone.tenant
        members = dict(self.members)
        del members[name]
        at = dict(self.at)
        for k in gone.keys:
            left = at[k] - {name}
            if left:
                at[k] = left
            else:
                del at[k]
        slos = dict(self.slos)
        slos[tenant.slo_s] -= 1
        if not slos[tenant.slo_s]:
            del slos[tenant.slo_s]
        groups, paired = self.groups, self.paired
        if tenant.group is not None:
            count = groups[tenant.group] - 1
            groups = {k: v for k, v in groups.items() if k != tenant.group}
            if count:
                groups[tenant.group] = count
            paired -= count == 1
        special = self.special - (tenant.device is not None or tenant.group is not None)
        return Graph(members, at, slos, groups, special, paired, self.arrivals)

    def component(self, starts: Iterable[str]) -> set[str]:
        """The members joined to any of ``starts`` by chains of shared keys (``starts``
        included)."""
        seen = set(starts)
        todo = list(seen)
        done: set[Hashable] = set()
        while todo:
            for key in self.members[todo.pop()].keys:
                if key in done:
                    continue
                done.add(key)
                for other in self.at[key]:
                    if other not in seen:
                        seen.add(other)
                        todo.append(other)
        return seen

    def ordered(self, names: Iterable[str]) -> list[Tenant]:
        """The members ``names`` in arrival order."""
        found = sorted((self.members[n] for n in names), key=lambda m: m.order)
        return [m.tenant for m in found]


def reordered(graph: Graph, before: Mapping[float, int], after: Mapping[float, int]) -> set[str]:
    """The members of ``graph`` in components whose tenants' priority order differs between the
    levels ``before`` and ``after`` (SLO latency → level; module docstring), comparing the SLOs
    both know. Only an SLO class entering or leaving the capped last level changes an order, so
    the members are scanned only when one does."""
    moved = {
        s
        for s in graph.slos
        if s in before and s in after and (before[s] == LAST_LEVEL) != (after[s] == LAST_LEVEL)
    }
    if not moved:
        return set()
    out: set[str] = set()
    seen: set[str] = set()
    for name, m in graph.members.items():
        if name in seen or m.tenant.slo_s not in moved:
            continue
        comp = graph.component([name])
        seen |= comp
        slos = sorted({graph.members[n].tenant.slo_s for n in comp} & before.keys() & after.keys())
        if [before[a] == before[b] for a, b in pairwise(slos)] != [
            after[a] == after[b] for a, b in pairwise(slos)
        ]:
            out |= comp
    return out


def restamped(
    bounds: dict[str, Any], graph: Graph, before: Mapping[float, int], after: Mapping[float, int]
) -> None:
    """Set in ``bounds`` (name → :class:`~tailbound.snc.analysis.TenantBound`) the priority of
    every member of ``graph`` whose level moved from ``before`` to ``after`` (scanning the
    members only when a level moved: the set of distinct SLOs changed)."""
    moved = {s for s in graph.slos if s in before and before[s] != after[s]}
    if not moved:
        return
    for name, m in graph.members.items():
        s = m.tenant.slo_s
        if s in moved and name in bounds:
            bounds[name] = dataclasses.replace(bounds[name], priority=after[s])


def _part(graph: Graph, names: Iterable[str], tail: list[Tenant]) -> Any:
    """The :class:`~tailbound.snc.incremental.Part` of ``graph``'s members ``names`` (in
    arrival order) followed by ``tail``."""
    from tailbound.snc.incremental import Part

    return Part(
        [*graph.ordered(names), *tail],
        graph.levels(),
        memo=graph.memo,
        dependent=graph.dependent,
        whole=len(graph.members),
    )


def arrival(
    policy: Any, graph: Graph, bounds: Mapping[str, Any], tenant: Tenant
) -> tuple[Any, Graph, dict[str, Any] | None]:
    """The decision on ``tenant`` arriving at the admitted ``graph`` whose bounds are
    ``bounds`` (name → bound), re-analysing only what it can change (module docstring); the
    graph with it admitted and every admitted tenant's bound with it present (None when the
    screen rejected it alone)."""
    from tailbound.policies.admission import decide_on

    after = graph.add(tenant)
    before_levels, after_levels = graph.levels(), after.levels()
    if (graph.memo, graph.dependent) != (after.memo, after.dependent):
        names = set(graph.members)
    else:
        names = after.component([tenant.name]) | reordered(after, before_levels, after_levels)
        names.discard(tenant.name)
    decision, found = decide_on(_part(after, names, [tenant]), policy)
    if found is None:
        return decision, after, None
    merged = dict(bounds)
    restamped(merged, graph, before_levels, after_levels)
    merged.update((b.name, b) for b in found)
    return decision, after, merged


def departure(
    policy: Any, graph: Graph, bounds: Mapping[str, Any], name: str
) -> tuple[Graph, dict[str, Any]]:
    """The graph without ``name`` and every remaining tenant's bound, re-analysing only what
    its departure can change (module docstring)."""
    after = graph.remove(name)
    before_levels, after_levels = graph.levels(), after.levels()
    if (graph.memo, graph.dependent) != (after.memo, after.dependent):
        names = set(after.members)
    else:
        names = graph.component([name]) | reordered(after, before_levels, after_levels)
        names.discard(name)
    merged = dict(bounds)
    del merged[name]
    restamped(merged, after, before_levels, after_levels)
    if names:
        merged.update((b.name, b) for b in policy(_part(after, names, [])))
    return after, merged
