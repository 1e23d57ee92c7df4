"""Networks of queues and the three SNC analyses of a flow's latency (thesis Appendix A.3, A.4).

A :class:`Network` holds queues (constant-rate servers, work per second) and flows. A flow is one
direction of a tenant's traffic: its arrival process, its path (one or two queues), its priority
(smaller number = higher priority; equal priorities count as higher, which is conservative) and its
violation probability ``eps``. Three analyses bound a flow's latency:

``snc_meister`` (Appendix A.4, six steps, proved by Theorem 7) on a two-hop path ``S1 → V1``:
  ``X`` = other flows on ``S1 → V1`` of priority ≥ ours; ``Y`` = flows from ``S1`` to other
  second queues, priority ≥ ours; for every other first queue ``Si`` feeding ``V1``: ``Zi`` = its
  flows into ``V1`` of priority ≥ ours and ``Ri`` = its other flows of priority ≥ the lowest in
  ``Zi``, departures ``D_Zi = A_Zi ⊘ (Si ⊖ A_Ri)``; then
  ``S = ((S1 ⊖ A_Y) ⊗ (V1 ⊖ (⊕ D_Zi))) ⊖ A_X`` and ``L = Latency(A_W, S, eps)``. Every aggregate
  uses the dependency-aware :func:`~tailbound.snc.bounds.aggregate_all`. A one-hop path is the
  single-queue case ``S = S1 ⊖ A_X``.

``hop_by_hop`` (Appendix A.3, approach 1): flows of priority ≥ ours in priority order, then ours;
  each is pushed through its queues, updating every queue's leftover service ``S ← S ⊖ A`` and the
  flow's arrival ``A ← A ⊘ S``; our latency is the sum of the per-hop bounds, each at
  ``eps / hops`` (union bound). Artificial dependencies are detected from the flow ids and handled
  with the Hölder forms.

``convolution`` (Appendix A.3, approach 2): as hop-by-hop, but our latency is one bound through
  the convolution of the leftover services of our queues.

Ties between flows of equal priority in the two classic analyses are ordered by their latency
bound computed so far, larger first (the reference implementation's heuristic), then by flow id.

The network itself (:class:`~tailbound.snc.flows.Network`, :class:`~tailbound.snc.flows.Flow`)
and SNC-Meister's feeder groups are :mod:`tailbound.snc.flows`', shared with the all-flows path
:mod:`tailbound.snc.fast`.
"""

from __future__ import annotations

from collections.abc import Callable

from tailbound.snc.bounds import (
    Bound,
    ConstantService,
    Convolution,
    Leftover,
    Output,
    aggregate_all,
)
from tailbound.snc.fast import snc_meister_all
from tailbound.snc.flows import Flow, Network, feeder_groups
from tailbound.snc.latency import LatencyBound


# ------------------------------------------------------------------------------- SNC-Meister
def snc_meister(net: Network, flow: Flow, search: str = "reference") -> float:
    """SNC-Meister's latency bound (seconds) of ``flow`` (thesis Appendix A.4)."""
    if len(flow.path) == 1:
        queue = flow.path[0]
        others = [
            f.arrival
            for f in net.flows_at(queue, 0)
            if f.priority <= flow.priority and f.id != flow.id
        ]
        service: Bound = ConstantService(net.queues[queue])
        if others:
            service = Leftover(service, aggregate_all(others))
        return LatencyBound(flow.arrival, service, flow.eps).latency_at_best_theta().item()

    first, second = flow.path
    first_service: Bound | None = None
    shared_first: Bound | None = None
    second_arrivals: list[Bound] = []
    for queue, shared_flows, non_shared_flows in feeder_groups(net, flow):
        shared = [f.arrival for f in shared_flows]
        non_shared = [f.arrival for f in non_shared_flows]
        service: Bound = ConstantService(net.queues[queue])  # type: ignore[no-redef]
        if non_shared:
            service = Leftover(service, aggregate_all(non_shared))
        if queue == first:
            first_service = service  # S1 ⊖ A_Y
            if shared:
                shared_first = aggregate_all(shared)  # A_X
        elif shared:
            second_arrivals.append(Output(aggregate_all(shared), service))  # D_Zi
    assert first_service is not None
    second_service: Bound = ConstantService(net.queues[second])
    if second_arrivals:
        second_service = Leftover(second_service, aggregate_all(second_arrivals))
    total: Bound = Convolution(first_service, second_service)
    if shared_first is not None:
        total = Leftover(total, shared_first)
    return LatencyBound(flow.arrival, total, flow.eps).latency(search)


# ------------------------------------------------------------------- hop-by-hop, convolution
def _competitors_in_order(net: Network, flow: Flow) -> list[Flow]:
    others = [f for f in net.flows if f.priority <= flow.priority and f.id != flow.id]
    others.sort(key=lambda f: (f.priority, -f.latency, f.id))
    return [*others, flow]


def hop_by_hop(net: Network, flow: Flow, search: str = "reference") -> float:
    """SNC hop-by-hop latency bound (seconds) of ``flow`` (thesis Appendix A.3, approach 1)."""
    leftover: dict[str, Bound] = {q: ConstantService(r) for q, r in net.queues.items()}
    total = 0.0
    for f in _competitors_in_order(net, flow):
        arrival = f.arrival
        for queue in f.path:
            service = leftover[queue]
            if f is flow:
                total += LatencyBound(arrival, service, f.eps / len(f.path)).latency(search)
            leftover[queue] = Leftover(service, arrival)
            arrival = Output(arrival, service)
    return total


def convolution(net: Network, flow: Flow, search: str = "reference") -> float:
    """SNC convolution latency bound (seconds) of ``flow`` (thesis Appendix A.3, approach 2)."""
    leftover: dict[str, Bound] = {q: ConstantService(r) for q, r in net.queues.items()}
    result = float("inf")
    for f in _competitors_in_order(net, flow):
        if f is flow:
            service = leftover[f.path[0]]
            for queue in f.path[1:]:
                service = Convolution(service, leftover[queue])
            result = LatencyBound(f.arrival, service, f.eps).latency(search)
        arrival = f.arrival
        for queue in f.path:
            service = leftover[queue]
            leftover[queue] = Leftover(service, arrival)
            arrival = Output(arrival, service)
    return result


#: The analysis layer's table of its per-flow analyses, by the names the bounds carry. Only
#: :func:`flow_latencies` reads it; users name an analysis through the policy registry
#: (:mod:`tailbound.policies.registry`, whose SNC admission entries are exactly these keys).
ANALYSIS_FUNCTIONS: dict[str, Callable[[Network, Flow, str], float]] = {
    "snc-meister": snc_meister,
    "snc-hop-by-hop": hop_by_hop,
    "snc-convolution": convolution,
}


def flow_latencies(
    net: Network, analysis: str = "snc-meister", search: str = "reference", *, fast: bool = True
) -> dict[int, float]:
    """Every flow's latency bound (seconds) under ``analysis``, in flow order; each result is
    also stored in ``flow.latency`` (the classic analyses use it to order ties).

    SNC-Meister's two-hop flows go to the all-flows search (:func:`snc_meister_all`) when the
    network has no dependencies and ``fast``; otherwise every flow to :func:`snc_meister`
    (the same numbers up to the last bits: ``fast=False`` is for a part of a network with
    dependencies analysed alone, so that it gets the whole network's numbers).

    ``search`` chooses the Hölder search of dependent expressions: ``"reference"`` replays the
    reference implementation's seeded random search, ``"deterministic"`` runs the core's joint
    search (:mod:`tailbound.snc.tree`); independent expressions use the reference ``theta``
    search either way."""
    try:
        fn = ANALYSIS_FUNCTIONS[analysis]
    except KeyError:
        known = ", ".join(ANALYSIS_FUNCTIONS)
        raise ValueError(f"unknown analysis {analysis!r} (known: {known})") from None
    done: dict[int, float] = {}
    if analysis == "snc-meister" and fast:
        # The independent two-hop case for all flows at once (same numbers, much faster).
        done = snc_meister_all(net, [f for f in net.flows if len(f.path) == 2]) or {}
    todo = [f for f in net.flows if f.id not in done]
    if analysis == "snc-meister" and search == "deterministic" and todo:
        # Each flow's expression is its own; the core's search releases the GIL, so the flows
        # run on the machine's cores (SNC-Meister reads no other flow's result). Imported only
        # when flows are left: concurrent.futures (and the logging it imports) cost ~6 ms of
        # `tailbound bound`'s cold start.
        import os
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
            results = list(pool.map(lambda f: fn(net, f, search), todo))
        done.update(zip([f.id for f in todo], results, strict=True))
    out: dict[int, float] = {}
    for f in net.flows:
        f.latency = done[f.id] if f.id in done else fn(net, f, search)
        out[f.id] = f.latency
    return out
