"""Which admitted tenants' SNC-Meister bounds an arrival can change: those in the newcomer's
connected component of the queue-sharing graph (docs/service.md, "Load benchmark").

SNC-Meister's bound of a flow on ``S1 → V1`` (:func:`tailbound.snc.network.snc_meister`,
thesis Appendix A.4) reads the flows at its own queues and, through
:func:`tailbound.snc.flows.feeder_groups`, the flows at every first queue ``Si`` feeding
``V1`` — each of which shares a queue with a flow that shares ``V1`` with ours. Every flow a
bound reads is therefore connected to it by a chain of shared queues, and a tenant's flows are
analysed together (their dependency); so tenants are coupled only within a connected component
of the graph whose edges join tenants sharing a queue (a link direction or a device). A
newcomer outside a tenant's component leaves its bound unchanged **provided its priority
relations are unchanged**: priorities are dense ranks of the SLOs capped at
:data:`~tailbound.snc.tenants.PRIORITY_LEVELS` − 1
(:func:`~tailbound.snc.tenants.priorities_by_slo`), and the analysis compares priorities
only, so ranks computed within a component order its
tenants as the global ranks do while no two SLOs share the capped last level — i.e. while the
distinct SLOs number at most ``PRIORITY_LEVELS``.

:func:`applies` says when the restriction is exact: SNC-Meister's memoised analysis
(:class:`~tailbound.snc.incremental.IncrementalSnc`) behind per-tenant layers only
(:func:`analysis`: the alone floor and policing of tailbound's default rule; not a joint
floor, which replays the whole set), no tenant with a device or dependency
group (those go to the full computation, whose groups may span queues), and at most
``PRIORITY_LEVELS`` distinct SLOs. Otherwise the engine re-analyses every tenant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from tailbound.model import Tenant
from tailbound.snc.tenants import PRIORITY_LEVELS, build_network, priorities_by_slo


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


def applies(policy: Any, tenants: Sequence[Tenant]) -> bool:
    """Whether restricting ``policy``'s re-analysis of ``tenants`` to a component is exact
    (module docstring)."""
    if analysis(policy) is None:
        return False
    if any(t.device is not None or t.group is not None for t in tenants):
        return False
    return len({t.slo_s for t in tenants}) <= PRIORITY_LEVELS


def queues_of(policy: Any, tenant: Tenant, cache: dict[Any, frozenset[str]]) -> frozenset[str]:
    """The queues ``tenant``'s flows cross, as SNC-Meister's network of it alone has them
    (memoised in ``cache`` by name and placement)."""
    key = (tenant.name, tenant.client_host, tenant.server, tenant.device)
    if key not in cache:
        snc = analysis(policy)
        net, _, _ = build_network(snc.tset, [tenant], snc.fits)
        cache[key] = frozenset(q for f in net.flows for q in f.path)
    return cache[key]


def component(queues: Mapping[str, frozenset[str]], start: str) -> set[str]:
    """The names connected to ``start`` by chains of shared queues (``queues``: name → its
    queues).

    >>> sorted(component({"a": frozenset("xy"), "b": frozenset("y"), "c": frozenset("z")}, "b"))
    ['a', 'b']
    """
    at: dict[str, list[str]] = {}
    for name, qs in queues.items():
        for q in qs:
            at.setdefault(q, []).append(name)
    seen, todo, done_queues = {start}, [start], set()
    while todo:
        for q in queues[todo.pop()]:
            if q in done_queues:
                continue
            done_queues.add(q)
            for other in at[q]:
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
    return seen


def with_global_priorities(tenants: Sequence[Tenant], bounds: Sequence[Any]) -> list[Any]:
    """``bounds`` (of ``tenants``, in order) with each priority the rank of its SLO among all
    ``tenants`` (a component's analysis ranks within the component)."""
    ranks = priorities_by_slo([t.slo_s for t in tenants])
    return [
        b if b.priority == p else dataclasses.replace(b, priority=p)
        for b, p in zip(bounds, ranks, strict=True)
    ]
